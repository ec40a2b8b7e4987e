import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisStore } from '../../lib/store';
import { failClosedViolations, heapAfterGc, startSteadyLoad, until, type LoadObservation } from '../helpers/fault-probes';
import { startPrivateRedis, testPrefix, type PrivateRedis } from '../helpers/redis';
import { userId } from '../helpers/sso-apps';
import { startSsoApps, type SsoApps } from '../helpers/sso-load-apps';

// An unhandled promise rejection fails the running test by itself under Jest 30 (jest-circus attributes it to
// the test), so "no unhandled rejection" needs no assertion of its own here.
// The kit's fail-fast defaults: a command waits at most 2 s, so no request may take much longer during a fault.
const REQUEST_BOUND_MS = 3000;

describe('the session middleware when Redis fails', () => {
  let dir: string;
  let redis: PrivateRedis;
  let store: RedisStore;
  let apps: SsoApps;
  let users: Array<{ id: string; cookie: string }>;

  // The helper's start() must not run while the server is up (a second process would fail to bind and replace it).
  let down = false;
  const stopRedis = async (): Promise<void> => {
    down = true;
    await redis.stop();
  };
  const startRedis = async (): Promise<void> => {
    if (!down) return;
    await redis.start();
    down = false;
  };

  const send = (cookie: string, turn: number) => apps.get(turn % 2 === 0 ? 'shop' : 'auth', '/me', cookie);
  const after = (observations: LoadObservation[], time: number) => observations.filter((o) => o.at >= time);
  const healthy = async (): Promise<boolean> => {
    const answers = await Promise.all(users.map((user) => send(user.cookie, 0)));
    return answers.every((res) => res.status === 200);
  };

  beforeAll(async () => {
    // Append-only with fsync on every write, so a restarted Redis still has the sessions: the test can then tell
    // "recovered" (200 for the same cookie) from "logged everyone out".
    dir = await mkdtemp(join(tmpdir(), 'sso-redis-faults-'));
    // DEBUG (for the stall) is refused by Redis 7 unless enabled; without it sleep() would silently do nothing.
    redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir, '--enable-debug-command', 'local']);
    store = new RedisStore(redis.url, { prefix: testPrefix('faults') });
    apps = await startSsoApps({ store });
    users = await Promise.all(
      Array.from({ length: 8 }, async (_, index) => ({
        id: userId(`fault-user-${index}`),
        cookie: await apps.login(`fault-user-${index}`),
      })),
    );
  });

  afterAll(async () => {
    await apps?.close();
    await store?.close();
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After while Redis is down (never 401 or 500) and serves the same sessions after a restart', async () => {
    const load = startSteadyLoad(send, users);
    let restartedAt = 0;
    try {
      await until(() => load.observations.filter((o) => o.status === 200).length >= 20, 5000, 'steady 200s before the outage');
      await stopRedis();
      const stoppedAt = Date.now();
      await until(() => after(load.observations, stoppedAt).filter((o) => o.status === 503).length >= 20, 10_000, '503s during the outage');
      await startRedis();
      restartedAt = Date.now();
      await until(
        () => after(load.observations, restartedAt + 1).filter((o) => o.status === 200).length >= 40,
        15_000,
        '200s after the restart',
      );
    } finally {
      await load.stop();
      await startRedis();
    }
    const { observations } = load;

    expect(failClosedViolations(observations)).toEqual([]);
    expect(observations.filter((o) => o.durationMs > REQUEST_BOUND_MS)).toEqual([]);
    expect(observations.filter((o) => o.status === 503).every((o) => o.code === 'store_unavailable')).toBe(true);
    expect(apps.serverErrors.filter((entry) => entry.status !== 503)).toEqual([]);
    const recoveryMs =
      Math.min(
        ...after(observations, restartedAt)
          .filter((o) => o.status === 200)
          .map((o) => o.at),
      ) - restartedAt;
    console.log(
      `redis restart: ${observations.length} requests, ${observations.filter((o) => o.status === 503).length} × 503, first 200 ${recoveryMs} ms after the restart`,
    );
  }, 40_000);

  it('answers 503 within the command timeout while Redis is stalled (DEBUG SLEEP) and recovers by itself', async () => {
    const load = startSteadyLoad(send, users);
    const stalledAt = Date.now();
    try {
      await until(() => load.observations.filter((o) => o.status === 200).length >= 20, 5000, 'steady 200s before the stall');
      await redis.sleep(3);
      await until(() => after(load.observations, stalledAt).some((o) => o.status === 503), 5000, 'a 503 during the stall');
      await until(
        () => after(load.observations, stalledAt + 3000).filter((o) => o.status === 200).length >= 40,
        15_000,
        '200s after the stall',
      );
    } finally {
      await load.stop();
    }
    const { observations } = load;

    const stalled = after(observations, stalledAt).filter((o) => o.status === 503);
    expect(failClosedViolations(observations)).toEqual([]);
    expect(observations.filter((o) => o.durationMs > REQUEST_BOUND_MS)).toEqual([]);
    // The requests that met the stall waited for the command timeout, not for the stall to end.
    expect(Math.max(...stalled.map((o) => o.durationMs))).toBeLessThan(REQUEST_BOUND_MS);
    expect(await healthy()).toBe(true);
  }, 40_000);

  it('does not grow the heap over repeated outages', async () => {
    const cycle = async (): Promise<void> => {
      const load = startSteadyLoad(send, users);
      try {
        await until(() => load.observations.filter((o) => o.status === 200).length >= 10, 5000, '200s before the outage');
        await stopRedis();
        const stoppedAt = Date.now();
        await until(
          () => after(load.observations, stoppedAt).filter((o) => o.status === 503).length >= 10,
          10_000,
          '503s during the outage',
        );
        await startRedis();
        const restartedAt = Date.now();
        await until(
          () => after(load.observations, restartedAt + 1).filter((o) => o.status === 200).length >= 10,
          15_000,
          '200s after the restart',
        );
      } finally {
        await load.stop();
        await startRedis();
      }
      expect(failClosedViolations(load.observations)).toEqual([]);
    };
    await cycle();
    const baseline = heapAfterGc();
    for (let round = 0; round < 4; round += 1) await cycle();
    const growth = heapAfterGc() - baseline;
    console.log(`redis outages: heap after GC grew ${(growth / 1024).toFixed(0)} KiB over 4 outage cycles`);
    // Generous for a Jest process, yet far below what a leaked client, listener or queue per outage would add.
    expect(growth).toBeLessThan(8 * 1024 * 1024);
    expect(await healthy()).toBe(true);
  }, 90_000);
});
