import express from 'express';
import request from 'supertest';
import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, sessionCookieOf, sessionIdOf, ssoOptions, startSsoApp, via } from '../helpers/sso-apps';
import { errorHandler, establishLogin, ssoSession, type LoginUser } from '../../lib';

describe('establishLogin', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let sso: ReturnType<typeof ssoSession>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('login');
    sso = ssoSession(ssoOptions({ store: redis.store }));
    shop = await startSsoApp(sso, {
      routes: (app) => {
        app.post('/remember', (req, res) => {
          req.session.qrLogin = { pending: { stale: { returnTo: 'https://shop.example.test/', createdAt: 1 } } };
          res.status(204).end();
        });
        app.post('/login-with-data', async (req, res) => {
          await establishLogin(
            req,
            { id: 'oidc-user', name: 'O', roles: ['r'], method: 'oidc', attributes: { issuer: 'https://idp.test' } },
            {
              tags: ['oidc-sid:https://idp.test|sid-1'],
              data: { oidc: { provider: 'idp', sid: 'sid-1' } },
            },
          );
          res.status(204).end();
        });
        app.get('/session-data', (req, res) => {
          res.json({ qrLogin: req.session.qrLogin ?? null, oidc: req.session.oidc ?? null, user: req.session.user ?? null });
        });
      },
    });
  });
  afterAll(async () => {
    await shop.close();
    await redis.cleanup();
  });

  it('keeps nothing of the session before the login except the data passed', async () => {
    const anonymous = sessionCookieOf(await via(shop.server, 'shop.example.test', 'post', '/remember'))!;
    expect((await via(shop.server, 'shop.example.test', 'get', '/session-data', anonymous)).body.qrLogin).not.toBeNull();
    const res = await via(shop.server, 'shop.example.test', 'post', '/login-with-data', anonymous);
    expect(res.status).toBe(204);
    const cookie = sessionCookieOf(res)!;
    expect(sessionIdOf(cookie)).not.toBe(sessionIdOf(anonymous));
    expect(await redis.client.exists(`${redis.prefix}sess:${sessionIdOf(anonymous)}`)).toBe(0);
    const data = (await via(shop.server, 'shop.example.test', 'get', '/session-data', cookie)).body;
    expect(data.qrLogin).toBeNull();
    expect(data.oidc).toEqual({ provider: 'idp', sid: 'sid-1' });
    expect(data.user).toEqual({
      id: 'oidc-user',
      name: 'O',
      roles: ['r'],
      method: 'oidc',
      authenticatedAt: expect.any(Number),
      attributes: { issuer: 'https://idp.test' },
    });
  });

  it('indexes the session under its tags, so destroyByTag ends it (back-channel logout)', async () => {
    const cookie = sessionCookieOf(await via(shop.server, 'shop.example.test', 'post', '/login-with-data'))!;
    const other = await loginAs(shop.server, 'shop.example.test', { id: 'oidc-user' });
    expect(await redis.client.smembers(`${redis.prefix}session-tags:{oidc-sid:https://idp.test|sid-1}`)).toContain(sessionIdOf(cookie));
    expect(await sso.manager.destroyByTag('oidc-sid:https://idp.test|sid-1')).toBeGreaterThanOrEqual(1);
    expectProblem(
      await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json'),
      401,
      'session_required',
    );
    // A session of the same user without that tag lives on.
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', other)).status).toBe(200);
    expect(await sso.manager.destroyByTag('oidc-sid:https://idp.test|sid-1')).toBe(0);
  });

  it('stores authenticatedAt as given, or now', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'timed' });
    const stored = JSON.parse((await redis.client.get(`${redis.prefix}sess:${sessionIdOf(cookie)}`))!);
    expect(Math.abs(stored.user.authenticatedAt - Date.now())).toBeLessThan(5000);
    expect(stored.meta.createdAt).toBe(stored.meta.lastSeenAt);
  });

  it('refuses to log in on what Express sees as plain http with a Secure cookie, naming trust proxy', async () => {
    const app = express();
    // No trust proxy: X-Forwarded-Proto is ignored, the request is http.
    app.use(ssoSession(ssoOptions({ store: redis.store })));
    let message = '';
    app.post('/login', async (req, res) => {
      try {
        await establishLogin(req, { id: 'x', name: 'x', roles: [], method: 'password' });
        res.status(204).end();
      } catch (error) {
        message = (error as Error).message;
        res.status(500).end();
      }
    });
    const res = await request(app).post('/login').set('X-Forwarded-Proto', 'https');
    expect(res.status).toBe(500);
    expect(message).toMatch(/trust proxy/);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it.each([
    [{ id: '', name: 'x', roles: [], method: 'password' }, /user\.id must be a non-empty string/],
    [{ id: 'x', name: 'x', roles: 'admin', method: 'password' }, /user\.roles must be an array of strings/],
    [{ id: 'x', name: 'x', roles: [], method: '' }, /user\.method must name how the user authenticated/],
    [{ id: 'x', roles: [], method: 'password' }, /user\.name must be a string/],
  ])('refuses an invalid user %j with a TypeError naming the field', async (user, message) => {
    const app = express();
    app.set('trust proxy', 'loopback');
    app.use(ssoSession(ssoOptions({ store: redis.store })));
    let caught: unknown;
    app.post('/login', async (req, res) => {
      try {
        await establishLogin(req, user as unknown as LoginUser);
      } catch (error) {
        caught = error;
      }
      res.status(204).end();
    });
    app.use(errorHandler({ log: false }));
    await request(app).post('/login').set('X-Forwarded-Proto', 'https');
    expect(caught).toBeInstanceOf(TypeError);
    expect((caught as Error).message).toMatch(message);
  });

  it('fails naming ssoSession when it did not run first', async () => {
    const app = express();
    let caught: unknown;
    app.post('/login', async (req, res) => {
      try {
        await establishLogin(req, { id: 'x', name: 'x', roles: [], method: 'password' });
      } catch (error) {
        caught = error;
      }
      res.status(204).end();
    });
    await request(app).post('/login');
    expect((caught as Error).message).toMatch(/mount app\.use\(ssoSession\(\{\.\.\.\}\)\) before establishLogin/);
  });
});
