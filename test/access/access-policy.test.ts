import express from 'express';
import request from 'supertest';
import { accessPolicy, type AccessPolicyOptions, type AccessRule } from '../../lib/access';
import { errorHandler } from '../../lib/http';
import { createPolicy } from '../../lib/rbac';
import { establishLogin, requireSession, ssoSession } from '../../lib/session';
import { requirePermission } from '../../lib/rbac';
import { expectProblem } from '../helpers/problem';
import { listening, rawHttp } from '../helpers/raw-http';
import { testRedisStore } from '../helpers/redis';
import { LOGIN_URL, TEST_SECRET } from '../helpers/sso-apps';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml';

// The rules of docs/strong-auth.md ("Policy in one place"), as a reader copies them.
const DOCS_RULES: AccessRule[] = [
  { path: ['/assets', '/logout'], policy: 'bypass' },
  { domain: 'admin.example.test', path: '/audit', policy: 'two_factor', maxAgeSeconds: 900 },
  { domain: 'admin.example.test', policy: 'two_factor' },
  { domain: 'shop.example.test', policy: 'one_factor' },
  { domain: 'auth.example.test', path: '/sessions/revocations', methods: ['POST'], policy: 'two_factor', maxAgeSeconds: 300 },
  { domain: 'auth.example.test', policy: 'bypass' },
];

interface LoginBody {
  amr: string[];
  ageSeconds?: number;
  roles?: string[];
  subject?: string;
}

describe('accessPolicy', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  beforeAll(async () => {
    redis = await testRedisStore('access');
  });
  afterAll(() => redis.cleanup());

  /** An app with a login route, `accessPolicy(options)`, then `routes` and a catch-all that says who got through. */
  function appWith(
    options: AccessPolicyOptions,
    routes: (app: express.Express) => void = () => undefined,
    settings: Record<string, unknown> = {},
  ) {
    // Built at the first request, once beforeAll has connected the store.
    let built: express.Express | undefined;
    const app = (): express.Express => (built ??= build());
    const build = (): express.Express => {
      const app = express();
      app.set('trust proxy', 'loopback');
      for (const [name, value] of Object.entries(settings)) app.set(name, value);
      app.use(express.json());
      app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: TEST_SECRET, loginUrl: LOGIN_URL }));
      app.post('/login', async (req, res) => {
        const { amr, ageSeconds = 0, roles = [], subject = 'alice' } = req.body as LoginBody;
        await establishLogin(req, {
          source: 'test:users',
          subject,
          name: subject,
          roles,
          method: 'password',
          authentication: { amr, authTime: Math.floor(Date.now() / 1000) - ageSeconds },
        });
        res.status(204).end();
      });
      app.use(accessPolicy(options));
      routes(app);
      // After the routes, for every method and path, on Express 4 and 5 alike.
      app.use((req, res) => res.json({ user: req.user?.id ?? null, route: 'catch-all' }));
      app.use(errorHandler({ log: false }));
      return app;
    };
    const on = (host: string, method: 'get' | 'post' | 'head' | 'options' | 'delete', path: string, cookie?: string) => {
      const test = request(app())[method](path).set('Host', host).set('X-Forwarded-Proto', 'https');
      if (method === 'post' || method === 'delete') test.set('Origin', `https://${host}`);
      return cookie ? test.set('Cookie', cookie) : test;
    };
    const login = async (body: LoginBody): Promise<string> => {
      const res = await on('shop.example.test', 'post', '/login').send(body);
      return (res.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!;
    };
    return { app, on, login };
  }

  describe('first match wins, closed by default', () => {
    const { on, login } = appWith({
      rules: [
        { path: '/assets', policy: 'bypass' },
        { domain: 'shop.example.test', path: '/secret', policy: 'deny' },
        { domain: 'admin.example.test', policy: 'two_factor' },
        { domain: 'auth.example.test', path: '/sessions/revocations', methods: ['POST'], policy: 'two_factor', maxAgeSeconds: 300 },
        { domain: ['shop.example.test', 'auth.example.test'], policy: 'one_factor' },
      ],
    });

    it('lets bypass paths through without a login', async () => {
      expect((await on('shop.example.test', 'get', '/assets/app.css')).body).toEqual({ user: null, route: 'catch-all' });
    });

    it('needs a login on one_factor hosts: browsers to the login page, APIs 401', async () => {
      const page = await on('shop.example.test', 'get', '/cart').set('Accept', BROWSER_ACCEPT);
      expect(new URL(page.headers.location!).pathname).toBe('/login');
      expectProblem(await on('shop.example.test', 'get', '/cart').set('Accept', 'application/json'), 401, 'session_required');
      const cookie = await login({ amr: ['pwd'] });
      expect((await on('shop.example.test', 'get', '/cart', cookie)).body).toEqual({ user: 'test:users|alice', route: 'catch-all' });
    });

    it('applies the first matching rule: a deny before a broader one_factor wins', async () => {
      const cookie = await login({ amr: ['pwd', 'otp'] });
      expectProblem(await on('shop.example.test', 'get', '/secret/x', cookie), 403, 'access_denied');
      expect((await on('shop.example.test', 'get', '/secretary', cookie)).status).toBe(200);
    });

    it('needs two factors on two_factor hosts: one factor is sent to step-up, two pass', async () => {
      const one = await login({ amr: ['pwd'] });
      const page = await on('admin.example.test', 'get', '/', one).set('Accept', BROWSER_ACCEPT);
      expect(new URL(page.headers.location!).pathname).toBe('/step-up');
      expectProblem(
        await on('admin.example.test', 'get', '/', one).set('Accept', 'application/json'),
        401,
        'insufficient_user_authentication',
      );
      const two = await login({ amr: ['pwd', 'otp'] });
      expect((await on('admin.example.test', 'get', '/', two)).status).toBe(200);
    });

    it('matches methods: only POST on the revocation path needs a fresh second factor', async () => {
      const one = await login({ amr: ['pwd'] });
      expect((await on('auth.example.test', 'get', '/sessions/revocations', one)).status).toBe(200);
      const post = await on('auth.example.test', 'post', '/sessions/revocations', one).set('Accept', 'application/json');
      expectProblem(post, 401, 'insufficient_user_authentication');
      expect(post.headers['www-authenticate']).toContain('max_age=300');
    });

    it('is closed by default: a host no rule names is denied', async () => {
      const cookie = await login({ amr: ['pwd', 'otp'] });
      expectProblem(await on('other.example.test', 'get', '/', cookie), 403, 'access_denied');
    });
  });

  describe('with the rules of the docs, as the router reads the request', () => {
    const hits: string[] = [];
    const { app, on, login } = appWith({ rules: DOCS_RULES }, (app) => {
      app.get('/audit', (req, res) => {
        hits.push('audit');
        res.json({ user: req.user?.id ?? null, route: 'audit' });
      });
      app.get('/exports', (req, res) => res.json({ user: req.user?.id ?? null, route: 'exports' }));
      // A handler for every method of the path, as app.use and app.all mount them: OPTIONS reaches it too.
      app.all('/sessions/revocations', (req, res) => {
        hits.push(`revocations ${req.method}`);
        res.json({ user: req.user?.id ?? null, route: 'revocations' });
      });
    });
    beforeEach(() => hits.splice(0));

    it('reads GET /Audit as the router does: an hour-old second factor is sent to step up for the audit page', async () => {
      const old = await login({ amr: ['pwd', 'otp'], ageSeconds: 3600 });
      for (const path of ['/Audit', '/AUDIT/', '/audit']) {
        const res = await on('admin.example.test', 'get', path, old).set('Accept', 'application/json');
        expectProblem(res, 401, 'insufficient_user_authentication');
        expect(res.headers['www-authenticate']).toContain('max_age=900');
      }
      expect(hits).toEqual([]);
      // The same session opens the rest of admin, and a fresh one the audit page in any case.
      expect((await on('admin.example.test', 'get', '/reports', old)).status).toBe(200);
      const fresh = await login({ amr: ['pwd', 'otp'] });
      expect((await on('admin.example.test', 'get', '/Audit', fresh)).body).toEqual({ user: 'test:users|alice', route: 'audit' });
    });

    it('reads POST /Sessions/Revocations as the router does: one factor does not revoke', async () => {
      const one = await login({ amr: ['pwd'] });
      for (const path of ['/Sessions/Revocations', '/SESSIONS/revocations/']) {
        const res = await on('auth.example.test', 'post', path, one).set('Accept', 'application/json');
        expectProblem(res, 401, 'insufficient_user_authentication');
      }
      expect(hits).toEqual([]);
      const two = await login({ amr: ['pwd', 'otp'] });
      expect((await on('auth.example.test', 'post', '/Sessions/Revocations', two)).body.route).toBe('revocations');
    });

    it('refuses with 400 a path that reads as another rule’s once decoded, before any handler runs', async () => {
      const old = await login({ amr: ['pwd', 'otp'], ageSeconds: 3600 });
      for (const path of ['/%61udit', '/%41UDIT', '/x/../audit', '/x/%2e%2e/audit', '//audit', '/assets/..%2Faudit', '/audit%2F']) {
        expectProblem(await on('admin.example.test', 'get', path, old), 400, 'ambiguous_path');
      }
      // A back slash is a slash to browsers and many proxies: the same.
      const backslash = await raw(app(), 'GET /assets\\..\\audit HTTP/1.1', { Host: 'admin.example.test', Cookie: old });
      expect(backslash).toEqual({ status: 400, code: 'ambiguous_path' });
      expectProblem(await on('admin.example.test', 'get', '/%E0%A4%A', old), 400, 'malformed_uri');
      const one = await login({ amr: ['pwd'] });
      expectProblem(await on('auth.example.test', 'post', '/sessions/%72evocations', one), 400, 'ambiguous_path');
      expect(hits).toEqual([]);
    });

    it('lets through encoded paths that meet the same rule either way, and ; as the router reads it', async () => {
      const two = await login({ amr: ['pwd', 'otp'] });
      expect((await on('admin.example.test', 'get', '/reports/a%20b', two)).status).toBe(200);
      expect((await on('admin.example.test', 'get', '/reports/%2e%2e/x', two)).status).toBe(200);
      // `/audit;x` is not the audit route to Express (a parameter would read "audit;x"), and not the audit rule.
      const old = await login({ amr: ['pwd', 'otp'], ageSeconds: 3600 });
      expect((await on('admin.example.test', 'get', '/audit;x', old)).body).toEqual({ user: 'test:users|alice', route: 'catch-all' });
    });

    it('applies a GET rule to HEAD, whose answer Express takes from the GET route', async () => {
      const { on: onApi, login: loginApi } = appWith(
        { rules: [{ domain: 'api.example.test', path: '/exports', methods: ['GET'], policy: 'two_factor' }, { policy: 'one_factor' }] },
        (app) => app.get('/exports', (_req, res) => res.json({ route: 'exports' })),
      );
      const one = await loginApi({ amr: ['pwd'] });
      expect((await onApi('api.example.test', 'head', '/exports', one)).status).toBe(401);
      expect((await onApi('api.example.test', 'get', '/exports', one)).status).toBe(401);
      const two = await loginApi({ amr: ['pwd', 'otp'] });
      expect((await onApi('api.example.test', 'head', '/exports', two)).status).toBe(200);
    });

    it('checks OPTIONS against the strictest rule of its path, so it never reaches a guarded handler with less', async () => {
      const one = await login({ amr: ['pwd'] });
      expectProblem(await on('auth.example.test', 'options', '/sessions/revocations', one), 401, 'insufficient_user_authentication');
      expectProblem(await on('auth.example.test', 'options', '/Sessions/Revocations', one), 401, 'insufficient_user_authentication');
      // A CORS preflight with a cookie is no browser's preflight: checked the same.
      const withCookie = on('auth.example.test', 'options', '/sessions/revocations', one)
        .set('Origin', 'https://shop.example.test')
        .set('Access-Control-Request-Method', 'POST');
      expectProblem(await withCookie, 401, 'insufficient_user_authentication');
      expect(hits).toEqual([]);
      // A browser's preflight carries no credentials; it is the CORS layer's to answer (here the route's).
      const preflight = await on('auth.example.test', 'options', '/sessions/revocations')
        .set('Origin', 'https://shop.example.test')
        .set('Access-Control-Request-Method', 'POST');
      expect(preflight.body).toEqual({ user: null, route: 'revocations' });
      const fresh = await login({ amr: ['pwd', 'otp'] });
      expect((await on('auth.example.test', 'options', '/sessions/revocations', fresh)).status).toBe(200);
    });

    it('refuses a preflight to a path a deny rule closes', async () => {
      const { on: onClosed } = appWith({ rules: [{ path: '/closed', policy: 'deny' }], defaultPolicy: 'bypass' });
      const res = onClosed('shop.example.test', 'options', '/closed')
        .set('Origin', 'https://a.test')
        .set('Access-Control-Request-Method', 'GET');
      expectProblem(await res, 403, 'access_denied');
    });

    it('decides the domain on the host the request was routed by, never on X-Forwarded-Host', async () => {
      const one = await login({ amr: ['pwd'] });
      // The peer is loopback, which `trust proxy` trusts: the header a client sent through a proxy still counts for nothing.
      const forged = await on('admin.example.test', 'get', '/audit', one)
        .set('X-Forwarded-Host', 'auth.example.test')
        .set('Accept', 'application/json');
      expectProblem(forged, 401, 'insufficient_user_authentication');
      const page = await on('admin.example.test', 'get', '/reports', one)
        .set('X-Forwarded-Host', 'auth.example.test')
        .set('Accept', BROWSER_ACCEPT);
      expect(new URL(page.headers.location!).pathname).toBe('/step-up');
      expect(hits).toEqual([]);
    });

    it('refuses a request without a usable host (none, a trailing dot, another in the request line) with 400', async () => {
      const one = await login({ amr: ['pwd'] });
      expectProblem(await on('admin.example.test.', 'get', '/reports', one), 400, 'invalid_host');
      const absolute = await raw(app(), 'GET http://auth.example.test/reports HTTP/1.1', {
        Host: 'admin.example.test',
        Cookie: one,
      });
      expect(absolute).toEqual({ status: 400, code: 'invalid_host' });
      expect(await raw(app(), 'GET /reports HTTP/1.0', { Cookie: one })).toEqual({ status: 400, code: 'invalid_host' });
    });
  });

  describe('the router’s settings', () => {
    it('follows case sensitive routing: /AUDIT is then no address of the audit route, nor of its rule', async () => {
      const { on, login } = appWith({ rules: DOCS_RULES }, (app) => app.get('/audit', (_req, res) => res.json({ route: 'audit' })), {
        'case sensitive routing': true,
      });
      const old = await login({ amr: ['pwd', 'otp'], ageSeconds: 3600 });
      expect((await on('admin.example.test', 'get', '/AUDIT', old)).body).toEqual({ user: 'test:users|alice', route: 'catch-all' });
      expect((await on('admin.example.test', 'get', '/audit', old)).status).toBe(401);
    });

    it('follows strict routing for RegExp rules: /reports/ is the /reports route only without it', async () => {
      const rules: AccessRule[] = [{ path: /^\/reports$/, policy: 'two_factor' }, { policy: 'one_factor' }];
      const reports = (app: express.Express) => app.get('/reports', (_req, res) => res.json({ route: 'reports' }));
      const loose = appWith({ rules }, reports);
      const one = await loose.login({ amr: ['pwd'] });
      expect((await loose.on('shop.example.test', 'get', '/reports/', one)).status).toBe(401);
      const strict = appWith({ rules }, reports, { 'strict routing': true });
      expect((await strict.on('shop.example.test', 'get', '/reports/', one)).body.route).toBe('catch-all');
    });
  });

  describe('roles and permissions before factors', () => {
    const policy = createPolicy({ roles: { admin: { permissions: ['read:reports'] }, auditor: { permissions: [] } } });
    const { on, login } = appWith(
      {
        policy,
        rules: [
          { domain: 'admin.example.test', path: '/audit', policy: 'two_factor', maxAgeSeconds: 900, roles: ['admin', 'auditor'] },
          { domain: 'admin.example.test', policy: 'two_factor', permission: 'read:reports' },
          { policy: 'one_factor' },
        ],
      },
      (app) => {
        // A route that asks the permission itself before its own step-up: the same order at route level.
        app.post(
          '/payouts',
          requireSession(),
          requirePermission('read', 'reports', { policy }),
          requireSession({ acr: '2fa' }),
          (_req, res) => res.json({ route: 'payouts' }),
        );
      },
    );

    it('answers a signed-in user without the permission 403 at once, never a step-up', async () => {
      const bob = await login({ amr: ['pwd'], subject: 'bob' });
      for (const accept of [BROWSER_ACCEPT, 'application/json']) {
        expectProblem(await on('admin.example.test', 'get', '/', bob).set('Accept', accept), 403, 'permission_denied');
        expectProblem(await on('admin.example.test', 'get', '/audit', bob).set('Accept', accept), 403, 'permission_denied');
      }
      const auditor = await login({ amr: ['pwd'], subject: 'carol', roles: ['auditor'] });
      expectProblem(await on('admin.example.test', 'get', '/', auditor), 403, 'permission_denied');
      expect((await on('admin.example.test', 'get', '/audit', auditor).set('Accept', 'application/json')).status).toBe(401);
    });

    it('still asks for the factors of a user who has the permission, and a login of nobody', async () => {
      const alice = await login({ amr: ['pwd'], roles: ['admin'] });
      const page = await on('admin.example.test', 'get', '/', alice).set('Accept', BROWSER_ACCEPT);
      expect(new URL(page.headers.location!).pathname).toBe('/step-up');
      const anonymous = await on('admin.example.test', 'get', '/').set('Accept', BROWSER_ACCEPT);
      expect(new URL(anonymous.headers.location!).pathname).toBe('/login');
      const two = await login({ amr: ['pwd', 'otp'], roles: ['admin'] });
      expect((await on('admin.example.test', 'get', '/', two)).status).toBe(200);
    });

    it('lets requirePermission come before a route’s own step-up, with the same outcome', async () => {
      const bob = await login({ amr: ['pwd'], subject: 'bob' });
      expectProblem(await on('shop.example.test', 'post', '/payouts', bob), 403, 'permission_denied');
      const alice = await login({ amr: ['pwd'], roles: ['admin'] });
      expectProblem(await on('shop.example.test', 'post', '/payouts', alice), 401, 'insufficient_user_authentication');
    });
  });

  it('checks its rules when called', () => {
    expect(() => accessPolicy({ rules: [{ policy: 'two_factors' as never }] })).toThrow(/rules\[0\]\.policy must be one of/);
    expect(() => accessPolicy({ rules: [{ policy: 'bypass', maxAgeSeconds: 5 }] })).toThrow(/maxAgeSeconds only applies/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', domain: 'https://x.test' }] })).toThrow(/host name/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', path: 'admin' }] })).toThrow(/starting with "\/"/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', path: '/a%2Fb' }] })).toThrow(/as the router matches it/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', path: '/a/../b' }] })).toThrow(/dot segments/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', host: 'x' } as never] })).toThrow(/unknown option "host"/);
    expect(() => accessPolicy({ rules: [], defaultPolicy: 'allow' as never })).toThrow(/defaultPolicy/);
    expect(() => accessPolicy({ rules: [{ policy: 'two_factor' }], stepUpUrl: '/step-up' })).toThrow(/stepUpUrl must be an absolute/);
    expect(() => accessPolicy({ rules: [{ policy: 'bypass', roles: ['admin'] }] })).toThrow(/roles and permission only apply/);
    expect(() => accessPolicy({ rules: [{ policy: 'one_factor', roles: [] }] })).toThrow(/roles must be/);
    expect(() => accessPolicy({ rules: [{ policy: 'one_factor', permission: 'read:reports' }] })).toThrow(/pass the policy too/);
    const policy = createPolicy({ roles: {} });
    expect(() => accessPolicy({ policy, rules: [{ policy: 'one_factor', permission: 'read:*' }] })).toThrow(/one action on one resource/);
    expect(() => accessPolicy({ policy: {} as never, rules: [] })).toThrow(/createPolicy/);
  });
});

/** A request written by hand (see rawHttp), answered by `app` on a port of its own: its status and problem code. */
async function raw(app: express.Express, requestLine: string, headers: Record<string, string>): Promise<{ status: number; code: unknown }> {
  const server = await listening(app);
  try {
    const answer = await rawHttp(server, requestLine, { 'X-Forwarded-Proto': 'https', ...headers });
    return { status: answer.status, code: (JSON.parse(answer.body) as { code?: unknown }).code };
  } finally {
    server.close();
  }
}
