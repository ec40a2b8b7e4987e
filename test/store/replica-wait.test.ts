import Redis from 'ioredis';
import { ssoSession } from '../../lib';
import { QrLoginRequests } from '../../lib/qr/qr-login-requests';
import { createRedisConnection, MemoryStore, RedisStore, StoreUnavailableError } from '../../lib/store';
import { RefreshTokens } from '../../lib/tokens/refresh-tokens';
import { expectProblem } from '../helpers/problem';
import { keysByPrefix, startPrivateRedis, testPrefix, type PrivateRedis } from '../helpers/redis';
import { loginAs, sessionIdOf, sessionSetCookieLine, ssoOptions, startSsoApp, via } from '../helpers/sso-apps';

// Long enough for a replica on a loaded two-core test machine to acknowledge, below the 2 s command timeout.
const WAIT = { replicas: 1, timeoutSeconds: 1.5 };

async function replicationInfo(port: number): Promise<string> {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
  try {
    return await client.info('replication');
  } finally {
    client.disconnect();
  }
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// A master and one replica on private ports: the replica is stopped to make WAIT come back short.
describe('RedisStore waitForReplicas', () => {
  let master: PrivateRedis;
  let replica: PrivateRedis;
  let replicaUp = false;
  const prefix = testPrefix('replica-wait');
  let store: RedisStore;
  let plain: RedisStore;

  const startReplica = async (): Promise<void> => {
    if (replicaUp) return;
    await replica.start();
    replicaUp = true;
    await until(async () => (await replicationInfo(master.port)).includes('connected_slaves:1'), 'the replica attaching');
    await until(async () => (await replicationInfo(replica.port)).includes('master_link_status:up'), 'the replica link');
  };
  const stopReplica = async (): Promise<void> => {
    replicaUp = false;
    await replica.stop();
    await until(async () => (await replicationInfo(master.port)).includes('connected_slaves:0'), 'the master noticing the replica is gone');
  };

  beforeAll(async () => {
    master = await startPrivateRedis();
    replica = await startPrivateRedis(['--replicaof', '127.0.0.1', String(master.port)]);
    // The replica process is up, but its first sync may still be running: wait for the link, as startReplica does.
    replicaUp = true;
    await until(async () => (await replicationInfo(master.port)).includes('connected_slaves:1'), 'the replica attaching');
    await until(async () => (await replicationInfo(replica.port)).includes('master_link_status:up'), 'the replica link');
    store = new RedisStore(master.url, { prefix, waitForReplicas: WAIT });
    plain = new RedisStore(master.url, { prefix });
  });
  afterAll(async () => {
    await store?.close();
    await plain?.close();
    await replica?.stop();
    await master?.stop();
  });
  beforeEach(() => startReplica());

  it('resolves once the replica holds the write, and the replica has it', async () => {
    await store.set('confirmed', 'yes', 60);
    await store.confirmWrites(['confirmed']);
    const onReplica = new Redis(replica.url);
    try {
      expect(await onReplica.get(`${prefix}confirmed`)).toBe('yes');
    } finally {
      onReplica.disconnect();
    }
  });

  it('rejects with StoreUnavailableError after timeoutSeconds when no replica acknowledges', async () => {
    await stopReplica();
    await store.set('unconfirmed', 'yes', 60);
    const started = Date.now();
    const failure = await store.confirmWrites(['unconfirmed']).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as Error).message).toBe('only 0 of 1 Redis replicas acknowledged the write within 1500 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1490);
  });

  it('sends no WAIT without the option, and a MemoryStore resolves at once', async () => {
    const admin = new Redis(master.url);
    try {
      await admin.config('RESETSTAT');
      await stopReplica();
      await plain.set('anything', '1', 60);
      await plain.confirmWrites(['anything']);
      expect(await admin.info('commandstats')).not.toMatch(/cmdstat_wait:/);
    } finally {
      admin.disconnect();
    }
    await expect(new MemoryStore().confirmWrites(['x'])).resolves.toBeUndefined();
  });

  it('waits for one replica by default on a connection through Sentinel, and not with false or a direct URL', () => {
    const throughSentinel = createRedisConnection({
      sentinel: { sentinels: [{ host: '127.0.0.1', port: master.port }], name: 'unused' },
      redisOptions: { lazyConnect: true },
    });
    try {
      expect(new RedisStore(throughSentinel).waitForReplicas).toEqual({ replicas: 1, timeoutSeconds: 0.5 });
      expect(new RedisStore(throughSentinel, { waitForReplicas: false }).waitForReplicas).toBeUndefined();
      expect(new RedisStore(throughSentinel, { waitForReplicas: { replicas: 2, timeoutSeconds: 0.9 } }).waitForReplicas).toEqual({
        replicas: 2,
        timeoutSeconds: 0.9,
      });
    } finally {
      throughSentinel.disconnect();
    }
    expect(plain.waitForReplicas).toBeUndefined();
  });

  it('validates the option when the store is made', () => {
    expect(() => new RedisStore(master.url, { waitForReplicas: { replicas: 0 } })).toThrow(
      'RedisStore: waitForReplicas.replicas must be a whole number of replicas of at least 1, got 0',
    );
    expect(() => new RedisStore(master.url, { waitForReplicas: { replicas: 1, timeoutSeconds: 0 } })).toThrow(
      'RedisStore: waitForReplicas.timeoutSeconds must be at least 0.001 seconds, got 0',
    );
    // The option was renamed from milliseconds to seconds; the old name is refused with the new one suggested.
    expect(() => new RedisStore(master.url, { waitForReplicas: { replicas: 1, timeoutMs: 500 } as never })).toThrow(
      'RedisStore: unknown option "waitForReplicas.timeoutMs" (did you mean "waitForReplicas.timeoutSeconds"?)',
    );
    // The kit's connections time commands out after 2000 ms; a WAIT that long would look like an outage.
    const client = createRedisConnection(master.url);
    try {
      expect(() => new RedisStore(client, { waitForReplicas: { replicas: 1, timeoutSeconds: 2 } })).toThrow(
        "RedisStore: waitForReplicas.timeoutSeconds (2) must be below the client's commandTimeout (2 s), or WAIT would time out as an outage",
      );
    } finally {
      client.disconnect();
    }
  });

  describe('the critical writes wait for it', () => {
    let shop: Awaited<ReturnType<typeof startSsoApp>>;
    const sessionPrefix = `${prefix}sess:`;

    beforeAll(async () => {
      shop = await startSsoApp(ssoSession(ssoOptions({ store })));
    });
    afterAll(() => shop.close());

    it('a login no replica confirmed answers 503 without a session cookie and leaves no session behind', async () => {
      await stopReplica();
      const before = await keysByPrefix(store.client, sessionPrefix);
      const res = await via(shop.server, 'shop.example.test', 'post', '/login')
        .set('Origin', 'https://shop.example.test')
        .send({ id: 'unconfirmed-user', name: 'U', roles: [], method: 'password' });
      expectProblem(res, 503, 'store_unavailable');
      expect(sessionSetCookieLine(res)).toBeUndefined();
      expect(await keysByPrefix(store.client, sessionPrefix)).toEqual(before);
      expect(await store.members('user-sessions:{unconfirmed-user}')).toEqual([]);
    });

    it('a logout no replica confirmed answers 503 and keeps the cookie, so the browser can send it again', async () => {
      const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'leaving' });
      await stopReplica();
      const refused = await via(shop.server, 'shop.example.test', 'post', '/logout', cookie);
      expectProblem(refused, 503, 'store_unavailable');
      expect(sessionSetCookieLine(refused)).toBeUndefined();
      await startReplica();
      const accepted = await via(shop.server, 'shop.example.test', 'post', '/logout', cookie);
      expect(accepted.status).toBe(204);
      expect(sessionSetCookieLine(accepted)).toMatch(/^__Secure-sso\.sid=;/);
      expect(await store.get(`sess:${sessionIdOf(cookie)}`)).toBeNull();
    });

    it('logout everywhere no replica confirmed answers 503', async () => {
      const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'everywhere' });
      await stopReplica();
      const res = await via(shop.server, 'shop.example.test', 'post', '/logout-everywhere', cookie).set(
        'Origin',
        'https://shop.example.test',
      );
      expectProblem(res, 503, 'store_unavailable');
    });

    it('a QR confirmation no replica confirmed is refused with StoreUnavailableError', async () => {
      const requests = new QrLoginRequests(store);
      const record = await requests.create({
        appid: 'shop',
        redirectUri: 'https://shop.example.test/callback/qr',
        state: 's',
        bindingHash: 'h',
        requester: { ip: '127.0.0.1', userAgent: 'test' },
        validitySeconds: 180,
      });
      expect(await requests.transition(record.authCode, 'scanned', 'alice', 300)).toMatchObject({ ok: true });
      await stopReplica();
      await expect(requests.transition(record.authCode, 'confirmed', 'alice', 300)).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it('a refresh token is neither issued nor rotated while no replica confirms it', async () => {
      const tokens = new RefreshTokens({ store, accessTokenLifetimeSeconds: 60 });
      const issued = await tokens.issue({ clientId: 'shop', subject: 'alice' });
      await stopReplica();
      await expect(tokens.issue({ clientId: 'shop', subject: 'bob' })).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(tokens.rotate(issued.token, 'shop')).rejects.toBeInstanceOf(StoreUnavailableError);
    });
  });
});
