/**
 * The soak: `npx tsx bench/soak.ts --minutes 10`. Prints a sample every 10 s and exits 1 when the heap or Redis
 * memory grows beyond its bound, a request fails with a 5xx, or an answer names the wrong user.
 * Options: --minutes <n> (default 10), --interval <s> (default 10), --concurrency <n> (default 4),
 * --cycle-ms <n> (default 250: each virtual user logs in at most 4 times a second).
 */
import { runSoak } from './soak-runner';

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  if (index === -1) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isFinite(value) || value <= 0)
    throw new TypeError(`soak: ${name} needs a positive number, got ${String(process.argv[index + 1])}`);
  return value;
}

async function main(): Promise<number> {
  const minutes = option('--minutes', 10);
  const interval = option('--interval', 10);
  const concurrency = option('--concurrency', 4);
  const cycleMs = option('--cycle-ms', 250);
  console.log(
    `soak: ${minutes} min, sample every ${interval} s, ${concurrency} virtual users (login, then 20 reads across two apps, a cycle every ${cycleMs} ms at most), private Redis`,
  );
  const report = await runSoak({
    durationMs: minutes * 60_000,
    sampleIntervalMs: interval * 1000,
    concurrency,
    cycleMs,
    onSample: (sample) =>
      console.log(
        `${String(sample.elapsedSeconds).padStart(5)} s  heap ${(sample.heapUsedBytes / 1048576).toFixed(1)} MiB  rss ${(sample.rssBytes / 1048576).toFixed(0)} MiB  redis ${(sample.redisUsedMemoryBytes / 1048576).toFixed(2)} MiB  keys ${sample.redisKeys} (sessions ${sample.sessionKeys}, indexed ids ${sample.indexedSessionIds})  requests ${sample.requests}`,
      ),
  });
  console.log(`\n${report.requests} reads, ${report.logins} logins`);
  for (const line of report.verdicts) console.log(line);
  for (const failure of report.failures) console.log(`  failed: ${failure}`);
  return report.passed ? 0 : 1;
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
