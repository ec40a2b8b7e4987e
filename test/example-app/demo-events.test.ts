import { createAuth } from '../../example-app/auth/auth';
import { createShop } from '../../example-app/shop/shop';
import { portalLogin, startInProcessSite, type InProcessSite } from '../helpers/demo-sites';
import { testRedisStore } from '../helpers/redis';

const ALICE = 'directory:demo|alice';

// The demo records its sites' security events (stderr and the Redis stream the activity page reads) and serves each
// site's metrics at /metrics on its own port, never through the front door.
describe('the demo’s security events and metrics', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let auth: InProcessSite;
  let shop: InProcessSite;
  beforeAll(async () => {
    redis = await testRedisStore('demo-events');
    auth = await startInProcessSite('auth', createAuth, redis.store);
    shop = await startInProcessSite('shop', createShop, redis.store);
  });
  afterAll(async () => {
    for (const site of [auth, shop]) await site?.running.close();
    await redis.cleanup();
  });

  it('writes a login’s events to the stream, shows them on the activity page, and counts them at /metrics', async () => {
    expect(
      (await auth.post('/login').set('Origin', `http://${auth.host}`).type('form').send({ username: 'alice', password: 'nope' })).status,
    ).toBe(401);
    const cookie = await portalLogin(auth, 'alice', 'alice-password');
    await auth.running.events.flush();
    const recent = await auth.running.events.recentEvents(ALICE, { limit: 10 });
    expect(recent.map((event) => [event.type, event.app])).toEqual([
      ['signin.succeeded', 'auth'],
      ['session.created', 'auth'],
    ]);

    const page = await auth.get('/activity').set('Cookie', cookie).set('Accept', 'text/html');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Signed in with your password');
    expect(page.text).toContain('Failed sign-in attempt (wrong password)');

    const metrics = await auth.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    expect(metrics.text).toMatch(/^sso_security_events_total\{type="signin\.succeeded",outcome="success",reason="authenticated"\} 1$/m);
    expect(metrics.text).toMatch(/^sso_security_events_total\{type="signin\.failed",outcome="failure",reason="bad_credentials"\} 1$/m);
    // Each site counts its own: the shop saw no sign-in.
    expect((await shop.get('/metrics')).text).not.toContain('type="signin.succeeded"');
    // Through the front door (which sets X-Forwarded-For) the metrics are not served.
    expect((await auth.get('/metrics').set('X-Forwarded-For', '203.0.113.9')).status).toBe(404);
  });
});
