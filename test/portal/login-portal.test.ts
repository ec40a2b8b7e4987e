import { format } from 'node:util';
import createDebug from 'debug';
import express, { type Express } from 'express';
import request from 'supertest';
import { errorHandler, securityHeaders } from '../../lib/http';
import express4 from 'express4';
import { DEVICE_COOKIE } from '../../lib/portal/throttle/device-cookie';
import { loginPortal, type LoginPortalOptions } from '../../lib/portal/login-portal';
import { fileUserDirectory, type UserDirectory } from '../../lib/portal/user-directory';
import { debugChannel } from '../../lib/util/debug';
import { OptionsError } from '../../lib/util/options';
import { hashPassword } from '../../lib/util/password-hash';
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

function buildApp(store: KeyValueStore, portal: Partial<LoginPortalOptions> = {}, createApp: () => Express = express): Express {
  const app = createApp();
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

function login(app: Express, username: string, password: string, returnTo = '', userAgent = 'Browser A', cookie?: string): request.Test {
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
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), '__Secure-sso.sid')!;
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
      const line = setCookieLine(res, '__Secure-sso.sid')!;
      expect(line).toMatch(/Domain=example\.test/i);
      expect(line).toMatch(/HttpOnly/i);
      expect(line).toMatch(/Secure/i);
      expect(line).toMatch(/SameSite=Lax/i);
      const me = await fromPortal(request(app).get('/whoami')).set('Cookie', setCookieValue(res, '__Secure-sso.sid')!);
      expect(me.body).toEqual({ id: 'directory:local|alice', source: 'directory:local', subject: 'alice', method: 'password' });
    });

    it("logs a directory's users in as identities of the directory's source", async () => {
      const staff = buildApp(redis.store, { users: { ...users, source: 'directory:staff' }, throttle: { namespace: 'staff' } });
      const res = await login(staff, 'alice', 'alice-password');
      const me = await fromPortal(request(staff).get('/whoami')).set('Cookie', setCookieValue(res, '__Secure-sso.sid')!);
      expect(me.body).toEqual({ id: 'directory:staff|alice', source: 'directory:staff', subject: 'alice', method: 'password' });
    });

    it('issues a new session id at login, so a planted session id is worthless', async () => {
      const first = setCookieValue(await login(app, 'bob', 'bob-password'), '__Secure-sso.sid')!;
      const second = await login(app, 'alice', 'alice-password', '', 'Browser A', first);
      expect(setCookieValue(second, '__Secure-sso.sid')).not.toBe(first);
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
        expect(setCookieValue(res, '__Secure-sso.sid')).toBeUndefined();
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
      expect(setCookieValue(res, '__Secure-sso.sid')).toBeUndefined();
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
      expect(setCookieValue(res, '__Secure-sso.sid')).toBeUndefined();
    });

    it('takes its own origin from the Host it was routed by: a forged X-Forwarded-Host naming the sender changes nothing', async () => {
      const res = await request(app)
        .post('/login')
        .set('Host', AUTH)
        .set('X-Forwarded-Proto', 'https')
        .set('X-Forwarded-Host', 'evil.test')
        .set('Origin', 'https://evil.test')
        .type('form')
        .send({ username: 'alice', password: 'alice-password' });
      expectProblem(res, 403, 'csrf_origin');
      expect(setCookieValue(res, '__Secure-sso.sid')).toBeUndefined();
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

  describe('guessing throttle', () => {
    // A whole hour, so every window starts here and Retry-After is exact.
    const START = Date.UTC(2031, 0, 1, 12);
    let run = 0;
    function throttledApp(throttle: LoginPortalOptions['throttle'] = {}): Express {
      run += 1;
      return buildApp(redis.store, { throttle: { namespace: `throttle-${run}`, clock: () => START, ...throttle } });
    }

    it('answers 429 with Retry-After and the login page once a new browser has failed 5 times, even for the right password', async () => {
      const throttled = throttledApp();
      for (let i = 0; i < 5; i += 1) expect((await login(throttled, 'bob', `guess-${i}`)).status).toBe(401);
      const res = await login(throttled, 'bob', 'bob-password');
      expect(res.status).toBe(429);
      expect(res.headers['retry-after']).toBe('900');
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('<p class="alert" role="alert" id="login-error">Too many failed attempts. Try again in 15 minutes.</p>');
      expect(setCookieValue(res, '__Secure-sso.sid')).toBeUndefined();
      expect(setCookieValue(res, DEVICE_COOKIE)).toBeUndefined();
    });

    it('answers a throttled unknown username exactly as a throttled known one', async () => {
      const throttled = throttledApp();
      const answers = [];
      for (const username of ['bob', 'ghost']) {
        for (let i = 0; i < 5; i += 1) await login(throttled, username, `guess-${i}`);
        const res = await login(throttled, username, 'x');
        const { date: _date, 'content-length': _length, etag: _etag, ...headers } = res.headers;
        answers.push({ status: res.status, headers, page: res.text.replace(`value="${username}"`, '') });
      }
      expect(answers[0]!.status).toBe(429);
      expect(answers[1]).toEqual(answers[0]);
    });

    it('throttles one network guessing across many accounts', async () => {
      const throttled = throttledApp({ perNetwork: { failures: 3, windowSeconds: 60 } });
      for (const name of ['u1', 'u2', 'u3']) await login(throttled, name, 'x');
      expect((await login(throttled, 'alice', 'alice-password')).status).toBe(429);
    });

    it('gives a browser that signs in a device cookie: HttpOnly, Secure, SameSite=Lax, host-only, on the login path', async () => {
      const res = await login(throttledApp(), 'alice', 'alice-password');
      expect(res.status).toBe(302);
      const line = setCookieLine(res, DEVICE_COOKIE)!;
      expect(line).toMatch(/^sso\.device=d1\.[A-Za-z0-9_-]{22}\.\d+\.[A-Za-z0-9_-]{43};/);
      expect(line).toMatch(/; HttpOnly(;|$)/i);
      expect(line).toMatch(/; Secure(;|$)/i);
      expect(line).toMatch(/; SameSite=Lax(;|$)/i);
      expect(line).toMatch(/; Path=\/login(;|$)/);
      expect(line).toMatch(/; Max-Age=2592000(;|$)/);
      expect(line).not.toMatch(/Domain=/i);
    });

    it('lets the browser that signed in before past the account limit that strangers exhausted', async () => {
      const throttled = throttledApp({ perAccount: { failures: 3, windowSeconds: 3600 } });
      const device = setCookieValue(await login(throttled, 'alice', 'alice-password'), DEVICE_COOKIE)!;
      for (let i = 0; i < 6; i += 1) await login(throttled, 'alice', `guess-${i}`).set('X-Forwarded-For', `198.51.100.${i}`);
      expect((await login(throttled, 'alice', 'alice-password')).status).toBe(429);
      const known = await login(throttled, 'alice', 'alice-password', '', 'Browser A', device);
      expect(known.status).toBe(302);
      expect(setCookieValue(known, DEVICE_COOKIE)).not.toBe(device);
    });

    it('ignores a device cookie sent twice with different values', async () => {
      const throttled = throttledApp({ perAccount: { failures: 1, windowSeconds: 3600 } });
      const device = setCookieValue(await login(throttled, 'alice', 'alice-password'), DEVICE_COOKIE)!;
      await login(throttled, 'alice', 'guess').set('X-Forwarded-For', '198.51.100.1');
      const twice = `${device}; ${DEVICE_COOKIE}=planted`;
      expect((await login(throttled, 'alice', 'alice-password', '', 'Browser A', twice)).status).toBe(429);
      expect((await login(throttled, 'alice', 'alice-password', '', 'Browser A', device)).status).toBe(302);
    });
  });

  describe('the portal debug channel', () => {
    it('says why a login was refused or throttled, and never carries the password, the username or the device cookie', async () => {
      const lines: string[] = [];
      const channel = debugChannel('portal') as unknown as { log?: (...args: unknown[]) => void };
      const previous = createDebug.disable();
      createDebug.enable('express-sso-kit:portal');
      channel.log = (...args: unknown[]) => lines.push(format(...args));
      let device: string | undefined;
      try {
        const throttled = buildApp(redis.store, {
          throttle: { namespace: 'debug', perAccountAndNetwork: { failures: 1, windowSeconds: 60 } },
        });
        device = setCookieValue(await login(throttled, 'bob', 'bob-password'), DEVICE_COOKIE)!;
        await login(throttled, 'secret-username', 'hunter2-secret');
        await login(throttled, 'secret-username', 'hunter2-secret');
        await login(throttled, 'secret-username', 'hunter2-secret', '', 'Browser A', device);
        await login(throttled, 'secret-username', 'hunter2-secret').set('Origin', 'https://evil.test');
      } finally {
        createDebug.disable();
        if (previous) createDebug.enable(previous);
        delete channel.log;
      }
      const text = lines.join('\n');
      expect(text).toMatch(/refused a password login from a new browser: wrong password, or no such enabled user/);
      expect(text).toMatch(/refused a login from ipv4:203\.0\.113\.5: the account-and-network limit of 1 failures per 60 s is reached/);
      expect(text).toMatch(/no device token of this account among 1 presented \(bad-signature\)/);
      expect(text).toMatch(/refused POST \/login: origin-not-allowed \(origin https:\/\/evil\.test\)/);
      for (const secret of ['hunter2-secret', 'secret-username', device!.split('=')[1]!, 'bob-password'])
        expect(text).not.toContain(secret);
    });
  });

  describe('POST /logout', () => {
    it('ends the session on every app of the domain and returns to the login page', async () => {
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), '__Secure-sso.sid')!;
      const res = await fromPortal(request(app).post('/logout')).set('Cookie', cookie);
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe('/login');
      expect(setCookieLine(res, '__Secure-sso.sid')).toMatch(/Domain=example\.test.*Expires=Thu, 01 Jan 1970/i);
      expectProblem(await fromPortal(request(app).get('/whoami')).set('Cookie', cookie), 401);
    });

    it('signs only this browser out by default, and every browser of the user with scope=everywhere', async () => {
      const fresh = buildApp(redis.store, { throttle: { namespace: 'sign-out-everywhere' } });
      const phone = setCookieValue(await login(fresh, 'alice', 'alice-password', '', 'Phone'), '__Secure-sso.sid')!;
      const laptop = setCookieValue(await login(fresh, 'alice', 'alice-password', '', 'Laptop'), '__Secure-sso.sid')!;
      const tablet = setCookieValue(await login(fresh, 'alice', 'alice-password', '', 'Tablet'), '__Secure-sso.sid')!;
      const bob = setCookieValue(await login(fresh, 'bob', 'bob-password', '', 'Bob'), '__Secure-sso.sid')!;
      const whoami = (cookie: string) => fromPortal(request(fresh).get('/whoami')).set('Cookie', cookie);

      expect((await fromPortal(request(fresh).post('/logout')).set('Cookie', tablet).type('form').send({})).status).toBe(303);
      expect((await whoami(tablet)).status).toBe(401);
      expect((await whoami(phone)).status).toBe(200);

      const everywhere = await fromPortal(request(fresh).post('/logout')).set('Cookie', laptop).type('form').send({ scope: 'everywhere' });
      expect(everywhere.status).toBe(303);
      expect(everywhere.headers.location).toBe('/login');
      expect(setCookieLine(everywhere, '__Secure-sso.sid')).toMatch(/Expires=Thu, 01 Jan 1970/i);
      for (const cookie of [laptop, phone]) expectProblem(await whoami(cookie), 401);
      // Another user's sessions are not touched.
      expect((await whoami(bob)).status).toBe(200);
    });

    it("goes on to the identity provider's end-session page when the session signed in through one", async () => {
      const seeded = buildApp(redis.store, { throttle: { namespace: 'upstream-logout' } });
      // What oidc()'s callback keeps in the session after a login through a provider offering RP-initiated logout.
      seeded.post('/test/oidc-login', (req, res) => {
        req.session.oidc = {
          provider: 'corp',
          issuer: 'https://idp.example.test',
          idToken: 'header.payload.signature',
          endSessionUrl: 'https://idp.example.test/session/end?client_id=portal',
        };
        req.session.save(() => res.sendStatus(204));
      });
      for (const scope of ['browser', 'everywhere']) {
        const cookie = setCookieValue(await login(seeded, 'alice', 'alice-password'), '__Secure-sso.sid')!;
        expect((await fromPortal(request(seeded).post('/test/oidc-login')).set('Cookie', cookie)).status).toBe(204);
        // The sessions page allows the provider's origin as a form target: its sign-out forms redirect there.
        const page = await fromPortal(request(seeded).get('/sessions')).set('Cookie', cookie);
        expect(page.headers['content-security-policy']).toMatch(/form-action 'self' https:\/\/idp\.example\.test(;|$)/);
        const out = await fromPortal(request(seeded).post('/logout')).set('Cookie', cookie).type('form').send({ scope });
        expect(out.status).toBe(303);
        expect(out.headers.location).toBe('https://idp.example.test/session/end?client_id=portal&id_token_hint=header.payload.signature');
        expectProblem(await fromPortal(request(seeded).get('/whoami')).set('Cookie', cookie), 401);
      }
    });

    it('refuses an unknown scope with 400 and signs nobody out', async () => {
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), '__Secure-sso.sid')!;
      const res = await fromPortal(request(app).post('/logout')).set('Cookie', cookie).type('form').send({ scope: 'all' });
      expectProblem(res, 400, 'invalid_request');
      expect((await fromPortal(request(app).get('/whoami')).set('Cookie', cookie)).status).toBe(200);
    });

    it('offers both sign-outs on the sessions page', async () => {
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), '__Secure-sso.sid')!;
      const page = await fromPortal(request(app).get('/sessions')).set('Cookie', cookie);
      expect(page.text).toContain('>Sign out of this browser</button>');
      expect(page.text).toMatch(
        /<input type="hidden" name="scope" value="everywhere"><button type="submit" class="danger">Sign out everywhere<\/button>/,
      );
    });

    it('refuses a logout posted from another site', async () => {
      const cookie = setCookieValue(await login(app, 'alice', 'alice-password'), '__Secure-sso.sid')!;
      const res = await fromPortal(request(app).post('/logout')).set('Origin', 'https://evil.test').set('Cookie', cookie);
      expectProblem(res, 403, 'csrf_origin');
      expect((await fromPortal(request(app).get('/whoami')).set('Cookie', cookie)).status).toBe(200);
    });
  });

  describe('GET /sessions and POST /sessions/revocations', () => {
    it("lists the user's browsers with the current one marked, and revokes another one", async () => {
      const fresh = buildApp(redis.store, { throttle: { namespace: 'sessions' } });
      const mine = setCookieValue(await login(fresh, 'bob', 'bob-password', '', 'Phone Browser'), '__Secure-sso.sid')!;
      const other = setCookieValue(await login(fresh, 'bob', 'bob-password', '', 'Laptop Browser'), '__Secure-sso.sid')!;
      const page = await fromPortal(request(fresh).get('/sessions'), 'Phone Browser').set('Cookie', mine);
      expect(page.status).toBe(200);
      expect(page.text).toContain('<span class="device">Phone Browser</span> <strong class="badge">This browser</strong>');
      expect(page.text).toContain('Laptop Browser');
      const handles = [...page.text.matchAll(/name="session" value="([^"]+)"/g)].map((m) => m[1]!);
      expect(handles.length).toBeGreaterThanOrEqual(2);
      const laptopRow = page.text.split('<li').find((row) => row.includes('Laptop Browser'))!;
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

    it.each([
      ['Express 5', express],
      ['Express 4', express4 as unknown as () => Express],
    ])('keeps the port of the Host in the return_to on %s (the request origin, not req.host)', async (_label, createApp) => {
      const onPort = buildApp(redis.store, {}, createApp);
      const res = await request(onPort).get('/sessions').set('Host', `${AUTH}:8443`).set('X-Forwarded-Proto', 'https');
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(`/login?return_to=${encodeURIComponent(`${AUTH_ORIGIN}:8443/sessions`)}`);
      const post = await request(onPort)
        .post('/login')
        .set('Host', `${AUTH}:8443`)
        .set('X-Forwarded-Proto', 'https')
        .set('Origin', `${AUTH_ORIGIN}:8443`)
        .type('form')
        .send({ username: 'nobody', password: 'x' });
      expect(post.status).toBe(401);
      const crossPort = await request(onPort)
        .post('/login')
        .set('Host', `${AUTH}:8443`)
        .set('X-Forwarded-Proto', 'https')
        .set('Origin', AUTH_ORIGIN)
        .type('form')
        .send({ username: 'nobody', password: 'x' });
      expectProblem(crossPort, 403, 'csrf_origin');
    });

    it('refuses a revocation posted from another site', async () => {
      const cookie = setCookieValue(await login(app, 'bob', 'bob-password'), '__Secure-sso.sid')!;
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
        expect(setCookieValue(res, '__Secure-sso.sid')).toBeUndefined();
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
    ['no users', {}, /loginPortal: users is required/],
    ['a misspelled option', { provders: [] }, /loginPortal: unknown option "provders" \(did you mean "providers"\?\)/],
    ['a provider link without label', { providers: [{ href: '/login/x' }] }, /providers\[0\] must be/],
    ['a protocol-relative link', { providers: [{ href: '//evil.test', label: 'x' }] }, /href must be a path/],
    [
      'a throttle of zero',
      { throttle: { perAccount: { failures: 0, windowSeconds: 1 } } },
      /loginPortal throttle: perAccount: failures must be/,
    ],
    ['a misspelled throttle option', { throttle: { perIP: {} } }, /loginPortal throttle: unknown option "perIP"/],
    ['an allowed origin with a path', { allowedOrigins: ['https://admin.example.test/x'] }, /allowedOrigins must list full origins/],
    ['an empty title', { title: ' ' }, /loginPortal: title must not be empty/],
    ['an assets path with a dot', { assetsPath: '/../x' }, /loginPortal: assetsPath must be a path like/],
    [
      'a directory source without a kind',
      { users: { source: 'staff', verifyPassword: async () => null, findById: async () => null } },
      /users\.source must be "<kind>:<name>"/,
    ],
  ])('rejects %s when called, with an OptionsError', (_label, extra, message) => {
    const options = { users: { verifyPassword: async () => null, findById: async () => null }, store, ...extra };
    if (_label === 'no users') delete (options as Partial<typeof options>).users;
    expect(() => loginPortal(options as LoginPortalOptions)).toThrow(message);
    expect(() => loginPortal(options as LoginPortalOptions)).toThrow(OptionsError);
  });
  it("does not change the caller's options", () => {
    const options = Object.freeze({
      users: Object.freeze({ verifyPassword: async () => null, findById: async () => null }),
      store,
      providers: Object.freeze([Object.freeze({ href: '/x', label: 'X' })]),
      throttle: Object.freeze({ perAccount: Object.freeze({ failures: 3, windowSeconds: 60 }) }),
    });
    expect(() => loginPortal(options as unknown as LoginPortalOptions)).not.toThrow();
  });
});
