import express from 'express';
import request from 'supertest';
import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, sessionCookieOf, sessionIdOf, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { errorHandler, establishLogin, ssoSession, type LoginUser } from '../../lib';
import type { LinkAccount } from '../../lib/session/types';

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
            {
              source: 'oidc:https://idp.test',
              subject: 'oidc-user',
              name: 'O',
              roles: ['r'],
              method: 'oidc',
              attributes: { issuer: 'https://idp.test' },
            },
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
      id: 'oidc:https://idp.test|oidc-user',
      source: 'oidc:https://idp.test',
      subject: 'oidc-user',
      name: 'O',
      roles: ['r'],
      method: 'oidc',
      authenticatedAt: expect.any(Number),
      // Without the provider's amr, an external login counts as one factor of kind "ext".
      authentication: { acr: '1fa', amr: ['ext'], authTime: expect.any(Number), factors: [{ method: 'ext', at: expect.any(Number) }] },
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

  it('refuses to log in on what Express sees as plain http with a Secure cookie: 403 https_required, trust proxy hint logged once', async () => {
    const app = express();
    // No trust proxy: X-Forwarded-Proto is ignored, the request is http.
    app.use(ssoSession(ssoOptions({ store: redis.store })));
    let caught: unknown;
    app.post('/login', async (req, res) => {
      try {
        await establishLogin(req, { source: 'test:users', subject: 'x', name: 'x', roles: [], method: 'password' });
        res.status(204).end();
      } catch (error) {
        caught = error;
        res.status((error as { status?: number }).status ?? 500).end();
      }
    });
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const res = await request(app).post('/login').set('X-Forwarded-Proto', 'https');
      expect(res.status).toBe(403);
      expect(caught).toMatchObject({ status: 403, code: 'https_required' });
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(warn.mock.calls.flat().join(' ')).toMatch(/trust proxy/);
    } finally {
      warn.mockRestore();
    }
  });

  it.each([
    ['no subject', { source: 'test:users', name: 'x', roles: [], method: 'password' }, /user\.subject must be a non-empty string/],
    [
      'an empty subject',
      { source: 'test:users', subject: '', name: 'x', roles: [], method: 'password' },
      /user\.subject must be a non-empty string/,
    ],
    [
      'a subject over 512 characters',
      { source: 'test:users', subject: 'x'.repeat(513), name: 'x', roles: [], method: 'password' },
      /user\.subject must be .* at most 512 characters/,
    ],
    ['no source', { subject: 'x', name: 'x', roles: [], method: 'password' }, /user\.source must be "<kind>:<name>"/],
    [
      'a source without a kind',
      { source: 'users', subject: 'x', name: 'x', roles: [], method: 'password' },
      /user\.source must be "<kind>:<name>"/,
    ],
    [
      'a source with "|"',
      { source: 'test:a|b', subject: 'x', name: 'x', roles: [], method: 'password' },
      /user\.source must be .* without spaces or "\|"/,
    ],
    [
      'roles not a list',
      { source: 'test:users', subject: 'x', name: 'x', roles: 'admin', method: 'password' },
      /user\.roles must be an array of strings/,
    ],
    [
      'an empty method',
      { source: 'test:users', subject: 'x', name: 'x', roles: [], method: '' },
      /user\.method must name how the user authenticated/,
    ],
    ['no name', { source: 'test:users', subject: 'x', roles: [], method: 'password' }, /user\.name must be a string/],
    [
      'an id beside source and subject',
      { id: 'test:users|x', source: 'test:users', subject: 'x', name: 'x', roles: [], method: 'password' },
      /user\.id is derived from \(source, subject\)/,
    ],
    ['a bare id', { id: 'x', name: 'x', roles: [], method: 'password' }, /user\.id is derived from \(source, subject\)/],
  ])('refuses a user with %s with a TypeError naming the field', async (_case, user, message) => {
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
        await establishLogin(req, { source: 'test:users', subject: 'x', name: 'x', roles: [], method: 'password' });
      } catch (error) {
        caught = error;
      }
      res.status(204).end();
    });
    await request(app).post('/login');
    expect((caught as Error).message).toMatch(/mount app\.use\(ssoSession\(\{\.\.\.\}\)\) before establishLogin/);
  });

  it('makes the same subject of two sources two users, with two ids and two session indexes', async () => {
    const fromA = await loginAs(shop.server, 'shop.example.test', { id: 'carol', source: 'oidc:https://a.idp.test' });
    const fromB = await loginAs(shop.server, 'shop.example.test', { id: 'carol', source: 'oidc:https://b.idp.test' });
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', fromA)).body.id).toBe(userId('carol', 'oidc:https://a.idp.test'));
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', fromB)).body.id).toBe(userId('carol', 'oidc:https://b.idp.test'));
    const listedForA = (await sso.manager.listSessions(userId('carol', 'oidc:https://a.idp.test'))).map((session) => session.id);
    const listedForB = (await sso.manager.listSessions(userId('carol', 'oidc:https://b.idp.test'))).map((session) => session.id);
    expect(listedForA).toHaveLength(1);
    expect(listedForB).toHaveLength(1);
    expect(listedForA).not.toEqual(listedForB);
    expect(await sso.manager.listSessions('carol')).toEqual([]);
  });
});

describe('establishLogin with ssoSession({ linkAccount })', () => {
  const PARTNER = 'oidc:https://partner.idp.test';
  const LOCAL = 'directory:local';
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let sso: ReturnType<typeof ssoSession>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let link: LinkAccount;
  const seen: LoginUser[] = [];

  beforeAll(async () => {
    redis = await testRedisStore('link');
    sso = ssoSession(ssoOptions({ store: redis.store, linkAccount: (login, req) => link(login, req) }));
    shop = await startSsoApp(sso, {
      routes: (app) => {
        app.get('/session-user', (req, res) => {
          res.json(req.session.user ?? null);
        });
      },
    });
  });
  afterAll(async () => {
    await shop.close();
    await redis.cleanup();
  });
  beforeEach(() => {
    seen.length = 0;
    // The partner's users are the local directory's accounts of the same subject; everyone else is themselves.
    link = (login) => {
      seen.push({ ...login });
      if (login.source === PARTNER) return { source: LOCAL, subject: login.subject, roles: ['customer'] };
      return undefined;
    };
  });

  it('logs a linked login in as the local account, remembering the identity that authenticated', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'dave', source: PARTNER, name: 'Dave', roles: ['partner-admin'] });
    const user = (await via(shop.server, 'shop.example.test', 'get', '/session-user', cookie)).body;
    expect(user).toEqual({
      id: userId('dave', LOCAL),
      source: LOCAL,
      subject: 'dave',
      name: 'Dave',
      // The account's roles, not the partner's: a foreign source's roles never become a local account's.
      roles: ['customer'],
      method: 'password',
      authenticatedAt: expect.any(Number),
      authentication: { acr: '1fa', amr: ['pwd'], authTime: expect.any(Number), factors: [{ method: 'pwd', at: expect.any(Number) }] },
      linkedFrom: { source: PARTNER, subject: 'dave' },
    });
    expect(seen).toEqual([expect.objectContaining({ source: PARTNER, subject: 'dave', name: 'Dave', roles: ['partner-admin'] })]);
    expect((await sso.manager.listSessions(userId('dave', LOCAL))).map((session) => session.id)).toHaveLength(1);
    expect(await sso.manager.listSessions(userId('dave', PARTNER))).toEqual([]);
  });

  it('logs every login the hook leaves alone in as itself', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'dave', name: 'Other Dave', roles: ['viewer'] });
    const user = (await via(shop.server, 'shop.example.test', 'get', '/session-user', cookie)).body;
    expect(user).toMatchObject({ id: userId('dave'), source: 'test:users', subject: 'dave', name: 'Other Dave', roles: ['viewer'] });
    expect(user).not.toHaveProperty('linkedFrom');
  });

  it('refuses a login the hook answers null for with 403 account_not_linked, leaving the current session as it was', async () => {
    const before = await loginAs(shop.server, 'shop.example.test', { id: 'erin' });
    link = () => null;
    const res = await via(shop.server, 'shop.example.test', 'post', '/login', before)
      .set('Origin', 'https://shop.example.test')
      .send({ id: 'mallory', source: PARTNER, name: 'Mallory', roles: [], method: 'oidc' });
    expectProblem(res, 403, 'account_not_linked');
    expect(sessionCookieOf(res)).toBeUndefined();
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', before)).body.id).toBe(userId('erin'));
    expect(await sso.manager.listSessions(userId('mallory', PARTNER))).toEqual([]);
    expect(await sso.manager.listSessions(userId('mallory', LOCAL))).toEqual([]);
  });

  it.each([
    [{ source: 'directory', subject: 'dave' }, /linkAccount\(\.\.\.\)\.source must be "<kind>:<name>"/],
    [{ source: LOCAL, subject: '' }, /linkAccount\(\.\.\.\)\.subject must be a non-empty string/],
    [{ source: LOCAL, subject: 'dave', roles: 'admin' }, /linkAccount\(\.\.\.\)\.roles must be an array of strings/],
    ['directory:local|dave', /linkAccount must return \{ source, subject, name\?, roles\? \}/],
  ])('refuses a malformed local account %j from the hook, logging nobody in', async (account, message) => {
    let caught: unknown;
    const app = express();
    app.set('trust proxy', 'loopback');
    app.use(ssoSession(ssoOptions({ store: redis.store, linkAccount: () => account as never })));
    app.post('/login', async (req, res) => {
      try {
        await establishLogin(req, { source: PARTNER, subject: 'dave', name: 'Dave', roles: [], method: 'oidc' });
      } catch (error) {
        caught = error;
      }
      res.status(204).end();
    });
    const res = await request(app).post('/login').set('X-Forwarded-Proto', 'https');
    expect(caught).toBeInstanceOf(TypeError);
    expect((caught as Error).message).toMatch(message);
    expect(sessionCookieOf(res)).toBeUndefined();
  });

  it('refuses a linkAccount that is not a function when ssoSession is called', () => {
    expect(() => ssoSession(ssoOptions({ store: redis.store, linkAccount: { source: LOCAL } as never }))).toThrow(
      /linkAccount must be a function/,
    );
  });
});
