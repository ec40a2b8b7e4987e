import express, { type Express } from 'express';
import request from 'supertest';
import { errorHandler, securityHeaders } from '../../lib/http';
import { loginPortal, type LoginPortalOptions } from '../../lib/portal/login-portal';
import { hashPassword } from '../../lib/portal/password-hash';
import { fileUserDirectory, type UserDirectory } from '../../lib/portal/user-directory';
import { requireSession, ssoSession } from '../../lib/session';
import { RedisStore, type KeyValueStore } from '../../lib/store';
import { setCookieLine, setCookieValue } from '../helpers/cookies';
import { expectProblem } from '../helpers/problem';
import { startPrivateRedis, testRedisStore } from '../helpers/redis';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const SHOP = 'https://shop.example.test/cart?item=1';
const FAST = { N: 1024, r: 8, p: 1 };
const SECRET = 'portal-test-secret-0123456789-abcdefghij';

let users: UserDirectory;

beforeAll(async () => {
  users = fileUserDirectory([
    { id: 'alice', username: 'alice', name: 'Alice', roles: ['admin'], passwordHash: await hashPassword('alice-password', FAST) },
    { id: 'bob', username: 'bob', name: 'Bob', roles: [], passwordHash: await hashPassword('bob-password', FAST) },
    {
      id: 'mallory',
      username: 'mallory',
      name: 'Mallory',
      roles: [],
      passwordHash: await hashPassword('mallory-password', FAST),
      disabled: true,
    },
  ]);
});

function buildApp(store: KeyValueStore, portal: Partial<LoginPortalOptions> = {}): Express {
  const app = express();
  app.set('trust proxy', true);
  app.use(securityHeaders());
  app.use(ssoSession({ store, cookieDomain: 'example.test', secret: SECRET, loginUrl: `${AUTH_ORIGIN}/login` }));
  app.use(
    loginPortal({
      users,
      store,
      providers: [{ href: '/login/demo', label: 'Sign in with Demo IdP' }],
      qrLogin: { href: '/login/qr', label: 'Scan a QR code' },
      ...portal,
    }),
  );
  app.get('/whoami', requireSession(), (req, res) => {
    res.json({ id: req.user!.id, source: req.user!.source, subject: req.user!.subject, method: req.user!.method });
  });
  app.use(errorHandler({ log: false }));
  return app;
}

/** A request as a browser on the portal's own origin (behind a TLS proxy) would send it. */
function fromPortal(test: request.Test, userAgent = 'Browser A'): request.Test {
  return test
    .set('Host', AUTH)
    .set('X-Forwarded-Proto', 'https')
    .set('Origin', AUTH_ORIGIN)
    .set('User-Agent', userAgent)
    .set('X-Forwarded-For', '203.0.113.5');
}

async function login(app: Express, username: string, password: string, returnTo = '', userAgent = 'Browser A', cookie?: string) {
  const test = fromPortal(request(app).post('/login'), userAgent).type('form');
  if (cookie) test.set('Cookie', cookie);
  return test.send({ username, password, return_to: returnTo });
}

describe('loginPortal', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let app: Express;

  beforeAll(async () => {
    redis = await testRedisStore('portal');
    app = buildApp(redis.store);
  });
  afterAll(async () => {
    await redis.cleanup();
  });

  describe('GET /login', () => {
    it('serves an accessible form under a strict CSP with no inline script or style', async () => {
      const res = await fromPortal(request(app).get('/login'));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-store');
      const csp = res.headers['content-security-policy'] as string;
      expect(csp).toMatch(/script-src 'self'/);
      expect(csp).not.toContain('unsafe-inline');
      expect(res.text).toContain('<html lang="en">');
      expect(res.text).toContain('<label for="username">');
      expect(res.text).toContain('href="/login/demo">Sign in with Demo IdP</a>');
      expect(res.text).toContain('href="/login/qr">Scan a QR code</a>');
    });

    it('sends same-origin referrers, so browsers put a real Origin (not "null") on the form post the CSRF check reads', async () => {
      const res = await fromPortal(request(app).get('/login'));
      expect(res.headers['referrer-policy']).toBe('same-origin');
    });

    it('serves its stylesheet and script as files', async () => {
      const css = await fromPortal(request(app).get('/portal-assets/portal.css'));
      expect(css.status).toBe(200);
      expect(css.headers['content-type']).toMatch(/^text\/css/);
      expect(css.text).toContain(':focus-visible');
      const js = await fromPortal(request(app).get('/portal-assets/portal.js'));
      expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    });

    it('carries a safe return_to in the hidden field and the provider links, and allows the form to redirect there', async () => {
      const res = await fromPortal(request(app).get('/login').query({ return_to: SHOP }));
      expect(res.text).toContain(`name="return_to" value="${SHOP.replace('&', '&#38;')}"`);
      expect(res.text).toContain(`href="/login/demo?return_to=${encodeURIComponent(SHOP)}"`);
      expect(res.headers['content-security-policy']).toMatch(/form-action 'self' https:\/\/shop\.example\.test(;|$)/);
    });

    it('sends a visitor who is already signed in straight to a safe return_to (single sign-on)', async () => {
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), 'sso.sid')!;
      const res = await fromPortal(request(app).get('/login').query({ return_to: SHOP })).set('Cookie', cookie);
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(SHOP);
      const unsafe = await fromPortal(request(app).get('/login').query({ return_to: 'https://evil.test/' })).set('Cookie', cookie);
      expect(unsafe.status).toBe(200);
    });

    it.each(['https://evil.test/', '//evil.test/x', 'javascript:alert(1)', 'https://example.test@evil.test/'])(
      'drops the unsafe return_to %s and does not widen form-action for it',
      async (target) => {
        const res = await fromPortal(request(app).get('/login').query({ return_to: target }));
        expect(res.text).toContain('name="return_to" value=""');
        expect(res.text).not.toContain('evil');
        expect(res.headers['content-security-policy']).not.toContain('evil');
      },
    );
  });

  describe('POST /login', () => {
    it('logs in with the right password: 302 to return_to, shared Secure HttpOnly SameSite=Lax cookie, method password', async () => {
      const res = await login(app, 'alice', 'alice-password', SHOP);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(SHOP);
      const line = setCookieLine(res, 'sso.sid')!;
      expect(line).toMatch(/Domain=example\.test/i);
      expect(line).toMatch(/HttpOnly/i);
      expect(line).toMatch(/Secure/i);
      expect(line).toMatch(/SameSite=Lax/i);
      const me = await fromPortal(request(app).get('/whoami')).set('Cookie', setCookieValue(res, 'sso.sid')!);
      expect(me.body).toEqual({ id: 'directory:local|alice', source: 'directory:local', subject: 'alice', method: 'password' });
    });

    it("logs a directory's users in as identities of the directory's source", async () => {
      const staff = buildApp(redis.store, { users: { ...users, source: 'directory:staff' }, throttle: { namespace: 'staff' } });
      const res = await login(staff, 'alice', 'alice-password');
      const me = await fromPortal(request(staff).get('/whoami')).set('Cookie', setCookieValue(res, 'sso.sid')!);
      expect(me.body).toEqual({ id: 'directory:staff|alice', source: 'directory:staff', subject: 'alice', method: 'password' });
    });

    it('issues a new session id at login, so a planted session id is worthless', async () => {
      const first = setCookieValue(await login(app, 'bob', 'bob-password'), 'sso.sid')!;
      const second = await login(app, 'alice', 'alice-password', '', 'Browser A', first);
      expect(setCookieValue(second, 'sso.sid')).not.toBe(first);
      const old = await fromPortal(request(app).get('/whoami')).set('Cookie', first);
      expectProblem(old, 401, 'session_required');
    });

    it('sends an unsafe return_to to the default page instead', async () => {
      const res = await login(app, 'alice', 'alice-password', 'https://evil.test/steal');
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`${AUTH_ORIGIN}/`);
    });

    it('answers wrong password, unknown user and disabled account with the same 401 page and no cookie', async () => {
      const pages = [];
      for (const [username, password] of [
        ['alice', 'nope'],
        ['nobody', 'alice-password'],
        ['mallory', 'mallory-password'],
      ] as const) {
        const res = await login(app, username, password, SHOP, `Browser ${username}`);
        expect(res.status).toBe(401);
        expect(setCookieValue(res, 'sso.sid')).toBeUndefined();
        expect(res.text).toContain('<p class="alert" role="alert" id="login-error">Wrong username or password</p>');
        expect(res.text).not.toContain(password);
        pages.push(res.text.replace(`value="${username}"`, 'value="?"'));
      }
      expect(new Set(pages).size).toBe(1);
    });

    it('refuses a form without username or password with 400 and changes nothing', async () => {
      const res = await fromPortal(request(app).post('/login')).type('form').send({ username: 'alice' });
      expect(res.status).toBe(400);
      expect(res.text).toContain('role="alert"');
      expect(setCookieValue(res, 'sso.sid')).toBeUndefined();
    });

    it('refuses a login posted from another origin (login CSRF) with 403, even without cookies', async () => {
      const res = await request(app)
        .post('/login')
        .set('Host', AUTH)
        .set('X-Forwarded-Proto', 'https')
        .set('Origin', 'https://evil.test')
        .type('form')
        .send({ username: 'alice', password: 'alice-password' });
      expectProblem(res, 403, 'csrf_origin');
      expect(setCookieValue(res, 'sso.sid')).toBeUndefined();
    });

    it('refuses a login that carries neither Origin nor Referer', async () => {
      const res = await request(app)
        .post('/login')
        .set('Host', AUTH)
        .set('X-Forwarded-Proto', 'https')
        .type('form')
        .send({ username: 'alice', password: 'alice-password' });
      expectProblem(res, 403, 'csrf_origin');
    });
  });

  describe('brute-force throttling', () => {
    it('answers 429 with Retry-After once an account has failed 5 times, even for the right password', async () => {
      const throttled = buildApp(redis.store, { throttle: { namespace: 'throttle-a' } });
      for (let i = 0; i < 5; i += 1) expect((await login(throttled, 'bob', `guess-${i}`)).status).toBe(401);
      const res = await login(throttled, 'bob', 'bob-password');
      expect(res.status).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(800);
      expect(res.text).toContain('role="alert"');
      expect(res.text).toMatch(/Too many failed attempts/);
      expect(setCookieValue(res, 'sso.sid')).toBeUndefined();
    });

    it('throttles unknown usernames exactly like known ones', async () => {
      const throttled = buildApp(redis.store, { throttle: { namespace: 'throttle-b' } });
      for (let i = 0; i < 5; i += 1) await login(throttled, 'ghost', `guess-${i}`);
      expect((await login(throttled, 'ghost', 'x')).status).toBe(429);
    });

    it('throttles one IP guessing across many accounts', async () => {
      const throttled = buildApp(redis.store, { throttle: { namespace: 'throttle-c', perIp: { failures: 3, windowSeconds: 60 } } });
      for (const name of ['u1', 'u2', 'u3']) await login(throttled, name, 'x');
      const res = await login(throttled, 'alice', 'alice-password');
      expect(res.status).toBe(429);
    });
  });

  describe('POST /logout', () => {
    it('ends the session on every app of the domain and returns to the login page', async () => {
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), 'sso.sid')!;
      const res = await fromPortal(request(app).post('/logout')).set('Cookie', cookie);
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe('/login');
      expect(setCookieLine(res, 'sso.sid')).toMatch(/Domain=example\.test.*Expires=Thu, 01 Jan 1970/i);
      expectProblem(await fromPortal(request(app).get('/whoami')).set('Cookie', cookie), 401);
    });

    it('refuses a logout posted from another site', async () => {
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), 'sso.sid')!;
      const res = await fromPortal(request(app).post('/logout')).set('Origin', 'https://evil.test').set('Cookie', cookie);
      expectProblem(res, 403, 'csrf_origin');
      expect((await fromPortal(request(app).get('/whoami')).set('Cookie', cookie)).status).toBe(200);
    });
  });

  describe('GET /sessions and POST /sessions/revocations', () => {
    it("lists the user's browsers with the current one marked, and revokes another one", async () => {
      const fresh = buildApp(redis.store, { throttle: { namespace: 'sessions' } });
      const mine = setCookieValue(await login(fresh, 'bob', 'bob-password', '', 'Phone Browser'), 'sso.sid')!;
      const other = setCookieValue(await login(fresh, 'bob', 'bob-password', '', 'Laptop Browser'), 'sso.sid')!;
      const page = await fromPortal(request(fresh).get('/sessions'), 'Phone Browser').set('Cookie', mine);
      expect(page.status).toBe(200);
      expect(page.text).toContain('Phone Browser <strong class="badge">This browser</strong>');
      expect(page.text).toContain('Laptop Browser');
      const handles = [...page.text.matchAll(/name="session" value="([^"]+)"/g)].map((m) => m[1]!);
      expect(handles.length).toBeGreaterThanOrEqual(2);
      const laptopRow = page.text.split('<tr').find((row) => row.includes('Laptop Browser'))!;
      const laptopHandle = /name="session" value="([^"]+)"/.exec(laptopRow)![1]!;

      const revoke = await fromPortal(request(fresh).post('/sessions/revocations'), 'Phone Browser')
        .set('Cookie', mine)
        .type('form')
        .send({ session: laptopHandle });
      expect(revoke.status).toBe(303);
      expect(revoke.headers.location).toBe('/sessions?revoked=1');
      expectProblem(await fromPortal(request(fresh).get('/whoami')).set('Cookie', other), 401);
      expect((await fromPortal(request(fresh).get('/whoami')).set('Cookie', mine)).status).toBe(200);
    });

    it('sends a visitor without a login to the login page, coming back afterwards', async () => {
      const res = await fromPortal(request(app).get('/sessions'));
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(`/login?return_to=${encodeURIComponent(`${AUTH_ORIGIN}/sessions`)}`);
    });

    it('refuses a revocation posted from another site', async () => {
      const cookie = setCookieValue(await login(app, 'bob', 'bob-password'), 'sso.sid')!;
      const res = await fromPortal(request(app).post('/sessions/revocations'))
        .set('Origin', 'https://evil.test')
        .set('Cookie', cookie)
        .type('form')
        .send({ session: 'x' });
      expectProblem(res, 403, 'csrf_origin');
    });
  });

  describe('when Redis is down', () => {
    it('fails closed with 503 and Retry-After instead of checking the password', async () => {
      const privateRedis = await startPrivateRedis();
      // ioredis arms a 2 s timer on disconnect that a socket closed by the outage never clears; keep it short so the
      // test leaves nothing running.
      const store = new RedisStore({ url: privateRedis.url, redisOptions: { disconnectTimeout: 10 } }, { prefix: 'portal-outage:' });
      const outageApp = buildApp(store);
      try {
        await privateRedis.stop();
        const res = await login(outageApp, 'alice', 'alice-password');
        expectProblem(res, 503);
        expect(res.headers['retry-after']).toBeDefined();
        expect(setCookieValue(res, 'sso.sid')).toBeUndefined();
      } finally {
        await store.close();
      }
    });
  });
});

describe('loginPortal options', () => {
  const store = { get: async () => null, increment: async () => 1 } as unknown as KeyValueStore;
  it('detects app.use(loginPortal) written for app.use(loginPortal(options))', () => {
    const fake = { socket: {}, method: 'GET', headers: {} };
    expect(() => (loginPortal as unknown as (...args: unknown[]) => unknown)(fake, {}, () => undefined)).toThrow(/it is a factory/);
  });
  it.each([
    ['no users', {}, /users must be a UserDirectory/],
    ['an unknown option', { usrs: {} }, /unknown option "usrs"/],
    ['a provider link without label', { providers: [{ href: '/login/x' }] }, /providers\[0\] must be/],
    ['a protocol-relative link', { providers: [{ href: '//evil.test', label: 'x' }] }, /href must be a path/],
    ['a throttle of zero', { throttle: { perAccount: { failures: 0, windowSeconds: 1 } } }, /perAccount must be/],
    ['an allowed origin with a path', { allowedOrigins: ['https://admin.example.test/x'] }, /allowedOrigins must list full origins/],
    [
      'a directory source without a kind',
      { users: { source: 'staff', verifyPassword: async () => null, findById: async () => null } },
      /users\.source must be "<kind>:<name>"/,
    ],
  ])('rejects %s when called', (_label, extra, message) => {
    const options = { users: { verifyPassword: async () => null, findById: async () => null }, store, ...extra };
    if (_label === 'no users') delete (options as Partial<typeof options>).users;
    expect(() => loginPortal(options as LoginPortalOptions)).toThrow(message);
  });
  it("does not change the caller's options", () => {
    const options = Object.freeze({
      users: Object.freeze({ verifyPassword: async () => null, findById: async () => null }),
      store,
      providers: Object.freeze([Object.freeze({ href: '/x', label: 'X' })]),
    });
    expect(() => loginPortal(options as unknown as LoginPortalOptions)).not.toThrow();
  });
});
