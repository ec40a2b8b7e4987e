import { Agent } from 'node:http';
import Redis from 'ioredis';
import { ssoSession } from '../../lib/session';
import { SessionCache } from '../../lib/session/session-cache';
import { MemoryStore, RedisStore } from '../../lib/store';
import { invalidationClientIds, startCachedApp, until, type CachedApp } from '../helpers/cached-session-apps';
import { deleteByPrefix, startPrivateRedis, testPrefix, type PrivateRedis } from '../helpers/redis';
import { SESSION_COOKIE, TEST_SECRET, userId } from '../helpers/sso-apps';
import { plainRequest } from '../helpers/sso-load-apps';

const REDIS_URL = process.env.SSO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('ssoSession({ cache }): sessions cached per process, kept coherent by Redis invalidations', () => {
  const agent = new Agent({ keepAlive: true });
  const admin = new Redis(REDIS_URL);
  let prefix: string;
  let auth: CachedApp;
  let shop: CachedApp;
  let shopStore: RedisStore;

  const request = (app: CachedApp, method: string, path: string, cookie?: string) =>
    plainRequest(agent, method, `${app.url}${path}`, app.host, cookie);
  const login = async (subject: string): Promise<string> => {
    const res = await request(auth, 'POST', `/login/${subject}`);
    const line = (res.headers['set-cookie'] ?? []).find((candidate) => candidate.startsWith(`${SESSION_COOKIE}=`));
    if (res.status !== 204 || !line) throw new Error(`login answered ${res.status}`);
    return line.split(';')[0]!;
  };
  /** GET /me on the shop twice: the first read fills the shop's cache, the second is served from it. */
  const warm = async (cookie: string) => {
    expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
    expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
    expect(shop.sso.cache!.size).toBeGreaterThan(0);
  };

  beforeEach(async () => {
    prefix = testPrefix('session-cache');
    auth = await startCachedApp(new RedisStore(REDIS_URL, { prefix }), 'auth.example.test', { maxAgeSeconds: 600 });
    shopStore = new RedisStore(REDIS_URL, { prefix });
    shop = await startCachedApp(shopStore, 'shop.example.test', { maxAgeSeconds: 600 });
    await until(() => auth.sso.cache!.ready && shop.sso.cache!.ready, 10_000, 'the caches tracking');
  });

  afterEach(async () => {
    await auth.close();
    await shop.close();
    await deleteByPrefix(admin, prefix);
  });

  afterAll(async () => {
    agent.destroy();
    await admin.quit();
  });

  it('serves a logged-in session from the cache without reading Redis again', async () => {
    const cookie = await login('alice');
    await warm(cookie);
    // Counts the session reads the shop's own connection sends (other suites share the Redis).
    const client = shopStore.client as Redis;
    const reads: string[] = [];
    const get = client.get.bind(client);
    const mget = client.mget.bind(client);
    client.get = ((key: string) => (reads.push(key), get(key))) as typeof client.get;
    client.mget = ((...keys: Parameters<typeof client.mget>) => (reads.push(String(keys)), mget(...keys))) as typeof client.mget;
    try {
      for (let index = 0; index < 5; index += 1) expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
    } finally {
      client.get = get;
      client.mget = mget;
    }
    expect(reads).toEqual([]);
  });

  it('refuses on one app a session logged out on another, within milliseconds', async () => {
    const cookie = await login('bob');
    await warm(cookie);
    expect((await request(auth, 'POST', '/logout', cookie)).status).toBe(204);
    const waited = await until(async () => (await request(shop, 'GET', '/me', cookie)).status === 401, 5_000, 'the shop refusing');
    expect(waited).toBeLessThan(5_000);
  });

  it('refuses on one app every session of a user ended with logout everywhere on another', async () => {
    const cookies = [await login('carol'), await login('carol')];
    for (const cookie of cookies) await warm(cookie);
    expect(await auth.sso.manager.logoutEverywhere(userId('carol'))).toBe(2);
    for (const cookie of cookies) {
      await until(async () => (await request(shop, 'GET', '/me', cookie)).status === 401, 5_000, 'the shop refusing');
    }
  });

  /** Holds back everything Redis sends to the shop's invalidation connection, as a slow network would. */
  const holdInvalidations = (): (() => void) => {
    const trackers = (shop.sso.cache as unknown as { trackers: Map<string, { connection: { stream: { pause(): void; resume(): void } } }> })
      .trackers;
    const streams = [...trackers.values()].map((tracker) => tracker.connection.stream);
    for (const stream of streams) stream.pause();
    return () => {
      for (const stream of streams) stream.resume();
    };
  };

  it('sees its own revocations at once, even before their invalidation messages arrive', async () => {
    const cookie = await login('henry');
    await warm(cookie);
    const release = holdInvalidations();
    try {
      await shop.sso.manager.logoutEverywhere(userId('henry'));
      expect((shop.sso.cache as SessionCache).lookup(sessionKey(prefix, cookie))).toBeUndefined();
      expect((await request(shop, 'GET', '/me', cookie)).status).toBe(401);
    } finally {
      release();
    }
  });

  it('sees its own logout at once, even before its invalidation message arrives', async () => {
    const res = await request(shop, 'POST', '/login/ida');
    const cookie = (res.headers['set-cookie'] ?? []).find((line) => line.startsWith(`${SESSION_COOKIE}=`))!.split(';')[0]!;
    await warm(cookie);
    const release = holdInvalidations();
    try {
      expect((await request(shop, 'POST', '/logout', cookie)).status).toBe(204);
      expect((shop.sso.cache as SessionCache).lookup(sessionKey(prefix, cookie))).toBeUndefined();
      expect((await request(shop, 'GET', '/me', cookie)).status).toBe(401);
    } finally {
      release();
    }
  });

  it('never serves a session revoked while its invalidation connection was down', async () => {
    const cookie = await login('dave');
    await warm(cookie);
    const [session] = await auth.sso.manager.listSessions(userId('dave'));
    // The connection dies; the revocation that follows sends its invalidation to nobody.
    for (const id of await invalidationClientIds(admin)) await admin.client('KILL', 'ID', id);
    expect(await auth.sso.manager.revokeSession(userId('dave'), session!.id)).toBe(true);
    expect((await request(shop, 'GET', '/me', cookie)).status).toBe(401);
    // Once the connection is back the cache is used again, and kept coherent again.
    await until(() => shop.sso.cache!.ready, 10_000, 'the invalidation connection coming back');
    const next = await login('dave');
    await warm(next);
    expect((await request(auth, 'POST', '/logout', next)).status).toBe(204);
    await until(async () => (await request(shop, 'GET', '/me', next)).status === 401, 5_000, 'the shop refusing');
  });

  it('answers from the cache only after the invalidations that had already arrived are applied', async () => {
    const cookie = await login('frank');
    await warm(cookie);
    // Another process logs frank out, and the shop reads the invalidation in the same poll of the event loop as
    // frank's next request, just after it: the request's lookup still finds the session, the message evicts it
    // before the event loop moves on.
    const cache = shop.sso.cache as unknown as SessionCache<unknown>;
    const lookup = cache.lookup.bind(cache);
    let raced = 0;
    cache.lookup = (key: string) => {
      const found = lookup(key);
      if (found !== undefined && raced === 0) {
        raced += 1;
        void (shopStore.client as Redis).del(key);
        queueMicrotask(() => cache.invalidate([key]));
      }
      return found;
    };
    try {
      expect((await request(shop, 'GET', '/me', cookie)).status).toBe(401);
      expect(raced).toBe(1);
    } finally {
      cache.lookup = lookup;
    }
  });

  it('does not keep a read that a revocation overtook', async () => {
    const cookie = await login('erin');
    // Reads and revocations racing: whatever order they land in, once the revocation is done no read may succeed.
    const reads = Array.from({ length: 20 }, () => request(shop, 'GET', '/me', cookie));
    await auth.sso.manager.logoutEverywhere(userId('erin'));
    await Promise.all(reads);
    await until(async () => (await request(shop, 'GET', '/me', cookie)).status === 401, 5_000, 'the shop refusing');
    for (let index = 0; index < 5; index += 1) expect((await request(shop, 'GET', '/me', cookie)).status).toBe(401);
  });

  it('keeps at most maxEntries sessions, dropping one not used since it was cached', async () => {
    await shop.close();
    shop = await startCachedApp(new RedisStore(REDIS_URL, { prefix }), 'shop.example.test', { maxEntries: 2, maxAgeSeconds: 600 });
    await until(() => shop.sso.cache!.ready, 10_000, 'the cache tracking');
    const [first, second, third] = [await login('g1'), await login('g2'), await login('g3')];
    // Each read once from Redis (and cached), then first is served from the cache: second, not used since it was
    // cached, makes room for third.
    for (const cookie of [first, second, first, third]) expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
    expect(shop.sso.cache!.size).toBe(2);
    expect((shop.sso.cache as SessionCache).lookup(sessionKey(prefix, first!))).toBeDefined();
    expect((shop.sso.cache as SessionCache).lookup(sessionKey(prefix, second!))).toBeUndefined();
    expect((shop.sso.cache as SessionCache).lookup(sessionKey(prefix, third!))).toBeDefined();
  });
});

describe('ssoSession({ cache }) while its invalidation connection is down', () => {
  const agent = new Agent({ keepAlive: true });
  let redis: PrivateRedis;
  let admin: Redis;
  let auth: CachedApp;
  let shop: CachedApp;
  const prefix = testPrefix('session-cache-outage');

  const request = (app: CachedApp, method: string, path: string, cookie?: string) =>
    plainRequest(agent, method, `${app.url}${path}`, app.host, cookie);

  beforeAll(async () => {
    // A private Redis: the outage is made with an ACL rule and CLIENT KILL, which must touch no one else's connections.
    redis = await startPrivateRedis();
    admin = new Redis(redis.url);
    // The portal keeps no cache: what it revokes, the shop can only learn from Redis.
    auth = await startCachedApp(new RedisStore(redis.url, { prefix }), 'auth.example.test', undefined);
    shop = await startCachedApp(new RedisStore(redis.url, { prefix }), 'shop.example.test', { maxAgeSeconds: 600 });
    await until(() => shop.sso.cache!.ready, 10_000, 'the cache tracking');
  });

  afterAll(async () => {
    agent.destroy();
    await auth?.close();
    await shop?.close();
    await admin?.quit();
    await redis?.stop();
  });

  it('reads every session from Redis, so a session revoked during the outage is refused at once, and is coherent again after', async () => {
    // The invalidation connection drops, and its reconnections cannot turn tracking on again (the other connections
    // of the app, which never track, keep working): the outage lasts until the rule is lifted.
    await admin.call('ACL', 'SETUSER', 'default', '-client|tracking');
    for (const id of await invalidationClientIds(admin)) await admin.client('KILL', 'ID', id);
    const refusedTracking = async () => String(await admin.call('ACL', 'LOG')).includes('client|tracking');
    await until(refusedTracking, 10_000, 'a reconnection refused tracking');

    for (const subject of ['oliver', 'paula', 'quinn']) {
      const login = await request(auth, 'POST', `/login/${subject}`);
      const cookie = (login.headers['set-cookie'] ?? []).find((line) => line.startsWith(`${SESSION_COOKIE}=`))!.split(';')[0]!;
      // Read twice during the outage: a cache that filled again while blind would now hold this session.
      expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
      expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
      expect({ subject, cached: shop.sso.cache!.size }).toEqual({ subject, cached: 0 });
      expect(await auth.sso.manager.logoutEverywhere(userId(subject))).toBe(1);
      expect({ subject, status: (await request(shop, 'GET', '/me', cookie)).status }).toEqual({ subject, status: 401 });
    }

    // The outage ends: the cache is used again, and kept coherent again.
    await admin.call('ACL', 'SETUSER', 'default', '+client|tracking');
    await until(() => shop.sso.cache!.ready, 10_000, 'the invalidation connection coming back');
    const login = await request(auth, 'POST', '/login/rachel');
    const cookie = (login.headers['set-cookie'] ?? []).find((line) => line.startsWith(`${SESSION_COOKIE}=`))!.split(';')[0]!;
    expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
    expect(shop.sso.cache!.size).toBe(1);
    expect(await auth.sso.manager.logoutEverywhere(userId('rachel'))).toBe(1);
    await until(async () => (await request(shop, 'GET', '/me', cookie)).status === 401, 5_000, 'the shop refusing');
  });
});

/** The Redis key of the session a cookie names. */
function sessionKey(prefix: string, cookie: string): string {
  return `${prefix}sess:${
    decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1))
      .slice(2)
      .split('.')[0]
  }`;
}

describe('SessionCache', () => {
  const client = new Redis(REDIS_URL);
  const prefix = testPrefix('session-cache-unit');
  let cache: SessionCache;

  beforeEach(async () => {
    cache = new SessionCache(client, `${prefix}sess:`, { maxEntries: 100, maxAgeSeconds: 600 });
    await until(() => cache.ready, 10_000, 'the cache tracking');
  });
  afterEach(() => cache.close());
  afterAll(() => client.quit());

  it('does not keep a read that an invalidation of its key overtook', () => {
    const key = `${prefix}sess:raced`;
    const ticket = cache.beginRead();
    cache.invalidate([key]);
    cache.finishRead(key, '{"user":{}}', ticket);
    expect(cache.lookup(key)).toBeUndefined();
    // A read that started after the invalidation is kept.
    const later = cache.beginRead();
    cache.finishRead(key, '{"user":{}}', later);
    expect(cache.lookup(key)).toBe('{"user":{}}');
  });

  it('does not keep a read that started before a flush', () => {
    const key = `${prefix}sess:flushed`;
    const ticket = cache.beginRead();
    cache.flush('test');
    cache.finishRead(key, '{}', ticket);
    expect(cache.lookup(key)).toBeUndefined();
  });

  it('forgets an entry older than maxAgeSeconds', async () => {
    await cache.close();
    cache = new SessionCache(client, `${prefix}sess:`, { maxEntries: 100, maxAgeSeconds: 0.05 });
    await until(() => cache.ready, 10_000, 'the cache tracking');
    const key = `${prefix}sess:aged`;
    cache.finishRead(key, '{}', cache.beginRead());
    expect(cache.lookup(key)).toBe('{}');
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(cache.lookup(key)).toBeUndefined();
  });

  it('caches nothing before its invalidation connection is tracking', async () => {
    await cache.close();
    cache = new SessionCache(client, `${prefix}sess:`, { maxEntries: 100, maxAgeSeconds: 600 });
    const key = `${prefix}sess:early`;
    const ticket = cache.beginRead();
    expect(cache.ready).toBe(false);
    cache.finishRead(key, '{}', ticket);
    await until(() => cache.ready, 10_000, 'the cache tracking');
    expect(cache.lookup(key)).toBeUndefined();
  });

  it('evicts a key written by any connection', async () => {
    const key = `${prefix}sess:written`;
    cache.finishRead(key, '{}', cache.beginRead());
    await client.set(key, '{"changed":true}', 'PX', 5000);
    await until(() => cache.lookup(key) === undefined, 5_000, 'the eviction');
  });
});

describe('ssoSession cache option', () => {
  it('is refused with a store that sends no invalidations', () => {
    expect(() =>
      ssoSession({
        store: new MemoryStore(),
        cookieDomain: 'example.test',
        secret: TEST_SECRET,
        loginUrl: 'https://auth.example.test/login',
        cache: {},
      }),
    ).toThrow(/cache needs Redis/);
  });

  it('names a bad maxEntries', () => {
    expect(() =>
      ssoSession({
        redis: REDIS_URL,
        cookieDomain: 'example.test',
        secret: TEST_SECRET,
        loginUrl: 'https://auth.example.test/login',
        cache: { maxEntries: 0 },
      }),
    ).toThrow(/cache.*maxEntries/);
  });
});
