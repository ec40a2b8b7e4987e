import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import type Redis from 'ioredis';
import { runInNewContext } from 'node:vm';
import { AccountTokens, passwordPolicy, redisUserDirectory } from '../lib/accounts';
import { RedisStore } from '../lib/store';
import { hashPassword } from '../lib/util/password-hash';
import { deleteByPrefix } from './harness';

/** How many password changes are timed (each costs two scrypt runs, ~0.1 s apiece on a quiet core). */
const CHANGES = 12;
const RESET_REQUESTS = 500;
const POLICY_CHECKS = 20_000;

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

/** Median and p99 of a list of milliseconds. */
function summary(values: number[]): { p50: number; p99: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await work();
  return [value, performance.now() - start];
}

/** A collecting `gc()`, without asking for --expose-gc on the command line. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * What a password change and a reset request cost, step by step, with the kit's scrypt (`hashPassword`, default
 * parameters) and `lib/accounts` (`redisUserDirectory` on the machine's Redis, `AccountTokens`, `passwordPolicy`
 * with the 100,000 common passwords loaded), and the policy check's p99 (target ≤ 1 ms) and the list's memory.
 * Runs in the runner's process, on the Node version the run is on. Returns RESULTS.md's section.
 *
 * @example
 * const markdown = await passwordSection('redis://127.0.0.1:6379');
 */
export async function passwordSection(redisUrl: string): Promise<string> {
  const gc = collector();
  const heap = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  const prefix = `ssobench:${randomBytes(4).toString('hex')}:`;
  const store = new RedisStore(redisUrl, { prefix });
  try {
    const policy = passwordPolicy({ contextWords: ['acme', 'roadrunner', 'anvil'] });
    const before = heap();
    const [, loadMs] = await timed(() => policy.preload());
    const listBytes = heap() - before;

    const users = redisUserDirectory(store);
    const tokens = new AccountTokens({ store, users, purpose: 'password-reset' });
    let password = `first ${randomBytes(9).toString('base64url')}`;
    const account = await users.createUser({
      username: 'cjones77',
      name: 'Carol Ann Jones',
      email: 'carol.jones@initech.example',
      emailVerified: true,
      passwordHash: await hashPassword(password),
    });
    const context = { username: account.username, name: account.name, email: 'carol.jones@initech.example' };

    // A password change as a handler does it: verify the current password, check the new one, hash it, store it
    // conditionally on the credential version read.
    const steps = { verify: [] as number[], policy: [] as number[], hash: [] as number[], store: [] as number[], total: [] as number[] };
    for (let index = 0; index <= CHANGES; index += 1) {
      const next = `changed ${randomBytes(9).toString('base64url')}`;
      const start = performance.now();
      const [current, verifyMs] = await timed(() => users.verifyPassword('cjones77', password));
      if (!current) throw new Error('password change: the current password did not verify');
      const [verdict, policyMs] = await timed(() => policy.check(next, context));
      if (!verdict.accepted) throw new Error(`password change: the policy refused a random password (${verdict.refusals[0]?.code})`);
      const [hash, hashMs] = await timed(() => hashPassword(next));
      const [stored, storeMs] = await timed(() =>
        users.setPasswordHash(current.id, hash, { ifCredentialVersion: current.credentialVersion }),
      );
      if (!stored) throw new Error('password change: the conditional write was refused');
      const totalMs = performance.now() - start;
      password = next;
      // The first change warms every path up and is not counted.
      if (index === 0) continue;
      steps.verify.push(verifyMs);
      steps.policy.push(policyMs);
      steps.hash.push(hashMs);
      steps.store.push(storeMs);
      steps.total.push(totalMs);
    }

    // A reset request: find the account by its address, issue a single-use token (no scrypt: the link is a random secret).
    const resets: number[] = [];
    for (let index = 0; index < RESET_REQUESTS + 50; index += 1) {
      const [issued, ms] = await timed(async () => {
        const found = await users.findByEmail('carol.jones@initech.example');
        return found ? tokens.issue(found.id) : null;
      });
      if (!issued) throw new Error('reset request: no token issued');
      if (index >= 50) resets.push(ms);
    }

    // The policy on its own, with the list loaded: what people type, accepted and refused.
    const samples = Array.from({ length: 1000 }, (_, index) => {
      if (index % 4 === 0) return ['iloveyou', 'password123', 'Password1', 'qwertyuiop'][(index % 16) >> 2]!;
      if (index % 4 === 1) return `acme-${randomBytes(6).toString('hex')}`;
      return randomBytes(12 + (index % 12)).toString('base64url');
    });
    for (let index = 0; index < 2000; index += 1) await policy.check(samples[index % samples.length]!, context);
    const checks: number[] = [];
    for (let index = 0; index < POLICY_CHECKS; index += 1) {
      const start = performance.now();
      await policy.check(samples[index % samples.length]!, context);
      checks.push(performance.now() - start);
    }

    const ms = (value: number) => value.toFixed(value < 1 ? 3 : 1);
    const row = (label: string, values: number[]) => {
      const { p50, p99 } = summary(values);
      return `| ${label} | ${values.length} | ${ms(p50)} | ${ms(p99)} |`;
    };
    const total = summary(steps.total).p50;
    // scrypt's share of each change (its two runs ÷ the whole), then the median share: medians of parts do not add up.
    const shares = steps.total.map((whole, index) => (steps.verify[index]! + steps.hash[index]!) / whole);
    const scrypt = summary(shares).p50 * total;
    const policyP99 = summary(checks).p99;
    console.log(
      `  password change p50 ${ms(total)} ms (scrypt ${Math.round((scrypt / total) * 100)} %), reset request p50 ${ms(summary(resets).p50)} ms, policy check p99 ${ms(policyP99)} ms, list ${(listBytes / 2 ** 20).toFixed(1)} MiB`,
    );
    return [
      `Wall time in the runner's process (one at a time; scrypt runs on libuv's thread pool with the kit's default parameters, N=2^15, r=8, p=1). 1-minute load average at the end: ${loadavg()[0]!.toFixed(2)}.`,
      '',
      '| step | samples | p50 ms | p99 ms |',
      '|---|---:|---:|---:|',
      row('password change: `verifyPassword` (scrypt of the current password)', steps.verify),
      row('password change: `passwordPolicy.check` of the new one', steps.policy),
      row('password change: `hashPassword` (scrypt of the new one)', steps.hash),
      row('password change: `setPasswordHash` on Redis, conditional on the credential version', steps.store),
      row('**password change, whole**', steps.total),
      row('reset request: `findByEmail` + `AccountTokens.issue` on Redis', resets),
      row('`passwordPolicy.check` alone, 100,000 common passwords loaded', checks),
      '',
      `scrypt is ${Math.round((scrypt / total) * 100)} % of a password change (its two runs, median share of each change; ${ms(scrypt)} ms of the median ${ms(total)} ms); the rest is the policy check, the Redis write and the reads. A reset request runs no scrypt. The common-password list takes **${(listBytes / 2 ** 20).toFixed(1)} MiB** of heap once loaded (loaded in ${Math.round(loadMs)} ms, on first use or \`preload()\`). Policy check p99 ${ms(policyP99)} ms: target ≤ 1 ms **${policyP99 <= 1 ? 'PASS' : 'FAIL'}**.`,
    ].join('\n');
  } finally {
    await deleteByPrefix(store.client as Redis, prefix);
    await store.close();
  }
}
