import express, { type Express } from 'express';
import request from 'supertest';
import {
  errorHandler,
  fileUserDirectory,
  hashPassword,
  loginPortal,
  securityHeaders,
  ssoSession,
  type SsoSessionMiddleware,
} from '../../lib';
import { hashUsername } from '../../lib/events/security-event';
import { createHmac, createSecretKey } from 'node:crypto';
import { GENERATED_REQUEST_ID, ISO_UTC, recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { testRedisStore } from '../helpers/redis';
import { sessionIdOf } from '../helpers/sso-apps';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const FAST = { N: 1024, r: 8, p: 1 };
const SECRET = 'portal-events-secret-0123456789-abcdefghij';
const HASH_KEY = 'test-username-hash-key-0123456789abcdef';
const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0';

/** The usernameHash events carry for `username` under the recorder's key (as securityEvents derives it). */
function expectedHash(username: string): string {
  const key = createSecretKey(createHmac('sha256', HASH_KEY).update('express-sso-kit username hash').digest());
  return hashUsername(key, username);
}

describe('password sign-in events', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let sessions: SsoSessionMiddleware;
  let app: Express;

  beforeAll(async () => {
    redis = await testRedisStore('portal-events');
    recorder = recordEvents({ app: 'auth' });
    const users = fileUserDirectory([
      { id: 'alice', username: 'alice', name: 'Alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
    ]);
    app = express();
    app.set('trust proxy', true);
    app.use(securityHeaders());
    // The events are given once, to the session: the portal after it finds them on req.sso.
    sessions = ssoSession({
      store: redis.store,
      cookieDomain: 'example.test',
      secret: SECRET,
      loginUrl: `${AUTH_ORIGIN}/login`,
      events: recorder.events,
    });
    app.use(sessions);
    app.use(loginPortal({ users, store: redis.store, throttle: { perAccountAndNetwork: { failures: 2, windowSeconds: 900 } } }));
    app.use(errorHandler({ log: false }));
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await recorder.events.close();
    await redis.cleanup();
  });

  function login(username: string, password: string, address = '203.0.113.5'): request.Test {
    return request(app)
      .post('/login')
      .set('Host', AUTH)
      .set('X-Forwarded-Proto', 'https')
      .set('Origin', AUTH_ORIGIN)
      .set('User-Agent', FIREFOX)
      .set('X-Forwarded-For', address)
      .type('form')
      .send({ username, password, return_to: '' });
  }

  it('records signin.failed (bad_credentials) with the username only as a keyed hash', async () => {
    const res = await login('Alice', 'wrong-password');
    expect(res.status).toBe(401);
    const event = await recorder.only('signin.failed');
    expect(event).toEqual({
      time: expect.stringMatching(ISO_UTC),
      type: 'signin.failed',
      outcome: 'failure',
      reason: 'bad_credentials',
      requestId: expect.stringMatching(GENERATED_REQUEST_ID),
      app: 'auth',
      host: AUTH,
      method: 'password',
      usernameHash: expectedHash('alice'),
      network: '203.0.113.5/32',
      userAgent: 'Firefox 133 on Windows',
    });
    expect(res.headers['x-request-id']).toBe(event.requestId);
    expect(JSON.stringify(recorder.recorded)).not.toMatch(/alice|wrong-password/i);
  });

  it('records signin.failed (missing_credentials) for an empty password', async () => {
    expect((await login('alice', '')).status).toBe(400);
    expect(await recorder.only('signin.failed')).toMatchObject({ reason: 'missing_credentials', usernameHash: expectedHash('alice') });
  });

  it('records signin.succeeded and session.created for a sign-in, with the user and the new session', async () => {
    const res = await login('alice', 'alice-password', '2001:db8:5:6:a:b:c:d');
    expect(res.status).toBe(302);
    const cookie = (res.headers['set-cookie'] as unknown as string[]).find((line) => line.startsWith('__Secure-sso.sid='))!.split(';')[0]!;
    const handle = sessions.manager.handleOf(sessionIdOf(cookie));
    expect(await recorder.only('signin.succeeded')).toMatchObject({
      outcome: 'success',
      reason: 'authenticated',
      method: 'password',
      userId: 'directory:local|alice',
      usernameHash: expectedHash('alice'),
      sessionHandle: handle,
      network: '2001:db8:5:6:0:0:0:0/64',
    });
    expect(await recorder.only('session.created')).toMatchObject({
      userId: 'directory:local|alice',
      sessionHandle: handle,
      method: 'password',
    });
    expect(
      (await recorder.events.metrics.registry.metrics()).match(
        /sso_login_duration_seconds_count\{method="password",outcome="success"\} (\d+)/,
      )?.[1],
    ).toBe('1');
  });

  it('records request.throttled with the limit that refused, and no signin.failed', async () => {
    for (let i = 0; i < 2; i += 1) expect((await login('alice', `wrong-${i}`, '198.51.100.20')).status).toBe(401);
    await recorder.clear();
    const res = await login('alice', 'alice-password', '198.51.100.20');
    expect(res.status).toBe(429);
    expect(await recorder.only('request.throttled')).toMatchObject({
      reason: 'login_per_account_and_network',
      method: 'password',
      usernameHash: expectedHash('alice'),
      retryAfterSeconds: Number(res.headers['retry-after']),
    });
    expect(recorder.ofType('signin.failed')).toEqual([]);
    expect(await recorder.events.metrics.registry.metrics()).toContain(
      'sso_throttle_refusals_total{limit="login_per_account_and_network"} 1',
    );
  });

  it('records csrf.refused for a login form posted from another site', async () => {
    const res = await login('alice', 'alice-password').set('Origin', 'https://evil.test');
    expect(res.status).toBe(403);
    expect(await recorder.only('csrf.refused')).toMatchObject({ reason: 'origin_not_allowed', guard: 'loginPortal' });
    expect(recorder.ofType('signin.failed')).toEqual([]);
  });
});
