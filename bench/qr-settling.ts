/**
 * How a fresh QR server's CPU per login settles after its warm-up: the provider (or the HTTP floor) in its own
 * process pinned to the server CPU, as in the bench, warmed up with a number of logins, then measured in one-second
 * slices at 16 in flight, one figure per slice. A server still being optimised by V8 shows falling figures before a
 * flat run; `bench/qr-suite.ts` warms its QR servers up until the provider's figures are flat.
 *
 *   npx tsx bench/qr-settling.ts [provider | http-floor, default provider] [warm-up logins, default 4000]
 *                                [slices, default 12] [idle ms between warm-up and slices, default 0]
 */
import { LoadGenerator, planPlacement, startCaseServer } from './harness';
import { deleteQrKeys, qrFixtures } from './qr-login';

const CONCURRENCY = 16;

async function main(): Promise<void> {
  const [caseName = 'provider', warmUpArg = '4000', slicesArg = '12', idleArg = '0'] = process.argv.slice(2);
  if (caseName !== 'provider' && caseName !== 'http-floor') throw new Error(`case must be provider or http-floor, got ${caseName}`);
  const [warmUpLogins, slices, idleMs] = [warmUpArg, slicesArg, idleArg].map((text, index) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 0 || (index === 1 && value === 0))
      throw new Error(
        `${['warm-up logins', 'slices', 'idle ms'][index]} must be a whole number${index === 1 ? ' above 0' : ''}, got ${text}`,
      );
    return value;
  }) as [number, number, number];
  const placement = await planPlacement(true);
  const generator = LoadGenerator.start(placement);
  const fixtures = qrFixtures(process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379');
  const server = await startCaseServer('qr-login', caseName, fixtures, placement);
  try {
    if (warmUpLogins > 0) await generator.runQr(server.url, fixtures, { concurrency: CONCURRENCY, logins: warmUpLogins });
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    const figures: string[] = [];
    let before = await server.cpuMicros();
    for (let slice = 0; slice < slices; slice += 1) {
      const run = await generator.runQr(server.url, fixtures, { concurrency: CONCURRENCY, durationSeconds: 1 });
      const after = await server.cpuMicros();
      if (run.logins === 0 || run.failures > 0) throw new Error(`slice ${slice + 1}: ${run.failures} failed logins of ${run.logins}`);
      figures.push(((after - before) / run.logins / 1000).toFixed(2));
      before = after;
    }
    console.log(`${caseName}, ${warmUpLogins} logins of warm-up, ${idleMs} ms idle: ms CPU per login by 1 s slice: ${figures.join(' ')}`);
  } finally {
    await server.stop();
    await generator.stop();
    await deleteQrKeys(fixtures);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
