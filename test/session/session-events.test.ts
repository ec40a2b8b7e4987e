import {
  csrfGuard,
  logoutEverywhere,
  raiseSessionAuthentication,
  RedisStore,
  requireSession,
  ssoSession,
  type SsoSessionMiddleware,
} from '../../lib';
import { until } from '../helpers/cached-session-apps';
import { guarded } from '../../lib/http/handlers';
import { GENERATED_REQUEST_ID, ISO_UTC, recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { testRedisStore } from '../helpers/redis';
import { loginAs, sessionCookieOf, sessionIdOf, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';

const HOST = 'shop.example.test';
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

describe('session events', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let sessions: SsoSessionMiddleware;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('session-events');
    recorder = recordEvents({ app: 'shop' });
    sessions = ssoSession(ssoOptions({ store: redis.store, events: recorder.events }));
    shop = await startSsoApp(sessions, {
      routes: (app) => {
        app.post(
          '/raise',
          requireSession(),
          guarded(async (req, res) => {
            await raiseSessionAuthentication(req, 'otp');
            res.status(204).end();
          }),
        );
        app.post(
          '/admin/users/:id/logout',
          requireSession(),
          guarded(async (req, res) => {
            res.json({ ended: await logoutEverywhere(req, userId(String(req.params.id))) });
          }),
        );
        app.post('/guarded', csrfGuard(), (_req, res) => {
          res.status(204).end();
        });
      },
    });
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await shop.close();
    await recorder.events.close();
    await redis.cleanup();
  });

  const handleOf = (cookie: string) => sessions.manager.handleOf(sessionIdOf(cookie));

  it('records session.created at login, with the request facts and the handle, never the session id', async () => {
    const res = await via(shop.server, HOST, 'post', '/login')
      .set('User-Agent', CHROME)
      .send({ id: 'ada', name: 'Ada', roles: [], method: 'password' });
    expect(res.status).toBe(204);
    const cookie = sessionCookieOf(res)!;
    const event = await recorder.only('session.created');
    expect(event).toEqual({
      time: expect.stringMatching(ISO_UTC),
      type: 'session.created',
      outcome: 'success',
      reason: 'login',
      requestId: res.headers['x-request-id'],
      app: 'shop',
      host: HOST,
      method: 'password',
      userId: userId('ada'),
      sessionHandle: handleOf(cookie),
      network: '127.0.0.1/32',
      userAgent: 'Chrome 131 on Linux',
    });
    expect(event.requestId).toMatch(GENERATED_REQUEST_ID);
    expect(JSON.stringify(event)).not.toContain(sessionIdOf(cookie));
  });

  it('records nothing for requests a live session simply authenticates', async () => {
    const cookie = await loginAs(shop.server, HOST, { id: 'quiet' });
    await recorder.clear();
    for (let i = 0; i < 5; i += 1) expect((await via(shop.server, HOST, 'get', '/me', cookie)).status).toBe(200);
    expect(await recorder.settled()).toEqual([]);
  });

  it('records session.ended (logout) with the ended session', async () => {
    const cookie = await loginAs(shop.server, HOST, { id: 'bea' });
    await recorder.clear();
    expect((await via(shop.server, HOST, 'post', '/logout', cookie)).status).toBe(204);
    expect(await recorder.only('session.ended')).toMatchObject({
      reason: 'logout',
      outcome: 'success',
      userId: userId('bea'),
      sessionHandle: handleOf(cookie),
    });
  });

  it('records session.ended (everywhere) with how many ended', async () => {
    await loginAs(shop.server, HOST, { id: 'cy' });
    const cookie = await loginAs(shop.server, HOST, { id: 'cy' });
    await recorder.clear();
    expect((await via(shop.server, HOST, 'post', '/logout-everywhere', cookie)).body).toEqual({ ended: 2 });
    const event = await recorder.only('session.ended');
    expect(event).toMatchObject({ reason: 'everywhere', userId: userId('cy'), count: 2 });
    expect(event.actorId).toBeUndefined();
  });

  it("records session.ended (admin) for another user's sessions, with who ended them and not the admin's session", async () => {
    await loginAs(shop.server, HOST, { id: 'dee' });
    const admin = await loginAs(shop.server, HOST, { id: 'root' });
    await recorder.clear();
    expect((await via(shop.server, HOST, 'post', '/admin/users/dee/logout', admin)).body).toEqual({ ended: 1 });
    const event = await recorder.only('session.ended');
    expect(event).toMatchObject({ reason: 'admin', userId: userId('dee'), actorId: userId('root'), count: 1 });
    expect(event.sessionHandle).toBeUndefined();
  });

  it('records session.ended (revoked) for a session ended through the sessions resource', async () => {
    const other = await loginAs(shop.server, HOST, { id: 'eve' });
    const cookie = await loginAs(shop.server, HOST, { id: 'eve' });
    await recorder.clear();
    const res = await via(shop.server, HOST, 'delete', `/account/sessions/${handleOf(other)}`, cookie);
    expect(res.status).toBe(204);
    expect(await recorder.only('session.ended')).toMatchObject({
      reason: 'revoked',
      userId: userId('eve'),
      sessionHandle: handleOf(other),
    });
  });

  it('records session.ended (expired) when a request finds its session past the idle timeout', async () => {
    const cookie = await loginAs(shop.server, HOST, { id: 'fay' });
    const key = `${redis.prefix}sess:${sessionIdOf(cookie)}`;
    const record = JSON.parse((await redis.client.get(key))!) as { meta: { createdAt: number; lastSeenAt: number } };
    record.meta.lastSeenAt -= 3 * 3600 * 1000;
    record.meta.createdAt -= 3 * 3600 * 1000;
    await redis.client.set(key, JSON.stringify(record), 'KEEPTTL');
    await recorder.clear();
    const res = await via(shop.server, HOST, 'get', '/public', cookie);
    expect(res.body).toEqual({ user: null });
    expect(await recorder.only('session.ended')).toMatchObject({
      reason: 'expired',
      userId: userId('fay'),
      sessionHandle: handleOf(cookie),
      requestId: res.headers['x-request-id'],
    });
  });

  it('records session.renewed after a step-up, naming the new and the previous handle', async () => {
    const cookie = await loginAs(shop.server, HOST, { id: 'gus' });
    await recorder.clear();
    const res = await via(shop.server, HOST, 'post', '/raise', cookie);
    expect(res.status).toBe(204);
    const renewed = sessionCookieOf(res)!;
    expect(await recorder.only('session.renewed')).toMatchObject({
      reason: 'step_up',
      userId: userId('gus'),
      sessionHandle: handleOf(renewed),
      previousSessionHandle: handleOf(cookie),
    });
  });

  it('records csrf.refused where the session cookie refuses a cross-site request, with the user it rode on', async () => {
    const cookie = await loginAs(shop.server, HOST, { id: 'hal' });
    await recorder.clear();
    const res = await via(shop.server, HOST, 'post', '/orders', cookie)
      .set('Origin', 'https://evil.test')
      .set('Sec-Fetch-Site', 'cross-site');
    expect(res.status).toBe(403);
    expect(await recorder.only('csrf.refused')).toMatchObject({
      outcome: 'failure',
      reason: 'cross_site',
      guard: 'ssoSession',
      userId: userId('hal'),
      requestId: res.headers['x-request-id'],
    });
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
  });

  it('records csrf.refused of csrfGuard in the session events', async () => {
    const res = await via(shop.server, HOST, 'post', '/guarded').set('Cookie', 'theme=dark').set('Origin', 'https://evil.test');
    expect(res.status).toBe(403);
    expect(await recorder.only('csrf.refused')).toMatchObject({ reason: 'origin_not_allowed', guard: 'csrfGuard' });
  });
});

describe('session cache metrics', () => {
  it('counts cache hits and misses of ssoSession({ cache }) at scrape time', async () => {
    const redis = await testRedisStore('cache-metrics');
    const recorder = recordEvents();
    const client = redis.client.duplicate();
    const store = new RedisStore(client, { prefix: redis.prefix });
    const sessions = ssoSession(ssoOptions({ store, cache: {}, events: recorder.events }));
    const shop = await startSsoApp(sessions);
    try {
      await until(() => sessions.cache!.ready, 10_000, 'the cache tracking');
      const cookie = await loginAs(shop.server, HOST, { id: 'ivy' });
      for (let i = 0; i < 4; i += 1) expect((await via(shop.server, HOST, 'get', '/me', cookie)).status).toBe(200);
      const text = await recorder.events.metrics.registry.metrics();
      const count = (result: string) =>
        Number(new RegExp(`sso_session_cache_lookups_total\\{result="${result}"\\} (\\d+)`).exec(text)?.[1]);
      expect(count('miss')).toBeGreaterThanOrEqual(1);
      expect(count('hit')).toBeGreaterThanOrEqual(3);
      expect(count('hit') + count('miss')).toBe(4);
      expect(text).toMatch(/sso_session_cache_entries 1\n/);
    } finally {
      await shop.close();
      await sessions.manager.close();
      await store.close();
      client.disconnect();
      await recorder.events.close();
      await redis.cleanup();
    }
  });
});
