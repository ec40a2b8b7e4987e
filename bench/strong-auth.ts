/**
 * What a second factor costs the portal: `npx tsx bench/strong-auth.ts` prints the median and p95 of
 *  - a passkey sign-in verification (`PasskeyCeremonies.verifyAuthentication`: the challenge taken from the store,
 *    the credential read, the ES256 signature verified, the new counter recorded with a compare-and-set), and
 *  - a TOTP check (the enrolment read, the secret opened with AES-256-GCM, the code compared within ±1 step, the
 *    accepted step advanced atomically so the code cannot be replayed),
 * each on MemoryStore (the work of the kit alone) and on Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379,
 * a fresh key prefix removed afterwards). The data is authentic: a software authenticator signs real assertions
 * with node's crypto, and otpauth computes real codes. Only the measured call is timed, one at a time.
 *
 * Options: --iterations <n> (default 400), --warmup <n> (default 50).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Secret, TOTP } from 'otpauth';
import { KeyValueCredentialStore } from '../lib/credentials/kv-credential-store';
import { PasskeyCeremonies } from '../lib/credentials/passkey-ceremonies';
import { createSecretSealer, type SecretSealer } from '../lib/credentials/secret-sealer';
import { createRedisConnection, MemoryStore, RedisStore, type KeyValueStore } from '../lib/store';
import { keysByPrefix } from '../test/helpers/redis';
import { SoftAuthenticator } from '../test/helpers/soft-authenticator';

const ORIGIN = 'https://auth.example.com';
const USER = { id: 'directory:staff|alice', name: 'alice', displayName: 'Alice' };

function argument(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(process.argv[index + 1]);
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** Runs `prepare` untimed and `measured` timed, `warmup + iterations` times; returns the timed milliseconds, sorted. */
async function measure<T>(iterations: number, warmup: number, prepare: () => Promise<T>, measured: (input: T) => Promise<unknown>) {
  const times: number[] = [];
  for (let i = 0; i < warmup + iterations; i += 1) {
    const input = await prepare();
    const start = performance.now();
    await measured(input);
    if (i >= warmup) times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b);
}

async function passkeySignIn(store: KeyValueStore, iterations: number, warmup: number): Promise<number[]> {
  const ceremonies = new PasskeyCeremonies({ store, passkeys: new KeyValueCredentialStore(store), rpId: 'example.com', rpName: 'Bench' });
  const device = new SoftAuthenticator();
  await ceremonies.verifyRegistration(USER.id, device.register(await ceremonies.registrationOptions(USER), ORIGIN), 'Bench key');
  return measure(
    iterations,
    warmup,
    async () => device.assert(await ceremonies.authenticationOptions(), ORIGIN),
    async (assertion) => ceremonies.verifyAuthentication(assertion),
  );
}

/** The TOTP check as the portal does it, on the kit's credential store: read, open, compare (±1 step), advance. */
async function totpCheck(credentials: KeyValueCredentialStore, sealer: SecretSealer, userId: string, code: string, now: number) {
  const enrolment = await credentials.getTotp(userId);
  if (enrolment === undefined) throw new Error('not enrolled');
  const totp = new TOTP({ secret: Secret.fromBase32(sealer.open(userId, enrolment.sealedSecret)) });
  const delta = totp.validate({ token: code, timestamp: now, window: 1 });
  if (delta === null) throw new Error('the code was refused');
  const step = Math.floor(now / 30_000) + delta;
  if (!(await credentials.advanceTotpStep(userId, step))) throw new Error('the code was refused as a replay');
}

async function totpChecks(store: KeyValueStore, iterations: number, warmup: number): Promise<number[]> {
  const credentials = new KeyValueCredentialStore(store);
  const sealer = createSecretSealer({ key: randomBytes(32) });
  const secret = new Secret({ size: 20 });
  const totp = new TOTP({ secret });
  await credentials.setTotp(USER.id, { sealedSecret: sealer.seal(USER.id, secret.base32), createdAt: 0 });
  // Each check uses the next time step, so the replay rule accepts it: the same work as a user's next sign-in.
  let step = Math.floor(Date.now() / 30_000);
  return measure(
    iterations,
    warmup,
    async () => {
      step += 1;
      const now = step * 30_000 + 1_000;
      return { now, code: totp.generate({ timestamp: now }) };
    },
    async ({ now, code }) => totpCheck(credentials, sealer, USER.id, code, now),
  );
}

function row(name: string, times: readonly number[]): string {
  return `| ${name.padEnd(34)} | ${percentile(times, 50).toFixed(3).padStart(10)} | ${percentile(times, 95).toFixed(3).padStart(8)} |`;
}

async function main(): Promise<void> {
  const iterations = argument('iterations', 400);
  const warmup = argument('warmup', 50);
  const client = createRedisConnection(process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = `bench:strong-auth:${randomBytes(6).toString('hex')}:`;
  const redis = new RedisStore(client, { prefix });
  const memory = new MemoryStore();
  try {
    await redis.ping();
    const rows = [
      row('passkey sign-in, MemoryStore', await passkeySignIn(memory, iterations, warmup)),
      row('passkey sign-in, Redis', await passkeySignIn(redis, iterations, warmup)),
      row('TOTP check, MemoryStore', await totpChecks(memory, iterations, warmup)),
      row('TOTP check, Redis', await totpChecks(redis, iterations, warmup)),
    ];
    console.log(`${iterations} timed calls each after ${warmup} warm-up calls, one at a time, node ${process.version}\n`);
    console.log(`| ${'operation'.padEnd(34)} | median ms  |   p95 ms |\n|${'-'.repeat(36)}|------------|----------|`);
    for (const line of rows) console.log(line);
  } finally {
    const keys = await keysByPrefix(client, prefix);
    if (keys.length > 0) await client.del(...keys);
    await memory.close();
    await redis.close();
    await client.quit();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
