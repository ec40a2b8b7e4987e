import type { Server } from 'node:http';
import { requireAuth } from '../../lib/rbac';
import { requireSession, ssoSession } from '../../lib/session';
import { requireBearer } from '../../lib/tokens';
import { loadJose, type Jose } from '../helpers/jose-tokens';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';
import { loginAs, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';

const HOST = 'api.example.test';
const ISSUER = 'https://auth.example.test';
const AUDIENCE = 'https://api.example.test';
const TOKEN_SECRET = 'require-auth-test-secret-of-at-least-32-bytes';

describe('requireAuth({ bearer, session })', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let server: Server;
  let close: () => Promise<void>;
  let jose: Jose;
  let cookie: string;

  const mint = (subject: string, overrides: { audience?: string } = {}) =>
    new jose.SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(overrides.audience ?? AUDIENCE)
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(TOKEN_SECRET));

  beforeAll(async () => {
    jose = await loadJose();
    redis = await testRedisStore('require-auth');
    const authenticate = requireAuth({
      bearer: requireBearer({ secret: TOKEN_SECRET, algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE }),
      session: requireSession(),
    });
    ({ server, close } = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })), {
      routes: (app) => {
        const who = (req: import('express').Request) => ({ user: req.user?.id ?? null, sub: req.auth?.payload.sub ?? null });
        app.get('/notes', authenticate, (req, res) => {
          res.json(who(req));
        });
        app.post('/notes', authenticate, (req, res) => {
          res.status(201).json(who(req));
        });
      },
    }));
    cookie = await loginAs(server, HOST, { id: 'alice' });
  });

  afterAll(async () => {
    await close();
    await redis.cleanup();
  });

  it('lets a signed-in browser in by its session', async () => {
    const res = await via(server, HOST, 'get', '/notes', cookie).set('Accept', 'application/json');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user: userId('alice'), sub: null });
  });

  it('lets an API client in by its Bearer token', async () => {
    const res = await via(server, HOST, 'get', '/notes').set('Authorization', `Bearer ${await mint('robot-7')}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user: null, sub: 'robot-7' });
  });

  it('never falls back to the session cookie when the token sent along is bad', async () => {
    const wrongAudience = await mint('alice', { audience: 'https://other.example.test' });
    for (const authorization of ['Bearer not-a-jwt', `Bearer ${wrongAudience}`, 'Basic YWxpY2U6cGFzc3dvcmQ=']) {
      const res = await via(server, HOST, 'get', '/notes', cookie).set('Authorization', authorization);
      // 401 for a bad token, 400 for a credential of another scheme (RFC 6750, section 3.1): refused either way.
      expect([400, 401]).toContain(res.status);
      expect(res.body.user).toBeUndefined();
    }
  });

  it("lets a good token speak for the request alone, not the cookie's user that came with it", async () => {
    const res = await via(server, HOST, 'post', '/notes', cookie).set('Authorization', `Bearer ${await mint('robot-7')}`);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ user: null, sub: 'robot-7' });
  });

  it('answers a request with neither with 401 naming the Bearer scheme too, and sends a browser to the login page', async () => {
    const api = await via(server, HOST, 'get', '/notes').set('Accept', 'application/json');
    expectProblem(api, 401, 'session_required');
    expect(api.headers['www-authenticate']).toBe('Bearer realm="api"');
    const browser = await via(server, HOST, 'get', '/notes').set('Accept', 'text/html');
    expect(browser.status).toBe(302);
    expect(browser.headers.location).toMatch(/^https:\/\/auth\.example\.test\/login\?return_to=/);
  });

  it('still refuses a cookie-authenticated change from another origin (the session layer runs first)', async () => {
    const res = await via(server, HOST, 'post', '/notes', cookie).set('Origin', 'https://evil.test');
    expectProblem(res, 403, 'csrf_origin');
  });

  describe('options', () => {
    const bearer = requireBearer({ secret: TOKEN_SECRET, algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE });
    it.each([
      [{ session: requireSession() }, /requireAuth: bearer is required/],
      [{ bearer }, /requireAuth: session is required/],
      [
        { bearer: requireBearer, session: requireSession() },
        /bearer must be the middleware requireBearer\(\{ … \}\) returns, not the factory/,
      ],
      [{ bearer, session: requireSession }, /session must be the middleware requireSession\(\) returns, not the factory/],
      [{ bearer, session: requireSession(), realm: 'a"b' }, /realm must be printable ASCII without quotes/],
      [{ bearer, sesion: requireSession() }, /unknown option "sesion" \(did you mean "session"\?\)/],
    ])('refuses %p', (options, message) => {
      expect(() => requireAuth(options as never)).toThrow(message);
    });

    it('is refused when used as a middleware itself', () => {
      expect(() => requireAuth({ method: 'GET', headers: {}, url: '/' } as never)).toThrow(/it is a factory/);
    });
  });
});
