import type { SessionData } from 'express-session';
import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, sessionIdOf, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { MemoryStore, ssoSession } from '../../lib';
import { KeyValueSessionStore, markFreshLogin, mergeSessionChanges, SsoRedisSessionStore } from '../../lib/session/session-store';
import type { SessionLimits } from '../../lib/session/session-lifetime';

const limits: SessionLimits = { idleMs: 60_000, absoluteMs: 600_000, touchAfterMs: 1000 };

function loggedIn(createdAt: number, lastSeenAt = createdAt): SessionData {
  return {
    cookie: { originalMaxAge: null },
    user: {
      id: userId('ada'),
      source: 'test:users',
      subject: 'ada',
      name: 'Ada',
      roles: [],
      method: 'password',
      authenticatedAt: createdAt,
    },
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
    expect(await call<SessionData>((done) => store.get('live', done))).toMatchObject({ user: { id: userId('ada') } });

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
    expect(await call<SessionData>((done) => store.get('fresh', done))).toMatchObject({ user: { id: userId('ada') } });
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
      expect(await sso.manager.listSessions(userId('ada'))).toHaveLength(1);
      await via(admin.server, 'admin.example.test', 'post', '/logout', cookie);
      expectProblem(
        await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json'),
        401,
        'session_required',
      );
    } finally {
      await shop.close();
      await admin.close();
      await memory.close();
    }
  });
});

/** A gate a route awaits, so a test can hold a request open after its session was loaded. */
function gate(): { entered: Promise<void>; enter: () => void; release: () => void; released: Promise<void> } {
  let enter = (): void => undefined;
  let release = (): void => undefined;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  return { entered, enter, release, released };
}

describe.each([
  ['Redis', 'redis'],
  ['MemoryStore', 'memory'],
] as const)('concurrent saves of one session (%s)', (_name, kind) => {
  const host = 'shop.example.test';
  let redis: Awaited<ReturnType<typeof testRedisStore>> | undefined;
  let app: Awaited<ReturnType<typeof startSsoApp>>;
  const gates = new Map<string, ReturnType<typeof gate>>();
  const fieldsOf = (req: { session: object }) => req.session as unknown as Record<string, unknown>;

  beforeAll(async () => {
    redis = kind === 'redis' ? await testRedisStore('concurrent') : undefined;
    app = await startSsoApp(ssoSession(ssoOptions({ store: redis?.store ?? new MemoryStore() })), {
      routes: (routes) => {
        routes.get('/held/:gate/:field/:value', async (req, res) => {
          const held = gates.get(req.params.gate)!;
          held.enter();
          await held.released;
          fieldsOf(req)[req.params.field] = req.params.value;
          res.json({ user: req.user?.id ?? null });
        });
        routes.get('/held-touch/:gate', async (req, res) => {
          const held = gates.get(req.params.gate)!;
          held.enter();
          await held.released;
          // What ssoSession's lazy idle-timer touch does (at least 1 ms later, so the JSON surely changes).
          req.session.meta!.lastSeenAt = Math.max(Date.now(), req.session.meta!.lastSeenAt + 1);
          res.json({ user: req.user?.id ?? null });
        });
        routes.get('/set/:field/:value', (req, res) => {
          fieldsOf(req)[req.params.field] = req.params.value;
          res.status(204).end();
        });
        routes.get('/refresh-tokens/:accessToken', (req, res, next) => {
          // What oidcContext stores after a refresh_token grant whose provider rotated the refresh token.
          req.session.oidc = { provider: 'corp', accessToken: req.params.accessToken, refreshToken: `rt-${req.params.accessToken}` };
          req.session.save((error?: unknown) => (error ? next(error) : res.status(204).end()));
        });
        routes.get('/fields', (req, res) => {
          res.json({ x: fieldsOf(req).x ?? null, y: fieldsOf(req).y ?? null, oidc: req.session.oidc ?? null, user: req.user?.id ?? null });
        });
      },
    });
  });
  afterAll(async () => {
    await app.close();
    await redis?.cleanup();
  });

  async function holdWhile(cookie: string, path: (gateName: string) => string, meanwhile: () => Promise<void>): Promise<void> {
    const name = Math.random().toString(36).slice(2);
    const held = gate();
    gates.set(name, held);
    const response = via(app.server, host, 'get', path(name), cookie).then((res) => res);
    await held.entered;
    await meanwhile();
    held.release();
    expect((await response).status).toBe(200);
  }

  it('keeps the changes of two overlapping requests that changed different fields', async () => {
    const cookie = await loginAs(app.server, host, { id: 'ada' });
    await holdWhile(
      cookie,
      (name) => `/held/${name}/x/from-a`,
      async () => {
        expect((await via(app.server, host, 'get', '/set/y/from-b', cookie)).status).toBe(204);
      },
    );
    const fields = await via(app.server, host, 'get', '/fields', cookie);
    expect(fields.body).toMatchObject({ x: 'from-a', y: 'from-b', user: userId('ada') });
  });

  it('keeps tokens refreshed by another request while a touch-only request was in flight', async () => {
    const cookie = await loginAs(app.server, host, { id: 'ada' });
    await via(app.server, host, 'get', '/refresh-tokens/first', cookie);
    await holdWhile(
      cookie,
      (name) => `/held-touch/${name}`,
      async () => {
        expect((await via(app.server, host, 'get', '/refresh-tokens/second', cookie)).status).toBe(204);
      },
    );
    const fields = await via(app.server, host, 'get', '/fields', cookie);
    expect(fields.body.oidc).toEqual({ provider: 'corp', accessToken: 'second', refreshToken: 'rt-second' });
  });

  it('lets the later change of one field win when both requests changed it', async () => {
    const cookie = await loginAs(app.server, host, { id: 'ada' });
    await holdWhile(
      cookie,
      (name) => `/held/${name}/x/from-a`,
      async () => {
        expect((await via(app.server, host, 'get', '/set/x/from-b', cookie)).status).toBe(204);
      },
    );
    expect((await via(app.server, host, 'get', '/fields', cookie)).body.x).toBe('from-a');
  });

  it('does not bring back a session logged out while a request that changed it was in flight', async () => {
    const cookie = await loginAs(app.server, host, { id: 'ada' });
    await holdWhile(
      cookie,
      (name) => `/held/${name}/x/from-a`,
      async () => {
        expect((await via(app.server, host, 'post', '/logout', cookie).set('Origin', `https://${host}`)).status).toBe(204);
      },
    );
    const fields = await via(app.server, host, 'get', '/fields', cookie);
    expect(fields.body).toEqual({ x: null, y: null, oidc: null, user: null });
    if (redis) expect(await redis.client.exists(`${redis.prefix}sess:${sessionIdOf(cookie)}`)).toBe(0);
  });
});

describe('mergeSessionChanges', () => {
  const loaded = { cookie: { path: '/' }, user: 'ada', x: 1, gone: true, meta: { createdAt: 1, lastSeenAt: 10, tags: ['a'] } };

  it('takes the fields this request changed and keeps every other stored field', () => {
    const mine = { cookie: { path: '/' }, user: 'ada', x: 2, meta: { createdAt: 1, lastSeenAt: 10, tags: ['a'] } };
    const stored = { cookie: { path: '/' }, user: 'ada', x: 1, gone: true, y: 'new', meta: { createdAt: 1, lastSeenAt: 10, tags: ['b'] } };
    expect(mergeSessionChanges(loaded, mine, stored)).toEqual({
      cookie: { path: '/' },
      user: 'ada',
      x: 2,
      y: 'new',
      meta: { createdAt: 1, lastSeenAt: 10, tags: ['b'] },
    });
  });

  it('keeps the later lastSeenAt, whichever side it comes from', () => {
    const mine = { ...loaded, meta: { ...loaded.meta, lastSeenAt: 20 } };
    expect(mergeSessionChanges(loaded, mine, { ...loaded, meta: { ...loaded.meta, lastSeenAt: 30 } }).meta).toMatchObject({
      lastSeenAt: 30,
    });
    expect(mergeSessionChanges(loaded, mine, { ...loaded, meta: { ...loaded.meta, lastSeenAt: 15 } }).meta).toMatchObject({
      lastSeenAt: 20,
    });
  });
});
