import { createIdp } from '../../example-app/idp/idp';
import { startInProcessSite, testDemoConfig, type InProcessSite } from '../helpers/demo-sites';
import { testRedisStore } from '../helpers/redis';

// The demo identity provider's own pages answer a failure (an unknown or expired interaction) with an error,
// on Express 5 and on Express 4 (npm run test:express4), where an async handler's rejection is not passed on by
// Express: the request would hang and Node would end the process.
describe('demo identity provider: its interaction pages', () => {
  const config = testDemoConfig();
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let idp: InProcessSite;

  beforeAll(async () => {
    redis = await testRedisStore('demo-idp');
    idp = await startInProcessSite('idp', createIdp, redis.store, config);
  });
  afterAll(async () => {
    await idp.running.close();
    await redis.cleanup();
  });

  it('answers an unknown interaction with an error page, not a hanging request', async () => {
    const res = await idp
      .get('/interaction/no-such-interaction')
      .set('X-Forwarded-Proto', 'https')
      .set('Accept', 'text/html')
      .timeout(5_000);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });

  it('answers a sign-in posted to an unknown interaction with a 4xx page (a problem to programs), not a hanging request', async () => {
    const post = (accept: string) =>
      idp
        .post('/interaction/no-such-interaction/login')
        .set('X-Forwarded-Proto', 'https')
        .set('Accept', accept)
        .type('form')
        .send({ username: 'alice', password: 'wrong' })
        .timeout(5_000);
    const page = await post('text/html');
    expect(page.status).toBeGreaterThanOrEqual(400);
    expect(page.status).toBeLessThan(500);
    // The browser's form post gets a page, not a JSON document on screen.
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('<html lang="en">');
    const problem = await post('application/json');
    expect(problem.status).toBe(page.status);
    expect(problem.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});
