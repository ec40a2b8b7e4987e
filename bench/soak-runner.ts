import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Redis from 'ioredis';
import { RedisStore } from '../lib/store';
import { recordUnhandledRejections } from '../test/helpers/fault-probes';
import { startPrivateRedis } from '../test/helpers/redis';
import { userId as userIdOf } from '../test/helpers/sso-apps';
import { startSsoApps } from '../test/helpers/sso-load-apps';

/** Options of {@link runSoak}. */
export interface SoakOptions {
  durationMs: number;
  /** Time between two samples. Default 10000. */
  sampleIntervalMs?: number;
  /** Concurrent virtual users. Default 4. */
  concurrency?: number;
  /** Each virtual user's cycle (one login, 20 reads) takes at least this long, so the rate stays steady. Default 250. */
  cycleMs?: number;
  /** Distinct user ids the virtual users log in as (each login is a new session). Default 500. */
  userPool?: number;
  /** Session idle timeout; short, so that sessions expire during the soak and memory can level off. Default 20 s. */
  idleTimeoutSeconds?: number;
  /** Allowed growth of the heap after GC between the first and the last part of the run, in bytes. Default 16 MiB. */
  maxHeapGrowthBytes?: number;
  /** Allowed growth of Redis used_memory between the first and the last part of the run, in bytes. Default 2 MiB. */
  maxRedisGrowthBytes?: number;
  /** Called with each sample as it is taken. */
  onSample?: (sample: SoakSample) => void;
}

export interface SoakSample {
  elapsedSeconds: number;
  heapUsedBytes: number;
  rssBytes: number;
  redisUsedMemoryBytes: number;
  redisKeys: number;
  /** Live session records in Redis. */
  sessionKeys: number;
  /** Session ids listed in the per-user index sets, live or not. */
  indexedSessionIds: number;
  requests: number;
}

export interface SoakReport {
  samples: SoakSample[];
  requests: number;
  logins: number;
  serverErrors: number;
  clientErrors: number;
  /** Answers that named another user than the one logged in with the cookie: must be 0. */
  wrongUser: number;
  /** The first 20 failed requests, with the second of the run they happened in. */
  failures: string[];
  heapGrowthBytes: number;
  redisGrowthBytes: number;
  maxHeapGrowthBytes: number;
  maxRedisGrowthBytes: number;
  passed: boolean;
  verdicts: string[];
}

function collector(): () => void {
  // A real collection before each heap sample; without it the figure is mostly garbage not yet collected. The test
  // scripts start Jest's workers with --expose-gc; the flag is turned on here only in a process of its own (the
  // soak run from the command line), never under a Jest worker that goes on to run other files.
  if (runInNewContext('typeof gc') !== 'function') {
    if (process.env.JEST_WORKER_ID !== undefined)
      throw new Error('runSoak under Jest needs NODE_OPTIONS with --expose-gc (npm run test:jest sets it)');
    setFlagsFromString('--expose-gc');
  }
  return runInNewContext('gc') as () => void;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/**
 * Keeps two session apps of one parent domain under a steady load of logins and reads on a private Redis for
 * `durationMs`, sampling the heap after GC and Redis `used_memory`. Passes when neither grows more than its bound
 * between the second quarter of the run (after warm-up, once sessions began to expire) and the last quarter, no
 * request failed with a 5xx and no answer named the wrong user.
 *
 * @example
 * const report = await runSoak({ durationMs: 600_000 });
 * console.log(report.verdicts.join('\n'));
 */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const interval = options.sampleIntervalMs ?? 10_000;
  const concurrency = options.concurrency ?? 4;
  const cycleMs = options.cycleMs ?? 250;
  const userPool = options.userPool ?? 500;
  const maxHeapGrowthBytes = options.maxHeapGrowthBytes ?? 16 * 1024 * 1024;
  const maxRedisGrowthBytes = options.maxRedisGrowthBytes ?? 2 * 1024 * 1024;
  const gc = collector();
  const rejections = recordUnhandledRejections();

  const redis = await startPrivateRedis();
  const admin = new Redis(redis.port, '127.0.0.1');
  const store = new RedisStore(redis.url, { prefix: 'soak:' });
  const apps = await startSsoApps({ store, session: { idleTimeoutSeconds: options.idleTimeoutSeconds ?? 20, touchAfterSeconds: 1 } });
  const counts = { requests: 0, logins: 0, serverErrors: 0, clientErrors: 0, wrongUser: 0 };
  const failures: string[] = [];
  const noteFailure = (what: string): void => {
    if (failures.length < 20) failures.push(`${Math.round((Date.now() - started) / 1000)} s: ${what}`);
  };
  const samples: SoakSample[] = [];
  const started = Date.now();
  let running = true;

  async function virtualUser(seat: number): Promise<void> {
    let round = 0;
    while (running) {
      const cycleStart = Date.now();
      const subject = `user-${(seat * 7919 + round * 104729) % userPool}`;
      round += 1;
      try {
        const cookie = await apps.login(subject);
        counts.logins += 1;
        for (let view = 0; view < 20 && running; view += 1) {
          const res = await apps.get(view % 2 === 0 ? 'shop' : 'auth', '/me', cookie);
          counts.requests += 1;
          if (res.status >= 500) {
            counts.serverErrors += 1;
            noteFailure(`GET /me answered ${res.status} ${res.body.slice(0, 120)}`);
          } else if (res.status !== 200) {
            counts.clientErrors += 1;
            noteFailure(`GET /me answered ${res.status} ${res.body.slice(0, 120)}`);
          } else if ((JSON.parse(res.body) as { id?: string }).id !== userIdOf(subject)) counts.wrongUser += 1;
        }
      } catch (error) {
        counts.serverErrors += 1;
        noteFailure((error as Error).message);
      }
      const rest = cycleMs - (Date.now() - cycleStart);
      if (rest > 0 && running) await new Promise((resolve) => setTimeout(resolve, rest));
    }
  }

  async function countKeys(): Promise<{ sessionKeys: number; indexedSessionIds: number }> {
    let sessionKeys = 0;
    let indexedSessionIds = 0;
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        if (key.startsWith('soak:sess:')) sessionKeys += 1;
        else if (key.startsWith('soak:user-sessions:')) indexedSessionIds += await admin.scard(key);
      }
    } while (cursor !== '0');
    return { sessionKeys, indexedSessionIds };
  }

  async function sample(): Promise<void> {
    gc();
    const memory = process.memoryUsage();
    const info = await admin.info('memory');
    const entry: SoakSample = {
      elapsedSeconds: Math.round((Date.now() - started) / 1000),
      heapUsedBytes: memory.heapUsed,
      rssBytes: memory.rss,
      redisUsedMemoryBytes: Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0),
      redisKeys: await admin.dbsize(),
      ...(await countKeys()),
      requests: counts.requests,
    };
    samples.push(entry);
    options.onSample?.(entry);
  }

  const users = Array.from({ length: concurrency }, (_, seat) => virtualUser(seat));
  try {
    await sample();
    while (Date.now() - started < options.durationMs) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(interval, options.durationMs - (Date.now() - started))));
      await sample();
    }
  } finally {
    running = false;
    await Promise.all(users);
    await apps.close();
    await store.close();
    admin.disconnect();
    await redis.stop();
    rejections.stop();
  }

  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const early = samples.slice(quarter, 2 * quarter);
  const late = samples.slice(-quarter);
  const heapGrowthBytes = median(late.map((s) => s.heapUsedBytes)) - median(early.map((s) => s.heapUsedBytes));
  const redisGrowthBytes = median(late.map((s) => s.redisUsedMemoryBytes)) - median(early.map((s) => s.redisUsedMemoryBytes));
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
  const verdicts = [
    `${heapGrowthBytes <= maxHeapGrowthBytes ? 'PASS' : 'FAIL'} heap after GC grew ${mb(heapGrowthBytes)} (bound ${mb(maxHeapGrowthBytes)})`,
    `${redisGrowthBytes <= maxRedisGrowthBytes ? 'PASS' : 'FAIL'} Redis used_memory grew ${mb(redisGrowthBytes)} (bound ${mb(maxRedisGrowthBytes)})`,
    `${counts.serverErrors === 0 ? 'PASS' : 'FAIL'} ${counts.serverErrors} requests failed with a 5xx or a socket error`,
    `${counts.wrongUser === 0 && counts.clientErrors === 0 ? 'PASS' : 'FAIL'} ${counts.wrongUser} answers named another user, ${counts.clientErrors} answered 4xx`,
    `${rejections.seen.length === 0 ? 'PASS' : 'FAIL'} ${rejections.seen.length} unhandled promise rejections`,
  ];
  const last = samples[samples.length - 1];
  if (last) {
    // A user's index may still list the sessions that ended since that user's last login (they are pruned at the
    // next login), so the bound is the live sessions plus about one stale id per user, with room to spare. Ids
    // that are never pruned grow with the number of logins instead and break it within minutes.
    const indexBound = 2 * last.sessionKeys + userPool;
    verdicts.push(
      `${last.indexedSessionIds <= indexBound ? 'PASS' : 'FAIL'} the per-user indexes list ${last.indexedSessionIds} session ids for ${last.sessionKeys} live sessions (bound 2 × live + ${userPool} users = ${indexBound})`,
    );
  }
  return {
    samples,
    ...counts,
    failures,
    heapGrowthBytes,
    redisGrowthBytes,
    maxHeapGrowthBytes,
    maxRedisGrowthBytes,
    passed: verdicts.every((line) => !line.startsWith('FAIL')),
    verdicts,
  };
}
