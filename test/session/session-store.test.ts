import type { SessionData } from 'express-session';
import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, sessionIdOf, ssoOptions, startSsoApp, via } from '../helpers/sso-apps';
import { MemoryStore, ssoSession } from '../../lib';
import { KeyValueSessionStore, markFreshLogin, SsoRedisSessionStore } from '../../lib/session/session-store';
import type { SessionLimits } from '../../lib/session/session-lifetime';

const limits: SessionLimits = { idleMs: 60_000, absoluteMs: 600_000, touchAfterMs: 1000 };

function loggedIn(createdAt: number, lastSeenAt = createdAt): SessionData {
  return {
    cookie: { originalMaxAge: null },
    user: { id: 'ada', name: 'Ada', roles: [], method: 'password', authenticatedAt: createdAt },
    meta: { createdAt, lastSeenAt },
  } as unknown as SessionData;
}

const call = <T>(run: (done: (err: unknown, data?: T | null) => void) => void) =>
  new Promise<T | null | undefined>((resolve, reject) => run((err, data) => (err ? reject(err) : resolve(data))));

describe('SsoRedisSessionStore (connect-redis)', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let store: SsoRedisSessionStore;
  const expired: string[] = [];

  beforeAll(async () => {
    redis = await testRedisStore('store');
    store = new SsoRedisSessionStore(redis.client, `${redis.prefix}sess:`, { limits, onExpired: async (id) => void expired.push(id) });
  });
  afterAll(() => redis.cleanup());

  it('writes a fresh login with a TTL of min(idle, remaining absolute)', async () => {
    const data = loggedIn(Date.now() - 590_000, Date.now());
    markFreshLogin(data);
    await call((done) => store.set('fresh', data, done));
    const ttl = await redis.client.pttl(`${redis.prefix}sess:fresh`);
    expect(ttl).toBeGreaterThan(8000);
    expect(ttl).toBeLessThanOrEqual(10_000);
  });

  it('does not create the key again for a re-save of an existing login (SET XX)', async () => {
    await call((done) => store.set('gone', loggedIn(Date.now()), done));
    expect(await redis.client.exists(`${redis.prefix}sess:gone`)).toBe(0);
  });

  it('reads a live session and deletes an expired one, telling the hook', async () => {
    const live = loggedIn(Date.now());
    markFreshLogin(live);
    await call((done) => store.set('live', live, done));
    expect(await call<SessionData>((done) => store.get('live', done))).toMatchObject({ user: { id: 'ada' } });

    await redis.client.set(`${redis.prefix}sess:old`, JSON.stringify(loggedIn(Date.now() - 120_000, Date.now() - 61_000)));
    expect(await call((done) => store.get('old', done))).toBeNull();
    expect(await redis.client.exists(`${redis.prefix}sess:old`)).toBe(0);
    expect(expired).toContain('old');
  });

  it('reads a value that is not JSON as no session rather than an outage', async () => {
    await redis.client.set(`${redis.prefix}sess:corrupt`, '{not json');
    expect(await call((done) => store.get('corrupt', done))).toBeNull();
  });
});

describe('KeyValueSessionStore (MemoryStore path)', () => {
  it('follows the same rules', async () => {
    const memory = new MemoryStore();
    const store = new KeyValueSessionStore(memory, 'sess:', { limits, onExpired: async () => undefined });
    await call((done) => store.set('gone', loggedIn(Date.now()), done));
    expect(await memory.get('sess:gone')).toBeNull();
    const fresh = loggedIn(Date.now());
    markFreshLogin(fresh);
    await call((done) => store.set('fresh', fresh, done));
    expect(await call<SessionData>((done) => store.get('fresh', done))).toMatchObject({ user: { id: 'ada' } });
    await memory.set('sess:old', JSON.stringify(loggedIn(Date.now() - 700_000, Date.now())));
    expect(await call((done) => store.get('old', done))).toBeNull();
    expect(await memory.get('sess:old')).toBeNull();
    await memory.close();
  });

  it('runs the whole single sign-on flow on a MemoryStore', async () => {
    const memory = new MemoryStore();
    const sso = ssoSession(ssoOptions({ store: memory }));
    const shop = await startSsoApp(sso);
    const admin = await startSsoApp(ssoSession(ssoOptions({ store: memory })));
    try {
      const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
      expect(await memory.get(`sess:${sessionIdOf(cookie)}`)).not.toBeNull();
      expect((await via(admin.server, 'admin.example.test', 'get', '/me', cookie)).status).toBe(200);
      expect(await sso.manager.listSessions('ada')).toHaveLength(1);
      await via(admin.server, 'admin.example.test', 'post', '/logout', cookie);
      expectProblem(await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json'), 401, 'session_required');
    } finally {
      await shop.close();
      await admin.close();
      await memory.close();
    }
  });
});
