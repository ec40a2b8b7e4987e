import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, sessionSetCookieLine, ssoOptions, startSsoApp, via } from '../helpers/sso-apps';
import { sessionsResource, ssoSession } from '../../lib';

const JSON_ACCEPT = 'application/json';

describe('sessionsResource', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let admin: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('resource');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
    admin = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
  });
  afterAll(async () => {
    await shop.close();
    await admin.close();
    await redis.cleanup();
  });

  const list = (cookie: string) => via(shop.server, 'shop.example.test', 'get', '/account/sessions', cookie).set('Accept', JSON_ACCEPT);
  const remove = (cookie: string, id: string) =>
    via(shop.server, 'shop.example.test', 'delete', `/account/sessions/${encodeURIComponent(id)}`, cookie).set(
      'Origin',
      'https://shop.example.test',
    );

  it("GET lists the user's sessions, marks the current one, and never shows a raw session id", async () => {
    const onShop = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
    const onAdmin = await loginAs(admin.server, 'admin.example.test', { id: 'ada' });
    await loginAs(shop.server, 'shop.example.test', { id: 'someone-else' });
    const res = await list(onShop);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toHaveLength(2);
    expect(res.body.filter((entry: { current: boolean }) => entry.current)).toHaveLength(1);
    for (const entry of res.body) {
      expect(entry).toEqual({
        id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
        createdAt: expect.any(Number),
        lastSeenAt: expect.any(Number),
        ip: expect.any(String),
        userAgent: 'sso-test-browser/1.0',
        method: 'password',
        current: expect.any(Boolean),
      });
      for (const cookie of [onShop, onAdmin]) expect(cookie).not.toContain(entry.id);
    }
  });

  it('DELETE ends another session of the user (204, empty) on every app', async () => {
    const mine = await loginAs(shop.server, 'shop.example.test', { id: 'bob' });
    const other = await loginAs(admin.server, 'admin.example.test', { id: 'bob' });
    const target = (await list(mine)).body.find((entry: { current: boolean }) => !entry.current);
    const res = await remove(mine, target.id);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expectProblem(await via(admin.server, 'admin.example.test', 'get', '/me', other).set('Accept', JSON_ACCEPT), 401, 'session_required');
    expect((await list(mine)).body).toHaveLength(1);
    // The second DELETE finds nothing.
    expectProblem(await remove(mine, target.id), 404, 'session_not_found');
  });

  it('DELETE of the current session logs this browser out and clears the cookie', async () => {
    const mine = await loginAs(shop.server, 'shop.example.test', { id: 'carol' });
    const current = (await list(mine)).body.find((entry: { current: boolean }) => entry.current);
    const res = await remove(mine, current.id);
    expect(res.status).toBe(204);
    expect(sessionSetCookieLine(res)).toMatch(/^__Secure-sso\.sid=;/);
    expectProblem(await list(mine), 401, 'session_required');
  });

  it("DELETE of another user's session id is 404 and changes nothing", async () => {
    const victim = await loginAs(shop.server, 'shop.example.test', { id: 'dave' });
    const victimHandle = (await list(victim)).body[0].id;
    const attacker = await loginAs(shop.server, 'shop.example.test', { id: 'mallory' });
    expectProblem(await remove(attacker, victimHandle), 404, 'session_not_found');
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', victim)).status).toBe(200);
  });

  it('DELETE of an unknown id is 404', async () => {
    const mine = await loginAs(shop.server, 'shop.example.test', { id: 'erin' });
    expectProblem(await remove(mine, 'AAAAAAAAAAAAAAAAAAAAAA'), 404, 'session_not_found');
  });

  it('answers 401 without a login, also to a browser navigation', async () => {
    expectProblem(
      await via(shop.server, 'shop.example.test', 'get', '/account/sessions').set('Accept', JSON_ACCEPT),
      401,
      'session_required',
    );
    expectProblem(
      await via(shop.server, 'shop.example.test', 'get', '/account/sessions').set('Accept', 'text/html,*/*;q=0.8'),
      401,
      'session_required',
    );
    expectProblem(await remove('', 'AAAAAAAAAAAAAAAAAAAAAA'), 401, 'session_required');
  });

  it('answers 405 with Allow for other methods', async () => {
    const mine = await loginAs(shop.server, 'shop.example.test', { id: 'frank' });
    const post = await via(shop.server, 'shop.example.test', 'post', '/account/sessions', mine).set('Origin', 'https://shop.example.test');
    expectProblem(post, 405, 'method_not_allowed');
    expect(post.headers.allow).toBe('GET, HEAD, OPTIONS');
    const put = await via(shop.server, 'shop.example.test', 'put', '/account/sessions/x', mine).set('Origin', 'https://shop.example.test');
    expectProblem(put, 405, 'method_not_allowed');
    expect(put.headers.allow).toBe('DELETE, OPTIONS');
  });

  it('refuses a cross-site DELETE (CSRF) and keeps the session', async () => {
    const mine = await loginAs(shop.server, 'shop.example.test', { id: 'gina' });
    const other = await loginAs(admin.server, 'admin.example.test', { id: 'gina' });
    const target = (await list(mine)).body.find((entry: { current: boolean }) => !entry.current);
    const res = await via(shop.server, 'shop.example.test', 'delete', `/account/sessions/${target.id}`, mine)
      .set('Origin', 'https://evil.test')
      .set('Sec-Fetch-Site', 'cross-site');
    expectProblem(res, 403, 'csrf_origin');
    expect((await via(admin.server, 'admin.example.test', 'get', '/me', other)).status).toBe(200);
  });

  it('answers 406 to a GET that accepts no JSON', async () => {
    const mine = await loginAs(shop.server, 'shop.example.test', { id: 'hank' });
    const res = await via(shop.server, 'shop.example.test', 'get', '/account/sessions', mine).set('Accept', 'image/png');
    expect(res.status).toBe(406);
  });

  it('validates its options', () => {
    expect(() => sessionsResource({ path: 'sessions' })).toThrow(/path must be a plain path such as "\/sessions"/);
    expect(() => sessionsResource({ csrf: true } as never)).toThrow(/sessionsResource: option "csrf" was removed: ssoSession checks/);
    expect(() => sessionsResource({ pth: '/sessions' } as never)).toThrow(
      /sessionsResource: unknown option "pth" \(did you mean "path"\?\)/,
    );
  });
});
