import express, { type Express } from 'express';
import request from 'supertest';
import {
  accessPolicy,
  basicCredentials,
  createPolicy,
  errorHandler,
  establishLogin,
  hashPassword,
  requireBasic,
  requirePermission,
  requireSession,
  ssoSession,
} from '../../lib';
import { setCookieValue } from '../helpers/cookies';
import { GENERATED_REQUEST_ID, ISO_UTC, recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { startProvider, type ProviderHarness } from '../helpers/qr-harness';
import { testRedisStore } from '../helpers/redis';

const HOST = 'app.example.test';
const COOKIE = '__Secure-sso.sid';
const FAST = { N: 1024, r: 8, p: 1 };

/**
 * Refusals by the access rules, permissions and sessions, and Basic sign-ins, each recorded as exactly one event
 * naming the rule, the route and the permission; a plain pass records nothing.
 */
describe('access and Basic events', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let app: Express;

  beforeAll(async () => {
    redis = await testRedisStore('access-events');
    recorder = recordEvents({ app: 'shop' });
    const policy = createPolicy({ roles: { clerk: { permissions: ['read:reports:*'] } } });
    app = express();
    app.set('trust proxy', true);
    app.use(
      ssoSession({
        store: redis.store,
        cookieDomain: 'example.test',
        secret: 'access-events-secret-0123456789-abcdefghij',
        loginUrl: 'https://auth.example.test/login',
        events: recorder.events,
      }),
    );
    app.post('/test/login/:name', async (req, res) => {
      const name = String(req.params.name);
      await establishLogin(req, {
        source: 'directory:local',
        subject: name,
        name,
        roles: name === 'ada' ? ['admin'] : ['clerk'],
        method: 'password',
      });
      res.sendStatus(204);
    });
    const metricsUser = { passwordHash: await hashPassword('scrape-password-0123', FAST) };
    app.use('/metrics', requireBasic({ realm: 'metrics', verify: basicCredentials({ prometheus: metricsUser }) }), (_req, res) => {
      res.type('text').send('ok');
    });
    app.use(
      '/site',
      accessPolicy({
        policy,
        rules: [
          { path: '/open', policy: 'bypass' },
          { path: '/closed', policy: 'deny' },
          { path: '/admin', policy: 'one_factor', roles: ['admin'] },
        ],
      }),
      (_req, res) => {
        res.json({ ok: true });
      },
    );
    app.delete(
      '/reports/:id',
      requireSession(),
      requirePermission('delete', (req) => `reports:${String(req.params.id)}`, { policy }),
      (_req, res) => {
        res.sendStatus(204);
      },
    );
    app.get('/payouts', requireSession({ acr: '2fa' }), (_req, res) => {
      res.json({ ok: true });
    });
    app.use(errorHandler({ log: false }));
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await recorder.events.close();
    await redis.cleanup();
  });

  function on(test: request.Test, cookie?: string): request.Test {
    test.set('Host', HOST).set('X-Forwarded-Proto', 'https').set('X-Forwarded-For', '203.0.113.20').set('Accept', 'application/json');
    return cookie === undefined ? test : test.set('Cookie', cookie);
  }

  async function signIn(name: string): Promise<string> {
    const res = await on(request(app).post(`/test/login/${name}`)).set('Origin', `https://${HOST}`);
    expect(res.status).toBe(204);
    await recorder.clear();
    return setCookieValue(res, COOKIE)!;
  }

  it('records access.denied (rule_denied) with the rule and the route, and nothing for a bypass', async () => {
    expect((await on(request(app).get('/site/open'))).status).toBe(200);
    await recorder.settled();
    expect(recorder.recorded).toHaveLength(0);
    expect((await on(request(app).get('/site/closed'))).status).toBe(403);
    const event = await recorder.only('access.denied');
    expect(event).toEqual({
      time: expect.stringMatching(ISO_UTC),
      type: 'access.denied',
      outcome: 'failure',
      reason: 'rule_denied',
      requestId: expect.stringMatching(GENERATED_REQUEST_ID),
      app: 'shop',
      host: HOST,
      network: '203.0.113.20/32',
      route: '/site/closed',
      rule: 'rules[1]',
    });
  });

  it('records access.denied (no_rule) for a path no rule names, the default deciding', async () => {
    expect((await on(request(app).get('/site/elsewhere'))).status).toBe(403);
    expect(await recorder.only('access.denied')).toMatchObject({ reason: 'no_rule', rule: 'default', route: '/site/elsewhere' });
  });

  it('records access.denied (permission_denied) for a signed-in user without the rule’s role', async () => {
    const cookie = await signIn('carl');
    expect((await on(request(app).get('/site/admin'), cookie)).status).toBe(403);
    expect(await recorder.only('access.denied')).toMatchObject({
      reason: 'permission_denied',
      rule: 'rules[2]',
      route: '/site/admin',
      userId: 'directory:local|carl',
      sessionHandle: expect.any(String),
    });
  });

  it('records access.denied from requirePermission with the permission and the route pattern, never the value', async () => {
    const cookie = await signIn('cleo');
    const res = await on(request(app).delete('/reports/42'), cookie).set('Origin', `https://${HOST}`);
    expect(res.status).toBe(403);
    expect(await recorder.only('access.denied')).toMatchObject({
      reason: 'permission_denied',
      permission: 'delete reports:42',
      route: '/reports/:id',
      userId: 'directory:local|cleo',
    });
  });

  it('records access.denied (not_authenticated) for an API call without a session, none for a browser sent to log in', async () => {
    expect((await on(request(app).get('/payouts'))).status).toBe(401);
    expect(await recorder.only('access.denied')).toMatchObject({ reason: 'not_authenticated', route: '/payouts' });
    await recorder.clear();
    const navigation = await on(request(app).get('/payouts')).set('Accept', 'text/html');
    expect(navigation.status).toBe(302);
    await recorder.settled();
    expect(recorder.ofType('access.denied')).toHaveLength(0);
  });

  it('records access.denied (insufficient_authentication) for an API call of a one-factor session', async () => {
    const cookie = await signIn('cora');
    expect((await on(request(app).get('/payouts'), cookie)).status).toBe(401);
    expect(await recorder.only('access.denied')).toMatchObject({ reason: 'insufficient_authentication', userId: 'directory:local|cora' });
  });

  it('records Basic sign-ins: bad_credentials with the username hashed, success with the user, nothing without credentials', async () => {
    const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    expect((await on(request(app).get('/metrics'))).status).toBe(401);
    await recorder.settled();
    expect(recorder.recorded).toHaveLength(0);

    expect((await on(request(app).get('/metrics')).set('Authorization', basic('prometheus', 'wrong-password'))).status).toBe(401);
    const failed = await recorder.only('signin.failed');
    expect(failed).toMatchObject({
      reason: 'bad_credentials',
      method: 'basic',
      provider: 'basic:credentials',
      usernameHash: expect.any(String),
    });
    expect(JSON.stringify(failed)).not.toContain('prometheus');

    await recorder.clear();
    expect((await on(request(app).get('/metrics')).set('Authorization', basic('prometheus', 'scrape-password-0123'))).status).toBe(200);
    expect(await recorder.only('signin.succeeded')).toMatchObject({ method: 'basic', userId: 'basic:credentials|prometheus' });
    expect(JSON.stringify(recorder.recorded)).not.toContain('scrape-password-0123');
  });
});

describe('QR provider throttle events', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let idp: ProviderHarness;

  beforeAll(async () => {
    redis = await testRedisStore('qr-throttle-events');
    recorder = recordEvents({ app: 'idp' });
    idp = await startProvider(redis.store, { rateLimits: { qrconnectPerMinute: 1, tokenPerMinute: 1 }, events: recorder.events });
  });
  afterAll(async () => {
    await idp.close();
    await recorder.events.close();
    await redis.cleanup();
  });

  it('records request.throttled naming the QR limit that refused', async () => {
    await fetch(`${idp.url}/sns/oauth2/qrconnect?appid=shop`);
    expect((await fetch(`${idp.url}/sns/oauth2/qrconnect?appid=shop`)).status).toBe(429);
    expect(await recorder.only('request.throttled')).toMatchObject({ reason: 'qr_requests', method: 'qr', retryAfterSeconds: 60 });
    await recorder.clear();
    await fetch(`${idp.url}/sns/oauth2/access_token?appid=shop`);
    expect((await fetch(`${idp.url}/sns/oauth2/access_token?appid=shop`)).status).toBe(429);
    expect(await recorder.only('request.throttled')).toMatchObject({ reason: 'qr_tokens', method: 'qr' });
    const metrics = await recorder.events.metrics.registry.getSingleMetricAsString('sso_throttle_active');
    expect(metrics).toMatch(/sso_throttle_active\{limit="qr_tokens"\} 1/);
  });
});
