import { Secret, TOTP } from 'otpauth';
import { createAdmin } from '../../example-app/admin/admin';
import { createAuth } from '../../example-app/auth/auth';
import { createShop } from '../../example-app/shop/shop';
import { setCookieValue } from '../helpers/cookies';
import { portalLogin, startInProcessSite, type InProcessSite } from '../helpers/demo-sites';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

// The demo's access policy (example-app/common/access.ts): shop one factor, admin's audit page two factors,
// revoking a session at the portal a fresh second factor; demo users enrol an authenticator app at the portal.
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

  it('lets a password login into the shop and the admin reports', async () => {
    const cookie = await portalLogin(auth, 'alice', 'alice-password');
    expect((await shop.get('/').set('Cookie', cookie).set('Accept', 'text/html')).status).toBe(200);
    expect((await admin.get('/').set('Cookie', cookie).set('Accept', 'text/html')).status).toBe(200);
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

  it('refuses to revoke a session without a fresh second factor', async () => {
    const cookie = await portalLogin(auth, 'bob', 'bob-password');
    const res = await auth
      .post('/sessions/revocations')
      .set('Origin', `http://${auth.host}`)
      .set('Cookie', cookie)
      .type('form')
      .send({ session: 'x' });
    expectProblem(res, 401, 'insufficient_user_authentication');
  });

  it('lets a demo user enrol an authenticator app and then open the audit page', async () => {
    let cookie = await portalLogin(auth, 'alice', 'alice-password');
    const page = await auth.get('/two-factor/totp').set('Cookie', cookie).set('Accept', 'text/html');
    expect(page.status).toBe(200);
    const secret = /data-totp-secret>([A-Z2-7 ]+)</.exec(page.text)![1]!.replace(/ /g, '');
    const pending = /name="pending" value="([^"]+)"/.exec(page.text)![1]!;
    const code = new TOTP({ secret: Secret.fromBase32(secret) }).generate();
    const done = await auth
      .post('/two-factor/totp')
      .set('Origin', `http://${auth.host}`)
      .set('Cookie', cookie)
      .type('form')
      .send({ pending, code, return_to: '' });
    expect(done.status).toBe(200);
    cookie = setCookieValue(done, 'sso.sid') ?? cookie;
    expect((await admin.get('/audit').set('Cookie', cookie).set('Accept', 'text/html')).status).toBe(200);
  });
});
