import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, ssoOptions, startSsoApp, via } from '../helpers/sso-apps';
import { requireSession, ssoSession } from '../../lib';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const now = () => Math.floor(Date.now() / 1000);

describe('requireSession({ acr, maxAgeSeconds }): step-up per route', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('step-up');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })), {
      routes: (app) => {
        app.get('/admin', requireSession({ acr: '2fa', maxAgeSeconds: 300 }), (req, res) => res.json({ id: req.user!.id }));
        app.post('/admin/payouts', requireSession({ acr: '2fa', maxAgeSeconds: 300 }), (_req, res) => res.status(201).end());
        // The same app answering as the portal (auth.example.test): the origin of the step-up page.
        app.post('/sessions/revocations', requireSession({ acr: '2fa', maxAgeSeconds: 300 }), (_req, res) => res.status(204).end());
        app.get('/kept', (req, res) => res.json(req.session.stepUpResume ?? null));
        app.get('/vault', requireSession({ acr: 'phr' }), (_req, res) => res.end('vault'));
        app.get('/fresh', requireSession({ maxAgeSeconds: 60, stepUpUrl: 'https://auth.example.test/reauth?ui=1' }), (_req, res) =>
          res.end('fresh'),
        );
      },
    });
  });
  afterAll(async () => {
    await shop.close();
    await redis.cleanup();
  });

  const login = (authentication?: Record<string, unknown>) =>
    loginAs(shop.server, 'shop.example.test', { id: 'alice', ...(authentication ? { authentication } : {}) } as never);

  it('redirects a one-factor browser navigation to the step-up page with return_to, acr and max_age', async () => {
    const cookie = await login();
    const res = await via(shop.server, 'shop.example.test', 'get', '/admin?tab=users', cookie).set('Accept', BROWSER_ACCEPT);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.location!);
    expect(`${location.origin}${location.pathname}`).toBe('https://auth.example.test/step-up');
    expect(location.searchParams.get('return_to')).toBe('https://shop.example.test/admin?tab=users');
    expect(location.searchParams.get('acr')).toBe('2fa');
    expect(location.searchParams.get('max_age')).toBe('300');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('answers an API request 401 insufficient_user_authentication with the RFC 9470 challenge', async () => {
    const cookie = await login();
    const res = await via(shop.server, 'shop.example.test', 'get', '/admin', cookie).set('Accept', 'application/json');
    expectProblem(res, 401, 'insufficient_user_authentication');
    expect(res.headers['www-authenticate']).toBe(
      'Bearer error="insufficient_user_authentication", error_description="A second factor is required within the last 300 seconds", acr_values="2fa", max_age=300',
    );
    expect(res.body).toMatchObject({ acr_values: '2fa', max_age: 300, step_up_url: 'https://auth.example.test/step-up' });
    const post = await via(shop.server, 'shop.example.test', 'post', '/admin/payouts', cookie).set('Accept', BROWSER_ACCEPT);
    expectProblem(post, 401, 'insufficient_user_authentication');
  });

  it('sends a form posted from a page through the step-up page and back to that page, doing nothing', async () => {
    const cookie = await login();
    const page = 'https://shop.example.test/admin?tab=payouts';
    const res = await via(shop.server, 'shop.example.test', 'post', '/admin/payouts', cookie)
      .set('Accept', BROWSER_ACCEPT)
      .set('Referer', page)
      .type('form')
      .send({ amount: '10' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.location!);
    expect(`${location.origin}${location.pathname}`).toBe('https://auth.example.test/step-up');
    expect(location.searchParams.get('return_to')).toBe(page);
    expect(location.searchParams.get('acr')).toBe('2fa');
    // Posted to another origin than the step-up page's: the portal could not send it on, so nothing is kept.
    expect(location.searchParams.has('resume')).toBe(false);
    expect((await via(shop.server, 'shop.example.test', 'get', '/kept', cookie)).body).toBeNull();
    expect(res.headers['cache-control']).toBe('no-store');
  });

  /** "Revoke" posted from the portal's sessions page, as a browser posts a form. */
  const revokeFromSessionsPage = (cookie: string) =>
    via(shop.server, 'auth.example.test', 'post', '/sessions/revocations', cookie)
      .set('Accept', BROWSER_ACCEPT)
      .set('Referer', 'https://auth.example.test/sessions');

  it("keeps a small form posted to the step-up page's own origin in the session, once, and names it in resume", async () => {
    const cookie = await login();
    const post = (session: string) => revokeFromSessionsPage(cookie).type('form').send({ session });
    const res = await post('handle-1');
    expect(res.status).toBe(303);
    const location = new URL(res.headers.location!);
    expect(`${location.origin}${location.pathname}`).toBe('https://auth.example.test/step-up');
    expect(location.searchParams.get('return_to')).toBe('https://auth.example.test/sessions');
    const resume = location.searchParams.get('resume')!;
    expect(resume).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const kept = (await via(shop.server, 'auth.example.test', 'get', '/kept', cookie)).body;
    expect(kept).toEqual({
      id: resume,
      action: 'https://auth.example.test/sessions/revocations',
      fields: [['session', 'handle-1']],
      createdAt: expect.any(Number),
    });
    // A newer form replaces it: one waits at a time.
    const second = new URL((await post('handle-2')).headers.location!).searchParams.get('resume');
    expect(second).not.toBe(resume);
    expect((await via(shop.server, 'auth.example.test', 'get', '/kept', cookie)).body).toMatchObject({
      id: second,
      fields: [['session', 'handle-2']],
    });
  });

  it('keeps nothing of a form that is not a small urlencoded one, and still sends the browser through the step-up page', async () => {
    const cookie = await login();
    const big = await revokeFromSessionsPage(cookie)
      .type('form')
      .send({ session: 'x'.repeat(10_000) });
    expect(big.status).toBe(303);
    expect(new URL(big.headers.location!).searchParams.has('resume')).toBe(false);
    const multipart = await revokeFromSessionsPage(cookie).field('session', 'h');
    expect(multipart.status).toBe(303);
    expect(new URL(multipart.headers.location!).searchParams.has('resume')).toBe(false);
    expect((await via(shop.server, 'auth.example.test', 'get', '/kept', cookie)).body).toBeNull();
  });

  it('answers a form whose page is not a safe redirect target 401, never sending the browser there', async () => {
    const cookie = await login();
    const res = await via(shop.server, 'shop.example.test', 'post', '/admin/payouts', cookie)
      .set('Accept', BROWSER_ACCEPT)
      .set('Referer', 'https://evil.example.net/phish')
      .type('form')
      .send({ amount: '10' });
    expectProblem(res, 401, 'insufficient_user_authentication');
    expect(res.headers.location).toBeUndefined();
  });

  it('lets a session with two recent factors through', async () => {
    const cookie = await login({ amr: ['pwd', 'otp'] });
    const res = await via(shop.server, 'shop.example.test', 'get', '/admin', cookie).set('Accept', 'application/json');
    expect(res.status).toBe(200);
  });

  it('refuses two factors older than maxAgeSeconds', async () => {
    const cookie = await login({ amr: ['pwd', 'otp'], authTime: now() - 301 });
    const res = await via(shop.server, 'shop.example.test', 'get', '/admin', cookie).set('Accept', 'application/json');
    expectProblem(res, 401, 'insufficient_user_authentication');
  });

  it('orders levels: two factors do not open a phishing-resistant route, a hardware key does', async () => {
    const twoFactors = await login({ amr: ['pwd', 'otp'] });
    expectProblem(await via(shop.server, 'shop.example.test', 'get', '/vault', twoFactors).set('Accept', '*/*'), 401);
    const hardware = await login({ amr: ['hwk'] });
    expect((await via(shop.server, 'shop.example.test', 'get', '/vault', hardware)).status).toBe(200);
    expect((await via(shop.server, 'shop.example.test', 'get', '/admin', hardware)).status).toBe(200);
  });

  it('uses the stepUpUrl option, keeping its own query', async () => {
    const cookie = await login({ amr: ['pwd'], authTime: now() - 120 });
    const res = await via(shop.server, 'shop.example.test', 'get', '/fresh', cookie).set('Accept', BROWSER_ACCEPT);
    const location = new URL(res.headers.location!);
    expect(`${location.origin}${location.pathname}`).toBe('https://auth.example.test/reauth');
    expect(location.searchParams.get('ui')).toBe('1');
    expect(location.searchParams.get('max_age')).toBe('60');
    expect(location.searchParams.get('acr')).toBeNull();
  });

  it('does not put a foreign Host into return_to', async () => {
    const cookie = await login();
    const res = await via(shop.server, 'evil.test', 'get', '/admin', cookie).set('Accept', BROWSER_ACCEPT);
    const location = new URL(res.headers.location!);
    expect(location.searchParams.get('return_to')).toBe('https://auth.example.test/');
  });

  it('still sends a request without a login to the login page first', async () => {
    const res = await via(shop.server, 'shop.example.test', 'get', '/admin').set('Accept', BROWSER_ACCEPT);
    expect(new URL(res.headers.location!).pathname).toBe('/login');
  });

  it('checks its options when called', () => {
    expect(() => requireSession({ acr: '3fa' as never })).toThrow(/acr must be one of 1fa, 2fa, phr/);
    expect(() => requireSession({ acr: '2fa', maxAgeSeconds: -1 })).toThrow(/maxAgeSeconds/);
    expect(() => requireSession({ maxAge: 300 } as never)).toThrow(/maxAgeSeconds/);
    expect(() => requireSession({ stepUpUrl: 'https://auth.example.test/step-up' })).toThrow(/only used with acr or maxAgeSeconds/);
    expect(() => requireSession({ acr: '2fa', stepUpUrl: '/step-up' })).toThrow(/stepUpUrl must be an absolute/);
  });
});
