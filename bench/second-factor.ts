/**
 * What a TOTP check costs: `npx tsx bench/second-factor.ts [--runs 300]` times `TotpAuthenticator.verify` with a
 * right code (open the sealed secret, check the code, move the step forward atomically) on Redis and on PostgreSQL,
 * and prints the median and p95 in milliseconds. BENCH_REDIS_URL and BENCH_DATABASE_URL override the local
 * services; it writes under a random prefix / schema and removes them afterwards.
 */
import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { Pool } from 'pg';
import {
  createSecretSealer,
  KeyValueCredentialStore,
  PostgresCredentialStore,
  RedisStore,
  TotpAuthenticator,
  type CredentialStore,
} from '../lib';

function runsFrom(argv: string[]): number {
  const index = argv.indexOf('--runs');
  const runs = index === -1 ? 300 : Number(argv[index + 1]);
  if (!Number.isInteger(runs) || runs < 20) throw new TypeError('bench/second-factor: --runs needs a whole number of at least 20');
  return runs;
}

/** Median and p95 of `runs` verifications, each with the code of the next time step (so none is a replay). */
async function measure(credentials: CredentialStore, runs: number): Promise<{ median: number; p95: number }> {
  const totp = new TotpAuthenticator({ credentials, sealer: createSecretSealer({ key: randomBytes(32) }), issuer: 'Bench' });
  const userId = `bench|${randomBytes(6).toString('hex')}`;
  const secret = totp.newSecret();
  const codeAt = (timestamp: number) => new TOTP({ secret: Secret.fromBase32(secret) }).generate({ timestamp });
  let now = Date.now();
  if (!(await totp.enrol(userId, secret, codeAt(now), now))) throw new Error('bench/second-factor: enrolment failed');
  const millis: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    now += 30_000;
    const code = codeAt(now);
    const started = process.hrtime.bigint();
    const outcome = await totp.verify(userId, code, now);
    millis.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (outcome !== 'accepted') throw new Error(`bench/second-factor: a right code was ${outcome}`);
  }
  millis.sort((a, b) => a - b);
  const at = (share: number) => millis[Math.min(millis.length - 1, Math.floor(millis.length * share))] as number;
  return { median: at(0.5), p95: at(0.95) };
}

async function main(): Promise<void> {
  const runs = runsFrom(process.argv.slice(2));
  const rows: string[] = [];
  const redis = new RedisStore(process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', {
    prefix: `ssobench:${randomBytes(6).toString('hex')}:`,
  });
  try {
    const { median, p95 } = await measure(new KeyValueCredentialStore(redis), runs);
    rows.push(`| TOTP check | Redis | ${median.toFixed(2)} | ${p95.toFixed(2)} |`);
  } finally {
    const keys = await redis.client.keys(`${redis.prefix}*`);
    if (keys.length > 0) await redis.client.del(...keys);
    await redis.close();
  }
  const pool = new Pool({ connectionString: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
  const schema = `ssobench_${randomBytes(5).toString('hex')}`;
  try {
    const { median, p95 } = await measure(new PostgresCredentialStore(pool, { schema }), runs);
    rows.push(`| TOTP check | PostgreSQL | ${median.toFixed(2)} | ${p95.toFixed(2)} |`);
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  }
  console.log(`${runs} right codes per store\n\n| operation | store | median ms | p95 ms |\n|---|---|---:|---:|\n${rows.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
