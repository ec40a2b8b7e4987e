import { randomBytes } from 'node:crypto';
import express from 'express';
import request from 'supertest';
import { errorHandler, KeySet, qrLogin, qrTokenIssuer, RedisStore, ssoSession, TokenService } from '../../lib';
import { GENERATED_REQUEST_ID, recordEvents, type EventRecorder } from '../helpers/event-recorder';
import {
  confirmAndCollect,
  cookiePair,
  createLogin,
  patchStatus,
  QR_DIRECTORY_SOURCE,
  SHOP_REDIRECT,
  startProvider,
  type ProviderHarness,
} from '../helpers/qr-harness';
import { startPrivateRedis, testPrefix, type PrivateRedis } from '../helpers/redis';

const alice = `${QR_DIRECTORY_SOURCE}|alice`;
const bob = `${QR_DIRECTORY_SOURCE}|bob`;

describe('QR login events', () => {
  let redis: PrivateRedis;
  let store: RedisStore;
  let recorder: EventRecorder;
  let idp: ProviderHarness;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    store = new RedisStore(redis.url, { prefix: testPrefix('qr-events') });
    recorder = recordEvents({ app: 'idp' });
    // The provider's TokenService records refresh-token reuse in the same events.
    const tokens = qrTokenIssuer(
      new TokenService({
        keys: KeySet.generate('ES256'),
        issuer: 'https://idp.example.test',
        store,
        accessTokenLifetimeSeconds: 7200,
        events: recorder.events,
      }),
    );
    idp = await startProvider(store, { rateLimits: false, events: recorder.events, tokens });
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await idp.close();
    await recorder.events.close();
    await store.close();
    await redis.stop();
  });

  it('records qr.scanned and qr.confirmed with the phone user and the relying app, never the auth_code', async () => {
    const login = await createLogin(idp.url);
    expect((await patchStatus(idp.url, login.authCode, 'scanned', 'alice')).status).toBe(200);
    expect((await patchStatus(idp.url, login.authCode, 'confirmed', 'alice')).status).toBe(200);
    const scanned = await recorder.only('qr.scanned');
    expect(scanned).toMatchObject({ outcome: 'success', reason: 'scanned', userId: alice, clientId: 'shop', app: 'idp' });
    expect(scanned.requestId).toMatch(GENERATED_REQUEST_ID);
    expect(await recorder.only('qr.confirmed')).toMatchObject({ outcome: 'success', reason: 'confirmed', userId: alice, clientId: 'shop' });
    expect(JSON.stringify(recorder.recorded)).not.toContain(login.authCode);
  });

  it('records qr.denied', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'bob');
    expect((await patchStatus(idp.url, login.authCode, 'denied', 'bob')).status).toBe(200);
    expect(await recorder.only('qr.denied')).toMatchObject({ outcome: 'failure', reason: 'denied', userId: bob, clientId: 'shop' });
  });

  it('records qr.refused (not_scanner) when another user tries to decide', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    await recorder.clear();
    expect((await patchStatus(idp.url, login.authCode, 'confirmed', 'bob')).status).toBe(403);
    expect(await recorder.only('qr.refused')).toMatchObject({ reason: 'not_scanner', userId: bob });
  });

  it('records qr.expired for a decision on an expired request', async () => {
    const login = await createLogin(idp.url);
    const key = `qr:{${login.authCode}}`;
    const record = JSON.parse((await store.get(key))!) as { expiresAt: number };
    record.expiresAt = Date.now() - 1000;
    await store.set(key, JSON.stringify(record), 600);
    expect((await patchStatus(idp.url, login.authCode, 'scanned', 'alice')).status).toBe(410);
    expect(await recorder.only('qr.expired')).toMatchObject({ outcome: 'failure', reason: 'expired', userId: alice });
  });

  it('records refresh_token.reused at the QR token endpoint, with the presenting request', async () => {
    const login = await createLogin(idp.url);
    const { code } = await confirmAndCollect(idp.url, login);
    const exchange = await fetch(`${idp.url}/sns/oauth2/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', appid: 'shop', secret: idp.shopSecret, code }).toString(),
    });
    const refreshToken = ((await exchange.json()) as { refresh_token: string }).refresh_token;
    const refresh = () =>
      fetch(`${idp.url}/sns/oauth2/refresh_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          appid: 'shop',
          secret: idp.shopSecret,
          refresh_token: refreshToken,
        }).toString(),
      });
    expect((await refresh()).status).toBe(200);
    await recorder.clear();
    expect((await refresh()).status).toBeGreaterThanOrEqual(400);
    const event = await recorder.only('refresh_token.reused');
    expect(event).toMatchObject({ reason: 'reused', clientId: 'shop', network: '127.0.0.1/32' });
    expect(event.requestId).toMatch(GENERATED_REQUEST_ID);
  });

  it("records the provider's store outage (503) in its events through the app's errorHandler", async () => {
    const login = await createLogin(idp.url);
    await redis.stop();
    try {
      const res = await fetch(`${idp.url}/sns/qr-logins/${login.authCode}/status?state=st-123`, {
        headers: { accept: 'application/json' },
      });
      expect(res.status).toBe(503);
      const body = (await res.json()) as { request_id: string };
      expect(await recorder.only('store.unavailable')).toMatchObject({
        requestId: body.request_id,
        path: '/sns/qr-logins/[redacted]/status',
      });
    } finally {
      await redis.start();
    }
  });
});

describe('QR sign-in events of the relying app', () => {
  let redis: PrivateRedis;
  let store: RedisStore;
  let recorder: EventRecorder;
  let idp: ProviderHarness;
  let app: express.Express;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    store = new RedisStore(redis.url, { prefix: testPrefix('qr-rp-events') });
    idp = await startProvider(store, { rateLimits: false });
    recorder = recordEvents({ app: 'shop' });
    const qr = qrLogin({
      providerUrl: idp.url,
      appid: 'shop',
      secret: idp.shopSecret,
      redirectUri: SHOP_REDIRECT,
      events: recorder.events,
    });
    app = express();
    app.set('trust proxy', 'loopback');
    app.use(
      ssoSession({
        store,
        cookieDomain: 'example.test',
        secret: randomBytes(32).toString('base64'),
        loginUrl: 'https://auth.example.test/login',
      }),
    );
    app.get('/login/qr', qr.login);
    app.get('/callback/qr', qr.callback);
    app.use(errorHandler({ log: false }));
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await idp.close();
    await recorder.events.close();
    await store.close();
    await redis.stop();
  });

  const get = (path: string, cookie = '') =>
    request(app)
      .get(path)
      .set('X-Forwarded-Proto', 'https')
      .set('Host', 'shop.example.test')
      .set('Accept', 'application/json')
      .set('Cookie', cookie);

  it('records signin.succeeded (qr) for a completed QR login', async () => {
    const start = await get('/login/qr');
    const cookie = cookiePair(start.headers['set-cookie'], '__Secure-sso.sid')!;
    const state = new URL(start.headers.location as string).searchParams.get('state')!;
    const login = await createLogin(idp.url, { state });
    const { code } = await confirmAndCollect(idp.url, login);
    const done = await get(`/callback/qr?code=${code}&state=${state}`, cookie);
    expect(done.status).toBe(302);
    expect(await recorder.only('signin.succeeded')).toMatchObject({
      method: 'qr',
      provider: 'shop',
      userId: expect.stringMatching(/^qr:.*\|/),
    });
    expect(await recorder.events.metrics.registry.metrics()).toMatch(/sso_login_duration_seconds_count\{method="qr",outcome="success"\} 1/);
  });

  it('records signin.failed (state_mismatch) for a callback this browser did not start', async () => {
    expect((await get('/callback/qr?code=abc&state=forged')).status).toBe(400);
    expect(await recorder.only('signin.failed')).toMatchObject({ reason: 'state_mismatch', method: 'qr' });
  });
});
