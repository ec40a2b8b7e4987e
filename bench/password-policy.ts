/**
 * What the password policy costs: the memory the common-password list takes once loaded, the time to load it, and
 * the latency of a check with it loaded (no breach check: that is a network call, bounded by its own timeout).
 * The target is a p99 of at most 1 ms per check.
 *
 *   NODE_OPTIONS=--expose-gc npx tsx bench/password-policy.ts [checks]
 */
import { randomBytes } from 'node:crypto';
import { passwordPolicy } from '../lib/accounts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with NODE_OPTIONS=--expose-gc, so the list can be measured on a collected heap');
  process.exit(2);
}
const checks = Number(process.argv[2] ?? 20_000);
if (!Number.isInteger(checks) || checks < 100) {
  console.error(`checks must be a whole number of at least 100, got "${process.argv[2]}"`);
  process.exit(2);
}

function heapMiB(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

async function main(): Promise<void> {
  const policy = passwordPolicy({ contextWords: ['acme', 'roadrunner', 'anvil'] });
  const before = heapMiB();
  const loadStart = process.hrtime.bigint();
  await policy.preload();
  const loadMillis = Number(process.hrtime.bigint() - loadStart) / 1e6;
  const after = heapMiB();

  const context = { username: 'cjones77', name: 'Carol Ann Jones', email: 'carol.jones@initech.example' };
  // A mix of what people type: fresh random passphrases (accepted), common passwords, and ones with context words.
  const samples = Array.from({ length: 1000 }, (_, index) => {
    if (index % 4 === 0) return ['iloveyou', 'password123', 'Password1', 'qwertyuiop'][(index % 16) >> 2]!;
    if (index % 4 === 1) return `acme-${randomBytes(6).toString('hex')}`;
    return randomBytes(12 + (index % 12)).toString('base64url');
  });
  for (let index = 0; index < 2000; index += 1) await policy.check(samples[index % samples.length]!, context);
  const times: number[] = [];
  for (let index = 0; index < checks; index += 1) {
    const start = process.hrtime.bigint();
    await policy.check(samples[index % samples.length]!, context);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(`node ${process.version}, ${checks} checks`);
  console.log(`common-password list: 100,000 entries, ${(after - before).toFixed(1)} MiB of heap, loaded in ${loadMillis.toFixed(0)} ms`);
  console.log(
    `check latency (ms): p50 ${percentile(times, 0.5).toFixed(4)}, p99 ${percentile(times, 0.99).toFixed(4)}, max ${times.at(-1)!.toFixed(4)}`,
  );
  const p99 = percentile(times, 0.99);
  console.log(p99 <= 1 ? 'target met: p99 <= 1 ms' : `target missed: p99 ${p99.toFixed(3)} ms > 1 ms`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
