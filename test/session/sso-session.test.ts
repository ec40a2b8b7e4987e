import type { Server } from 'node:http';
import Redis from 'ioredis';
import { keysByPrefix, startPrivateRedis, testRedisStore, type PrivateRedis } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { forgeSessionCookie } from '../helpers/session-cookies';
import {
  loginAs,
  sessionIdOf,
  sessionSetCookieLine,
  ssoOptions,
  startSsoApp,
  TEST_SECRET,
  TEST_SOURCE,
  userId,
  via,
} from '../helpers/sso-apps';
import { MemoryStore, notFound, requireSession, ssoSession, type RedisStore, type SsoSessionOptions } from '../../lib';

describe('ssoSession across subdomains', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let admin: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('session');
    // Two separate apps (two ssoSession instances) that share only the store and the cookie domain.
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
    admin = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
  });
  afterAll(async () => {
    await shop.close();
    await admin.close();
    await redis.cleanup();
  });

  it('a login on shop is a login on admin', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
    const res = await via(admin.server, 'admin.example.test', 'get', '/me', cookie);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: userId('ada'), name: 'ada' });
  });

  it('sets the cookie HttpOnly, Secure, SameSite=Lax on the parent domain with Path=/', async () => {
    const res = await via(shop.server, 'shop.example.test', 'post', '/login').send({
      id: 'bob',
      name: 'Bob',
      roles: [],
      method: 'password',
    });
    const line = sessionSetCookieLine(res)!;
    expect(line).toBeDefined();
    const attributes = line
      .split(';')
      .slice(1)
      .map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['domain=example.test', 'path=/', 'httponly', 'secure', 'samesite=lax']));
    expect(attributes.some((part) => part.startsWith('expires=') || part.startsWith('max-age='))).toBe(false);
  });

  it('gives the session a new id at login (fixation)', async () => {
    // An anonymous session with an id the attacker could have planted.
    const before = await loginAs(shop.server, 'shop.example.test', { id: 'mallory' });
    const after = await loginAs(shop.server, 'shop.example.test', { id: 'carol' }, before);
    expect(sessionIdOf(after)).not.toBe(sessionIdOf(before));
    const old = await via(shop.server, 'shop.example.test', 'get', '/me', before).set('Accept', 'application/json');
    expectProblem(old, 401, 'session_required');
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', after)).body.id).toBe(userId('carol'));
  });

  it('does not set a cookie or write to Redis for an anonymous visit', async () => {
    const keysBefore = await keysByPrefix(redis.client, redis.prefix);
    const res = await via(shop.server, 'shop.example.test', 'get', '/public');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(await keysByPrefix(redis.client, redis.prefix)).toEqual(keysBefore);
  });

  it('treats a tampered cookie as no login', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'dave' });
    const tampered = cookie.replace(/.$/, (last) => (last === 'A' ? 'B' : 'A'));
    const res = await via(shop.server, 'shop.example.test', 'get', '/me', tampered).set('Accept', 'application/json');
    expectProblem(res, 401, 'session_required');
  });

  it('treats a cookie signed with a foreign secret as no login, even for a real session id', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'erin' });
    const forged = forgeSessionCookie(sessionIdOf(cookie), 'someone-else-s-secret-0123456789-abcdefghij');
    const res = await via(shop.server, 'shop.example.test', 'get', '/me', forged).set('Accept', 'application/json');
    expectProblem(res, 401, 'session_required');
    // The same id signed with our secret is accepted, so the refusal above is about the signature.
    const genuine = forgeSessionCookie(sessionIdOf(cookie), TEST_SECRET);
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', genuine)).status).toBe(200);
  });

  it('accepts cookies signed with an older secret during rotation', async () => {
    const oldSecret = `${TEST_SECRET}-old`;
    const rotating = await startSsoApp(ssoSession(ssoOptions({ store: redis.store, secret: [`${TEST_SECRET}-new`, oldSecret] })));
    try {
      const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'frank' });
      const signedWithOld = forgeSessionCookie(sessionIdOf(cookie), oldSecret);
      expect((await via(rotating.server, 'shop.example.test', 'get', '/me', signedWithOld)).status).toBe(200);
    } finally {
      await rotating.close();
    }
  });

  it('keeps sessions under the store prefix and the session prefix', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'gina' });
    const key = `${(redis.store as RedisStore).prefix}sess:${sessionIdOf(cookie)}`;
    const stored = JSON.parse((await redis.client.get(key))!);
    expect(stored.user).toMatchObject({ id: userId('gina'), source: TEST_SOURCE, subject: 'gina', method: 'password' });
    expect(stored.meta).toMatchObject({ createdAt: expect.any(Number), lastSeenAt: expect.any(Number), userAgent: expect.any(String) });
  });

  it('refuses a path with a malformed percent-escape with 400 malformed_uri, before a gate could send it to log in', async () => {
    // A site gated as a whole: without the refusal, an anonymous request would get 401 (a browser, a login redirect
    // carrying the malformed address as the page to come back to).
    const gated = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })), {
      routes: (app) => app.use(requireSession(), notFound()),
    });
    try {
      const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ivy' });
      for (const path of ['/%E0%A4%A', '/me%ZZ', '/orders/%']) {
        for (const withCookie of [undefined, cookie]) {
          const res = await via(gated.server, 'shop.example.test', 'get', path, withCookie).set('Accept', 'application/json');
          expectProblem(res, 400, 'malformed_uri');
          expect(res.headers['set-cookie']).toBeUndefined();
        }
      }
      expectProblem(
        await via(gated.server, 'shop.example.test', 'get', '/elsewhere').set('Accept', 'application/json'),
        401,
        'session_required',
      );
    } finally {
      await gated.close();
    }
  });

  it('sets req.user on public routes for a logged-in browser', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'hank' });
    expect((await via(admin.server, 'admin.example.test', 'get', '/public', cookie)).body).toEqual({ user: userId('hank') });
  });
});

describe('ssoSession lifetimes', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  const servers: Array<{ close: () => Promise<void> }> = [];

  beforeAll(async () => {
    redis = await testRedisStore('session-life');
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await redis.cleanup();
  });

  async function appWith(options: {
    idleTimeoutSeconds: number;
    absoluteLifetimeSeconds: number;
    touchAfterSeconds: number;
  }): Promise<Server> {
    const started = await startSsoApp(ssoSession(ssoOptions({ store: redis.store, ...options })));
    servers.push(started);
    return started.server;
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const ttlOf = (cookie: string) => redis.client.pttl(`${redis.prefix}sess:${sessionIdOf(cookie)}`);

  it('ends a session after the idle timeout without requests', async () => {
    const server = await appWith({ idleTimeoutSeconds: 1, absoluteLifetimeSeconds: 60, touchAfterSeconds: 0.1 });
    const cookie = await loginAs(server, 'shop.example.test', { id: 'idle' });
    expect((await via(server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    await sleep(1200);
    expectProblem(await via(server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json'), 401, 'session_required');
  });

  it('keeps an active session alive past the idle timeout', async () => {
    const server = await appWith({ idleTimeoutSeconds: 1, absoluteLifetimeSeconds: 60, touchAfterSeconds: 0.1 });
    const cookie = await loginAs(server, 'shop.example.test', { id: 'active' });
    for (let i = 0; i < 4; i += 1) {
      await sleep(400);
      expect((await via(server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    }
  });

  it('ends a session at its absolute lifetime however active it is, and deletes it', async () => {
    const server = await appWith({ idleTimeoutSeconds: 1, absoluteLifetimeSeconds: 2, touchAfterSeconds: 0.1 });
    const loginAt = Date.now();
    const cookie = await loginAs(server, 'shop.example.test', { id: 'absolute' });
    // The session's createdAt lies between loginAt and loginDone.
    const loginDone = Date.now();
    for (let i = 0; i < 3; i += 1) {
      await sleep(300);
      expect((await via(server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    }
    // The store TTL never reaches past the absolute lifetime, however recently the idle timer was refreshed.
    expect(Date.now() - loginAt).toBeLessThan(2000);
    // Read the clock before the TTL: the TTL can only have shrunk by the time its answer arrives.
    const askedAt = Date.now();
    expect(await ttlOf(cookie)).toBeLessThanOrEqual(2000 - (askedAt - loginDone));
    await sleep(Math.max(0, 2000 - (Date.now() - loginDone)) + 100);
    expectProblem(await via(server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json'), 401, 'session_required');
    expect(await ttlOf(cookie)).toBe(-2);
  });

  it('does not write to Redis on every request, and refreshes the TTL after touchAfterSeconds', async () => {
    const server = await appWith({ idleTimeoutSeconds: 10, absoluteLifetimeSeconds: 60, touchAfterSeconds: 2 });
    const loginAt = Date.now();
    const cookie = await loginAs(server, 'shop.example.test', { id: 'lazy' });
    const loginDone = Date.now();
    const key = `${redis.prefix}sess:${sessionIdOf(cookie)}`;
    const storedBefore = await redis.client.get(key);
    await sleep(200);
    const ttlBefore = await ttlOf(cookie);
    for (let i = 0; i < 5; i += 1) expect((await via(server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    // Without a write the TTL only ran down, and the stored record is byte for byte the same.
    expect(Date.now() - loginAt).toBeLessThan(2000);
    expect(await ttlOf(cookie)).toBeLessThanOrEqual(ttlBefore);
    expect(await redis.client.get(key)).toBe(storedBefore);
    await sleep(Math.max(0, 2000 - (Date.now() - loginDone)) + 100);
    const ttlBeforeTouch = await ttlOf(cookie);
    expect((await via(server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    const ttlAfterTouch = await ttlOf(cookie);
    expect(ttlAfterTouch).toBeGreaterThan(ttlBeforeTouch + 1000);
    expect(JSON.parse((await redis.client.get(key))!).meta.lastSeenAt).toBeGreaterThan(JSON.parse(storedBefore!).meta.lastSeenAt);
    // And the refresh is one write: the following requests leave the record alone again.
    const storedAfterTouch = await redis.client.get(key);
    expect((await via(server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    expect(await redis.client.get(key)).toBe(storedAfterTouch);
  });
});

describe('ssoSession writes to Redis', () => {
  let redis: PrivateRedis;
  let admin: Redis;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let sso: ReturnType<typeof ssoSession>;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    admin = new Redis(redis.port, '127.0.0.1');
    sso = ssoSession(ssoOptions({ redis: redis.url, idleTimeoutSeconds: 60, touchAfterSeconds: 1.5 }));
    shop = await startSsoApp(sso);
  });
  afterAll(async () => {
    await shop.close();
    await sso.manager.close();
    admin.disconnect();
    await redis.stop();
  });

  // Counted by the private server itself, so nothing else writing to it can blur the figure.
  async function writes(): Promise<number> {
    const stats = await admin.info('commandstats');
    return [...stats.matchAll(/^cmdstat_(set|setex|psetex|expire|pexpire|del|getdel):calls=(\d+)/gm)].reduce(
      (sum, match) => sum + Number(match[2]),
      0,
    );
  }
  async function reads(): Promise<number> {
    return Number(/^cmdstat_get:calls=(\d+)/m.exec(await admin.info('commandstats'))?.[1] ?? 0);
  }

  it('costs one GET and no write per request until touchAfterSeconds, then exactly one write', async () => {
    const loginAt = Date.now();
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'counted' });
    const loginDone = Date.now();
    const [writesBefore, readsBefore] = [await writes(), await reads()];
    for (let i = 0; i < 10; i += 1) expect((await via(shop.server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    expect(Date.now() - loginAt).toBeLessThan(1500);
    expect(await writes()).toBe(writesBefore);
    expect((await reads()) - readsBefore).toBe(10);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1500 - (Date.now() - loginDone)) + 50));
    for (let i = 0; i < 3; i += 1) expect((await via(shop.server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    expect((await writes()) - writesBefore).toBe(1);
  });
});

describe('ssoSession during a Redis outage', () => {
  let redis: PrivateRedis;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let sso: ReturnType<typeof ssoSession>;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    // The `redis` option: ssoSession opens (and on close, closes) its own connection.
    sso = ssoSession(ssoOptions({ redis: redis.url }));
    shop = await startSsoApp(sso);
  });
  afterAll(async () => {
    await shop.close();
    await sso.manager.close();
    await redis.stop();
  });

  it('answers 503 with Retry-After while Redis is down, never "logged out", and recovers without a restart', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);

    await redis.stop();
    const started = Date.now();
    const down = await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'text/html');
    expectProblem(down, 503, 'store_unavailable');
    expect(Number(down.headers['retry-after'])).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(5000);
    // A navigation is not sent to the login page either: the user is not logged out.
    expect(down.headers.location).toBeUndefined();
    expectProblem(await via(shop.server, 'shop.example.test', 'get', '/public', cookie), 503, 'store_unavailable');
    expectProblem(
      await via(shop.server, 'shop.example.test', 'post', '/login').send({ id: 'bob', name: 'Bob', roles: [], method: 'password' }),
      503,
      'store_unavailable',
    );
    expectProblem(
      await via(shop.server, 'shop.example.test', 'get', '/account/sessions', cookie).set('Accept', 'application/json'),
      503,
      'store_unavailable',
    );
    // Logout cannot be confirmed either: 503, and the cookie is not cleared as if it had worked.
    const out = await via(shop.server, 'shop.example.test', 'post', '/logout', cookie).set('Origin', 'https://shop.example.test');
    expectProblem(out, 503, 'store_unavailable');
    expect(out.headers['set-cookie']).toBeUndefined();

    await redis.start();
    // The restarted server is empty (no persistence), so the old session is gone: wait for the client to reconnect.
    const deadline = Date.now() + 10_000;
    let status = 503;
    while (status === 503 && Date.now() < deadline) {
      status = (await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json')).status;
      if (status === 503) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(401);
    const again = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', again)).status).toBe(200);
  });

  it('answers 503 within about two seconds when Redis hangs instead of failing', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'slow' });
    await redis.sleep(3);
    const started = Date.now();
    const res = await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json');
    expectProblem(res, 503, 'store_unavailable');
    expect(Date.now() - started).toBeLessThan(2900);
    // Once Redis answers again, so does the app, with the session intact.
    const deadline = Date.now() + 10_000;
    let status = 503;
    while (status === 503 && Date.now() < deadline) {
      status = (await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json')).status;
      if (status === 503) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
  });
});

describe('ssoSession options', () => {
  const memory = new MemoryStore();
  afterAll(() => memory.close());
  const base = ssoOptions({ store: memory });

  it.each([
    [{ cookieDomain: 'com' }, /cookieDomain "com" is a top-level domain/],
    [{ cookieDomain: 'co.uk' }, /public suffix/],
    [{ cookieDomain: '10.0.0.1' }, /not an IP address/],
    [{ cookieDomain: 'localhost' }, /use a name such as "sso.localhost"/],
    [{ secret: 'short' }, /secret must be at least 32 characters/],
    [{ secret: [TEST_SECRET, 'short'] }, /secret\[1\] must be at least 32 characters/],
    [{ secret: [] }, /secret must be a string of at least 32 characters/],
    [{ cookieName: 'bad name' }, /cookieName must be a cookie token/],
    [{ cookieName: '__Host-sid' }, /cannot start with "__Host-"/],
    [{ idleTimeoutSeconds: 0 }, /idleTimeoutSeconds must be a positive number of seconds/],
    [
      { idleTimeoutSeconds: 600, absoluteLifetimeSeconds: 300 },
      /absoluteLifetimeSeconds \(300\) must be at least idleTimeoutSeconds \(600\)/,
    ],
    [
      { idleTimeoutSeconds: 60, touchAfterSeconds: 60 },
      /touchAfterSeconds must be a number of seconds from 0 up to below idleTimeoutSeconds \(60\)/,
    ],
    [{ loginUrl: '/login' }, /loginUrl must be an absolute URL/],
    [{ loginUrl: 'http://auth.example.test/login' }, /loginUrl must use https/],
    [{ loginUrl: 'https://auth.other.test/login' }, /loginUrl must be on example.test or a subdomain/],
    [{ secureCookie: false }, /option "secureCookie" was replaced by allowInsecureLocalDevelopment: true/],
    [
      { allowInsecureCookieForLocalDevelopment: true },
      /option "allowInsecureCookieForLocalDevelopment" was renamed to allowInsecureLocalDevelopment/,
    ],
    [{ absoluteTimeoutSeconds: 600 }, /option "absoluteTimeoutSeconds" was renamed to absoluteLifetimeSeconds/],
    [{ idleTimeoutSecond: 600 }, /unknown option "idleTimeoutSecond" \(did you mean "idleTimeoutSeconds"\?\)/],
    [{ cookieDomian: 'example.test' }, /unknown option "cookieDomian" \(did you mean "cookieDomain"\?\)/],
    [{ idleTimeoutSeconds: '600' }, /idleTimeoutSeconds must be a number, got "600"/],
    [
      { cookieName: '__Secure-sid', allowInsecureLocalDevelopment: true, loginUrl: 'http://auth.example.test/login' },
      /needs a Secure cookie/,
    ],
    [{ csrf: true }, /csrf must be an object \{ allowedOrigins: \[\.\.\.\] \}/],
    [{ sessionPrefix: 'a{b}' }, /sessionPrefix must be a non-empty string without "\{" or "\}"/],
    [{ redis: 'redis://127.0.0.1:1' }, /store and redis cannot be used together/],
    [{ store: { get: () => null } }, /store must be a kit KeyValueStore/],
    [{ defaultRedirectUrl: 'https://evil.test/' }, /defaultRedirectUrl "https:\/\/evil.test\/" is not itself a safe target/],
    [{ allowedRedirectOrigins: ['https://*.example.test'] }, /allowedRedirectOrigins must list full origins/],
    [{ allowedRedirectPorts: [70000] }, /allowedRedirectPorts must hold port numbers/],
  ])('%#: refuses %j with a TypeError naming the fix', (overrides, message) => {
    const options = { ...base, ...overrides } as SsoSessionOptions;
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    expect(() => ssoSession(options)).toThrow(TypeError);
    expect(() => ssoSession(options)).toThrow(message);
    warn.mockRestore();
  });

  it('refuses neither store nor redis', () => {
    const { store: _store, ...withoutStore } = base;
    expect(() => ssoSession(withoutStore as SsoSessionOptions)).toThrow(/give one of store, redis/);
  });

  it('detects app.use(ssoSession) written for app.use(ssoSession({...}))', () => {
    const misuse = ssoSession as unknown as (a: unknown, b: unknown, c: unknown) => unknown;
    expect(() => misuse({ method: 'GET', headers: {}, socket: {} }, {}, () => undefined)).toThrow(
      /write app\.use\(ssoSession\(\{ \.\.\. \}\)\)/,
    );
  });

  it('allows an insecure cookie for local development only when confirmed, with one warning', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const options = {
      ...base,
      cookieDomain: 'sso.localhost',
      loginUrl: 'http://auth.sso.localhost:3000/login',
      allowInsecureLocalDevelopment: true,
    };
    expect(ssoSession(options).context.cookie).toMatchObject({ secure: false, name: 'sso.sid' });
    ssoSession(options);
    expect(warn.mock.calls.length).toBeLessThanOrEqual(1);
    warn.mockRestore();
  });

  it('refuses allowInsecureLocalDevelopment when NODE_ENV=production', () => {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      expect(() =>
        ssoSession({
          ...base,
          cookieDomain: 'sso.localhost',
          loginUrl: 'http://auth.sso.localhost/login',
          allowInsecureLocalDevelopment: true,
        }),
      ).toThrow(/ssoSession: allowInsecureLocalDevelopment is refused when NODE_ENV=production/);
    } finally {
      process.env.NODE_ENV = previous;
    }
  });

  it("does not mutate the caller's options", () => {
    const secrets = [TEST_SECRET];
    const options = Object.freeze({
      ...base,
      secret: Object.freeze(secrets),
      allowedRedirectOrigins: Object.freeze(['https://partner.example.net']),
    });
    expect(() => ssoSession(options as SsoSessionOptions)).not.toThrow();
    expect(secrets).toEqual([TEST_SECRET]);
  });

  it('exposes the context: defaults, cookie settings and a named middleware', () => {
    const sso = ssoSession(base);
    expect(sso.name).toBe('ssoSessionMiddleware');
    expect(sso.context).toMatchObject({
      loginUrl: 'https://auth.example.test/login',
      idleTimeoutSeconds: 1800,
      absoluteLifetimeSeconds: 43200,
      cookie: { name: '__Secure-sso.sid', domain: 'example.test', path: '/', httpOnly: true, secure: true, sameSite: 'lax' },
    });
    expect(sso.context.redirects.defaultUrl).toBe('https://auth.example.test/');
  });
});
