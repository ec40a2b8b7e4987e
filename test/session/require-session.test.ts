import express from 'express';
import request from 'supertest';
import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { errorHandler, requireSession, ssoSession } from '../../lib';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('requireSession', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('require');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
  });
  afterAll(async () => {
    await shop.close();
    await redis.cleanup();
  });

  describe('without a login', () => {
    it('redirects a browser navigation (302) to the login page with return_to = the URL asked for', async () => {
      const res = await via(shop.server, 'shop.example.test', 'get', '/me?tab=orders&x=%2F').set('Accept', BROWSER_ACCEPT);
      expect(res.status).toBe(302);
      const location = new URL(res.headers.location!);
      expect(`${location.origin}${location.pathname}`).toBe('https://auth.example.test/login');
      expect(location.searchParams.get('return_to')).toBe('https://shop.example.test/me?tab=orders&x=%2F');
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('redirects HEAD navigations too', async () => {
      const res = await via(shop.server, 'shop.example.test', 'head', '/me').set('Accept', BROWSER_ACCEPT);
      expect(res.status).toBe(302);
    });

    it('answers 401 problem+json to an API call (Accept: application/json)', async () => {
      const res = await via(shop.server, 'shop.example.test', 'get', '/me').set('Accept', 'application/json');
      expectProblem(res, 401, 'session_required');
      expect(res.body.login_url).toBe('https://auth.example.test/login');
      expect(res.headers['www-authenticate']).toBeUndefined();
    });

    it('answers 401 to Accept: */* (a script, not a page)', async () => {
      expectProblem(await via(shop.server, 'shop.example.test', 'get', '/me').set('Accept', '*/*'), 401, 'session_required');
    });

    it('answers 401, never a redirect, to a POST that accepts HTML', async () => {
      const res = await via(shop.server, 'shop.example.test', 'post', '/orders')
        .set('Accept', BROWSER_ACCEPT)
        .set('Origin', 'https://shop.example.test');
      expectProblem(res, 401, 'session_required');
    });

    it('does not put a foreign Host into return_to: it falls back to the default URL', async () => {
      const res = await via(shop.server, 'evil.test', 'get', '/me').set('Accept', BROWSER_ACCEPT);
      expect(res.status).toBe(302);
      expect(new URL(res.headers.location!).searchParams.get('return_to')).toBe('https://auth.example.test/');
    });

    it('builds return_to from the trusted protocol only (no X-Forwarded-Proto from an untrusted peer)', async () => {
      jest.spyOn(console, 'warn').mockImplementation(() => undefined);
      const app = express();
      // Nothing is trusted here, so the forwarded header is ignored and the request is plain http.
      app.use(ssoSession(ssoOptions({ store: redis.store, allowInsecureLocalDevelopment: true })));
      app.get('/me', requireSession(), (_req, res) => res.end());
      app.use(errorHandler({ log: false }));
      const res = await request(app)
        .get('/me')
        .set('Host', 'shop.example.test')
        .set('X-Forwarded-Proto', 'https')
        .set('Accept', BROWSER_ACCEPT);
      expect(new URL(res.headers.location!).searchParams.get('return_to')).toBe('http://shop.example.test/me');
    });

    it('uses the loginUrl option when given', async () => {
      const app = express();
      app.set('trust proxy', 'loopback');
      app.use(ssoSession(ssoOptions({ store: redis.store })));
      app.get('/me', requireSession({ loginUrl: 'https://auth.example.test/signin?lang=en' }), (_req, res) => res.end());
      const res = await request(app)
        .get('/me')
        .set('Host', 'shop.example.test')
        .set('X-Forwarded-Proto', 'https')
        .set('Accept', BROWSER_ACCEPT);
      expect(res.headers.location).toMatch(
        /^https:\/\/auth\.example\.test\/signin\?lang=en&return_to=https%3A%2F%2Fshop\.example\.test%2Fme$/,
      );
    });
  });

  describe('with a login', () => {
    it('lets the request through and sets req.user', async () => {
      const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ada', name: 'Ada' });
      const res = await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', BROWSER_ACCEPT);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: userId('ada'), name: 'Ada' });
    });
  });

  describe('order and factory misuse', () => {
    it('fails naming ssoSession when it did not run first', async () => {
      let message = '';
      const plain = express();
      plain.get('/me', requireSession(), (_req, res) => res.end());
      plain.use(((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        message = error.message;
        res.status(500).end();
      }) as express.ErrorRequestHandler);
      expect((await request(plain).get('/me')).status).toBe(500);
      expect(message).toMatch(/mount app\.use\(ssoSession\(\{\.\.\.\}\)\) before requireSession/);
    });

    it('detects app.use(requireSession) written for app.use(requireSession())', () => {
      const misuse = requireSession as unknown as (a: unknown, b: unknown, c: unknown) => unknown;
      expect(() => misuse({ method: 'GET', headers: {}, socket: {} }, {}, () => undefined)).toThrow(
        /write app\.use\(requireSession\(\{ \.\.\. \}\)\)/,
      );
    });

    it('refuses a loginUrl that is not absolute', () => {
      expect(() => requireSession({ loginUrl: '/login' })).toThrow(TypeError);
      expect(() => requireSession({ loginUrl: '/login' })).toThrow(/loginUrl must be an absolute http\(s\) URL/);
    });

    it('refuses the removed csrf option, pointing to ssoSession, which enforces it for every route', () => {
      expect(() => requireSession({ csrf: false } as never)).toThrow(
        /requireSession: option "csrf" was removed: ssoSession checks the origin/,
      );
    });

    it('names a misspelled option and the one it most likely meant', () => {
      expect(() => requireSession({ loginUlr: 'https://auth.example.test/login' } as never)).toThrow(
        /requireSession: unknown option "loginUlr" \(did you mean "loginUrl"\?\)/,
      );
    });
  });
});
