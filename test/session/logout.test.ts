import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, sessionIdOf, sessionSetCookieLine, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { ssoSession } from '../../lib';

const JSON_ACCEPT = 'application/json';

describe('logout and logoutEverywhere', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let admin: Awaited<ReturnType<typeof startSsoApp>>;
  let blog: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('logout');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
    admin = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
    blog = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
  });
  afterAll(async () => {
    await shop.close();
    await admin.close();
    await blog.close();
    await redis.cleanup();
  });

  const sessionKey = (cookie: string) => `${redis.prefix}sess:${sessionIdOf(cookie)}`;

  it('logging out on one app logs out on the others', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
    expect((await via(admin.server, 'admin.example.test', 'get', '/me', cookie)).status).toBe(200);
    const out = await via(shop.server, 'shop.example.test', 'post', '/logout', cookie).set('Origin', 'https://shop.example.test');
    expect(out.status).toBe(204);
    expectProblem(await via(admin.server, 'admin.example.test', 'get', '/me', cookie).set('Accept', JSON_ACCEPT), 401, 'session_required');
    expectProblem(await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', JSON_ACCEPT), 401, 'session_required');
    expect(await redis.client.exists(sessionKey(cookie))).toBe(0);
  });

  it('clears the cookie with the same Domain, Path and flags it was set with', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'bob' });
    const out = await via(shop.server, 'shop.example.test', 'post', '/logout', cookie);
    const line = sessionSetCookieLine(out)!;
    expect(line).toMatch(/^__Secure-sso\.sid=;/);
    const attributes = line
      .split(';')
      .slice(1)
      .map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(
      expect.arrayContaining([
        'domain=example.test',
        'path=/',
        'httponly',
        'secure',
        'samesite=lax',
        'expires=thu, 01 jan 1970 00:00:00 gmt',
      ]),
    );
  });

  it('removes the logged-out session from the user index', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'carol' });
    const indexKey = `${redis.prefix}user-sessions:{${userId('carol')}}`;
    expect(await redis.client.smembers(indexKey)).toEqual([sessionIdOf(cookie)]);
    await via(shop.server, 'shop.example.test', 'post', '/logout', cookie);
    expect(await redis.client.smembers(indexKey)).toEqual([]);
  });

  it('logout without a session still clears the cookie and answers normally', async () => {
    const out = await via(shop.server, 'shop.example.test', 'post', '/logout');
    expect(out.status).toBe(204);
    expect(sessionSetCookieLine(out)).toMatch(/^__Secure-sso\.sid=;/);
  });

  it('logoutEverywhere ends all three sessions of the user on every app, and only theirs', async () => {
    const first = await loginAs(shop.server, 'shop.example.test', { id: 'dave' });
    const second = await loginAs(admin.server, 'admin.example.test', { id: 'dave' });
    const third = await loginAs(blog.server, 'blog.example.test', { id: 'dave' });
    const someoneElse = await loginAs(shop.server, 'shop.example.test', { id: 'erin' });
    // Another source's dave is another user.
    const sameSubjectElsewhere = await loginAs(shop.server, 'shop.example.test', { id: 'dave', source: 'oidc:https://other.idp.test' });
    const res = await via(admin.server, 'admin.example.test', 'post', '/logout-everywhere', second).set(
      'Origin',
      'https://admin.example.test',
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ended: 3 });
    expect(sessionSetCookieLine(res)).toMatch(/^__Secure-sso\.sid=;/);
    for (const [server, host, cookie] of [
      [shop.server, 'shop.example.test', first],
      [admin.server, 'admin.example.test', second],
      [blog.server, 'blog.example.test', third],
    ] as const) {
      expectProblem(await via(server, host, 'get', '/me', cookie).set('Accept', JSON_ACCEPT), 401, 'session_required');
    }
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', someoneElse)).status).toBe(200);
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', sameSubjectElsewhere)).status).toBe(200);
  });

  it('a request in flight when its session is revoked does not bring the session back', async () => {
    let revokeNow: () => Promise<unknown> = async () => undefined;
    const app = await startSsoApp(ssoSession(ssoOptions({ store: redis.store, touchAfterSeconds: 0 })), {
      routes: (express) =>
        express.get('/slow', async (req, res) => {
          // The session is revoked elsewhere while this request holds it; then the request changes it.
          await revokeNow();
          req.session.oidcTransactions = { state: 'changed' };
          res.json({ ok: true });
        }),
    });
    try {
      const cookie = await loginAs(app.server, 'shop.example.test', { id: 'frank' });
      revokeNow = () => redis.client.del(sessionKey(cookie));
      expect((await via(app.server, 'shop.example.test', 'get', '/slow', cookie)).status).toBe(200);
      expect(await redis.client.exists(sessionKey(cookie))).toBe(0);
      expectProblem(await via(app.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', JSON_ACCEPT), 401, 'session_required');
    } finally {
      await app.close();
    }
  });
});
