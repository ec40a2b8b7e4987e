import Redis from 'ioredis';
import { createRedisConnection, RedisStore, type RedisClient } from '../../lib/store';
import { testPrefix } from '../helpers/redis';
import { startRedisSentinel, type RedisSentinelHarness } from '../helpers/redis-sentinel';
import { userId } from '../helpers/sso-apps';
import { startSsoApps, type SsoApps } from '../helpers/sso-load-apps';

async function onNode<T>(port: number, work: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  try {
    return await work(client);
  } finally {
    client.disconnect();
  }
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Two app pairs behind one Sentinel-managed master and replica: one over a `RedisStore` with `waitForReplicas`,
 * one without. Replication is cut on purpose (the master refuses the replica's PSYNC), so the replica falls
 * behind; then the master is killed and the stale replica promoted. What each pair acknowledged meanwhile shows
 * whether an acknowledged write can be lost.
 */
describe('acknowledged writes across a Sentinel failover while the replica lags', () => {
  let harness: RedisSentinelHarness;
  let durableClient: RedisClient;
  let plainClient: RedisClient;
  let durableStore: RedisStore;
  let plainStore: RedisStore;
  let durable: SsoApps;
  let plain: SsoApps;

  beforeAll(async () => {
    // A busy test machine can stall a node for over a second; a longer down-after keeps the sentinels from failing
    // over a second time, to the old master just restarted and still empty.
    harness = await startRedisSentinel({ downAfterMs: 3000, failoverTimeoutMs: 6000 });
    const sentinel = { sentinels: harness.sentinels, name: harness.name };
    durableClient = createRedisConnection({ sentinel });
    plainClient = createRedisConnection({ sentinel });
    durableStore = new RedisStore(durableClient, { prefix: testPrefix('durable'), waitForReplicas: { replicas: 1, timeoutSeconds: 1 } });
    // Through Sentinel the store waits for a replica unless told otherwise.
    plainStore = new RedisStore(plainClient, { prefix: testPrefix('plain'), waitForReplicas: false });
    durable = await startSsoApps({ store: durableStore });
    plain = await startSsoApps({ store: plainStore });
  }, 40_000);

  afterAll(async () => {
    await durable?.close();
    await plain?.close();
    await durableStore?.close();
    await plainStore?.close();
    durableClient?.disconnect();
    plainClient?.disconnect();
    await harness?.stop();
  });

  // A replica counts for WAIT once its sync is done and it acknowledges offsets: `state=online`.
  const replicated = async () =>
    onNode(await harness.currentMasterPort(), async (master) => /^slave0:.*state=online/m.test(await master.info('replication')));

  /** Waits until every write so far reached the replica (a write of its own, then WAIT on that connection). */
  async function replicationBarrier(): Promise<void> {
    await onNode(await harness.currentMasterPort(), async (master) => {
      await master.set(`${testPrefix('barrier')}marker`, '1', 'PX', 10_000);
      if (Number(await master.call('WAIT', '1', '5000')) < 1) throw new Error('no replica acknowledged within 5 s');
    });
  }

  /** The master refuses PSYNC and drops its replica: writes from now on stay on the master alone. */
  async function cutReplication(): Promise<void> {
    await onNode(await harness.currentMasterPort(), async (master) => {
      await master.call('ACL', 'SETUSER', 'default', '-psync', '-sync');
      await master.call('CLIENT', 'KILL', 'TYPE', 'replica');
    });
    await until(async () => !(await replicated()), 'the replica dropping off');
  }

  /** Kills the master, waits for the stale replica's promotion, restarts the old master as its replica. */
  /** Resolves once every sentinel names `port` as the master. */
  const sentinelsAgreeOn = async (port: number): Promise<boolean> => {
    const views = await Promise.all(
      harness.sentinels.map((sentinel) =>
        onNode(sentinel.port, (client) => client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', harness.name)),
      ),
    );
    return views.every((view) => Array.isArray(view) && Number(view[1]) === port);
  };

  /**
   * Kills the master, waits for the stale replica's promotion, restarts the old master as its replica, and waits
   * until all sentinels agree and the replica is in sync, so the next step starts from one settled topology.
   */
  async function failOver(): Promise<void> {
    const master = await harness.currentMaster();
    await master.stop();
    const promoted = await harness.waitForFailover(master.port, 30_000);
    await master.start();
    await until(() => sentinelsAgreeOn(promoted), 'every sentinel naming the promoted master');
    await until(replicated, 'the old master rejoining as a replica');
  }

  const loginAttempts = (apps: SsoApps, subjects: string[]) =>
    Promise.all(
      subjects.map((subject) =>
        apps.login(subject).then(
          (cookie) => ({ id: userId(subject), cookie }),
          () => undefined,
        ),
      ),
    );

  const whoIs = async (apps: SsoApps, cookie: string): Promise<string | number> => {
    const res = await apps.get('shop', '/me', cookie);
    return res.status === 200 ? (JSON.parse(res.body) as { id: string }).id : res.status;
  };

  it('without waitForReplicas, logins and a logout acknowledged while the replica lagged are lost', async () => {
    const leaving = await plain.login('plain-leaving');
    await replicationBarrier();
    await cutReplication();

    const acknowledged = (await loginAttempts(plain, ['plain-0', 'plain-1', 'plain-2'])).filter((login) => login !== undefined);
    expect(acknowledged).toHaveLength(3);
    expect((await plain.logout(leaving)).status).toBe(204);

    await failOver();
    // The acknowledged logins are gone, and the acknowledged logout is undone: the session works again.
    for (const login of acknowledged) expect(await whoIs(plain, login!.cookie)).toBe(401);
    expect(await whoIs(plain, leaving)).toBe(userId('plain-leaving'));
  }, 90_000);

  it('with waitForReplicas, nothing is acknowledged while the replica lags, and what was acknowledged survives', async () => {
    const staying = await durable.login('durable-staying');
    const leaving = await durable.login('durable-leaving');
    await cutReplication();

    const attempts = await loginAttempts(durable, ['durable-0', 'durable-1', 'durable-2']);
    expect(attempts.filter((login) => login !== undefined)).toEqual([]);
    const logout = await durable.logout(leaving);
    expect(logout.status).toBe(503);
    // Refused, so the browser keeps its cookie and can log out again once the store confirms.
    expect(logout.headers['set-cookie']).toBeUndefined();

    await failOver();
    expect(await whoIs(durable, staying)).toBe(userId('durable-staying'));
    const loggedOut = await durable.logout(leaving);
    expect({ status: loggedOut.status, body: loggedOut.body }).toEqual({ status: 204, body: '' });

    // Logins and a logout acknowledged now, with no barrier of the test's own, survive the next failover.
    const later = await loginAttempts(durable, ['durable-3', 'durable-4', 'durable-5']);
    expect(later.every((login) => login !== undefined)).toBe(true);
    await failOver();
    for (const login of later) expect(await whoIs(durable, login!.cookie)).toBe(login!.id);
    expect(await whoIs(durable, staying)).toBe(userId('durable-staying'));
    expect(await whoIs(durable, leaving)).toBe(401);
  }, 120_000);
});
