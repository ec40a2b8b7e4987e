import { createAdmin } from '../../example-app/admin/admin';
import { createAuth } from '../../example-app/auth/auth';
import { createShop } from '../../example-app/shop/shop';
import { enrolOverHttp } from '../helpers/authenticator-app';
import { portalLogin, startInProcessSite, type InProcessSite } from '../helpers/demo-sites';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

// The demo's access policy (example-app/common/access.ts): shop one factor, the whole admin site the read:reports
// permission and two factors (its audit page recent ones), revoking a session at the portal a fresh second factor;
// demo users enrol an authenticator app at the portal.
describe('the demo’s access policy', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let auth: InProcessSite;
  let shop: InProcessSite;
  let admin: InProcessSite;
  beforeAll(async () => {
    redis = await testRedisStore('demo-access');
    auth = await startInProcessSite('auth', createAuth, redis.store);
    shop = await startInProcessSite('shop', createShop, redis.store);
    admin = await startInProcessSite('admin', createAdmin, redis.store);
  });
  afterAll(async () => {
    for (const site of [auth, shop, admin]) await site?.running.close();
    await redis.cleanup();
  });

  it('lets a password login into the shop, and sends it from every admin page to the portal’s step-up page', async () => {
    const cookie = await portalLogin(auth, 'alice', 'alice-password');
    expect((await shop.get('/').set('Cookie', cookie).set('Accept', 'text/html')).status).toBe(200);
    for (const path of ['/', '/no-such-page']) {
      const res = await admin.get(path).set('Cookie', cookie).set('Accept', 'text/html');
      expect(res.status).toBe(302);
      const location = new URL(res.headers.location!);
      expect(`${location.host}${location.pathname}`).toBe(`${auth.host}/step-up`);
      expect(location.searchParams.get('return_to')).toBe(`http://${admin.host}${path}`);
      expect(location.searchParams.get('acr')).toBe('2fa');
      expect(res.text).not.toContain('3 orders today');
    }
    // An API client (no browser to send anywhere) is told what is missing, and gets no user data.
    const me = await admin.get('/me').set('Cookie', cookie);
    expectProblem(me, 401, 'insufficient_user_authentication');
    expect(JSON.stringify(me.body)).not.toContain('Alice');
  });

  it('tells a user without the admin role at once that admin is not for him, without asking for a second factor', async () => {
    const cookie = await portalLogin(auth, 'bob', 'bob-password');
    for (const path of ['/', '/audit', '/Audit', '/no-such-page']) {
      const res = await admin.get(path).set('Cookie', cookie).set('Accept', 'text/html');
      expect(res.status).toBe(403);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain('You are signed in as <strong>Bob Example</strong>');
    }
    expectProblem(await admin.get('/me').set('Cookie', cookie), 403, 'permission_denied');
  });

  it('keeps the health check and the sign-out of admin open without a second factor', async () => {
    const health = await admin.get('/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', site: 'admin' });
    const cookie = await portalLogin(auth, 'bob', 'bob-password');
    const res = await admin.post('/logout').set('Origin', `http://${admin.host}`).set('Cookie', cookie);
    expect(res.status).toBe(303);
    expect((await shop.get('/me').set('Cookie', cookie)).status).toBe(401);
  });

  it('sends a password-only session from the admin audit page to the portal’s step-up page', async () => {
    const cookie = await portalLogin(auth, 'alice', 'alice-password');
    const res = await admin.get('/audit').set('Cookie', cookie).set('Accept', 'text/html');
    expect(res.status).toBe(302);
    const location = new URL(res.headers.location!);
    expect(`${location.host}${location.pathname}`).toBe(`${auth.host}/step-up`);
    expect(location.searchParams.get('return_to')).toBe(`http://${admin.host}/audit`);
    expect(location.searchParams.get('acr')).toBe('2fa');
  });

  it('refuses to revoke a session without a fresh second factor, in whatever case the path is written', async () => {
    const cookie = await portalLogin(auth, 'bob', 'bob-password');
    for (const path of ['/sessions/revocations', '/Sessions/Revocations', '/SESSIONS/REVOCATIONS/']) {
      const res = await auth.post(path).set('Origin', `http://${auth.host}`).set('Cookie', cookie).type('form').send({ session: 'x' });
      expectProblem(res, 401, 'insufficient_user_authentication');
    }
    // Written so that only a decoder reads it as the revocation path: refused before the portal sees it.
    const encoded = await auth
      .post('/sessions/%72evocations')
      .set('Origin', `http://${auth.host}`)
      .set('Cookie', cookie)
      .type('form')
      .send({ session: 'x' });
    expectProblem(encoded, 400, 'ambiguous_path');
  });

  it('lets a demo user enrol an authenticator app and then open the admin reports, the audit page and /me', async () => {
    const { cookie } = await enrolOverHttp(auth, `http://${auth.host}`, await portalLogin(auth, 'alice', 'alice-password'));
    const reports = await admin.get('/').set('Cookie', cookie).set('Accept', 'text/html');
    expect(reports.status).toBe(200);
    expect(reports.text).toContain('3 orders today');
    expect((await admin.get('/audit').set('Cookie', cookie).set('Accept', 'text/html')).status).toBe(200);
    expect((await admin.get('/me').set('Cookie', cookie)).body).toMatchObject({ id: 'directory:demo|alice', method: 'password' });
    // Two factors do not open what nobody may see: another address of admin is still its 404.
    expect((await admin.get('/no-such-page').set('Cookie', cookie).set('Accept', 'text/html')).status).toBe(404);
  });
});
