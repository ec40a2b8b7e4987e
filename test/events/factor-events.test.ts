import { randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import request from 'supertest';
import { KeyValueCredentialStore } from '../../lib/credentials/kv-credential-store';
import { errorHandler, securityHeaders } from '../../lib/http';
import { loginPortal } from '../../lib/portal/login-portal';
import { fileUserDirectory } from '../../lib/portal/user-directory';
import { requireSession, ssoSession } from '../../lib/session';
import { hashPassword } from '../../lib/util/password-hash';
import { AuthenticatorApp } from '../helpers/authenticator-app';
import { setCookieValue } from '../helpers/cookies';
import { GENERATED_REQUEST_ID, ISO_UTC, recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { testRedisStore } from '../helpers/redis';
import { SoftAuthenticator } from '../helpers/soft-authenticator';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const COOKIE = '__Secure-sso.sid';
const FAST = { N: 1024, r: 8, p: 1 };
const NAMES = ['totp1', 'totp2', 'totp3', 'totp4', 'pk1', 'pk2'];

/**
 * Second factors and passkeys at the portal, with the events given once to ssoSession: each action is recorded
 * as exactly the event the vocabulary names, with the factor, the user, the session handle and the request facts.
 */
describe('second factor and passkey events', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let recorder: EventRecorder;
  let app: Express;

  beforeAll(async () => {
    redis = await testRedisStore('factor-events');
    recorder = recordEvents({ app: 'auth' });
    const users = fileUserDirectory(
      await Promise.all(
        NAMES.map(async (name) => ({
          id: name,
          username: name,
          name,
          roles: [],
          passwordHash: await hashPassword(`${name}-password`, FAST),
        })),
      ),
    );
    const credentials = new KeyValueCredentialStore(redis.store);
    app = express();
    app.set('trust proxy', true);
    app.use(securityHeaders());
    app.use(
      ssoSession({
        store: redis.store,
        cookieDomain: 'example.test',
        secret: 'factor-events-secret-0123456789-abcdefghij',
        loginUrl: `${AUTH_ORIGIN}/login`,
        events: recorder.events,
      }),
    );
    app.use(
      loginPortal({
        users,
        store: redis.store,
        throttle: { perAccountAndNetwork: { failures: 2, windowSeconds: 900 } },
        twoFactor: { credentials, sealingKey: randomBytes(32), issuer: 'Example' },
        passkeys: { credentials, throttle: { failures: 1, windowSeconds: 900 } },
      }),
    );
    app.get('/whoami', requireSession(), (req, res) => res.json({ id: req.user!.id }));
    app.use(errorHandler({ log: false }));
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await recorder.events.close();
    await redis.cleanup();
  });

  /** A request from the portal's own pages, on `address`, carrying `cookie`. */
  function portal(test: request.Test, cookie?: string, address = '203.0.113.7'): request.Test {
    test.set('Host', AUTH).set('X-Forwarded-Proto', 'https').set('Origin', AUTH_ORIGIN).set('X-Forwarded-For', address);
    test.set('User-Agent', 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0');
    return cookie === undefined ? test : test.set('Cookie', cookie);
  }

  async function signIn(name: string): Promise<string> {
    const res = await portal(request(app).post('/login'))
      .type('form')
      .send({ username: name, password: `${name}-password` });
    expect(res.status).toBe(302);
    return setCookieValue(res, COOKIE)!;
  }

  /** Signs `name` in and enrols an authenticator app; returns the (rotated) cookie, the app and the recovery codes. */
  async function enrol(name: string): Promise<{ cookie: string; app: AuthenticatorApp; codes: string[] }> {
    let cookie = await signIn(name);
    const page = await portal(request(app).get('/two-factor/totp'), cookie).set('Accept', 'text/html');
    expect(page.status).toBe(200);
    const secret = /data-totp-secret>([A-Z2-7 ]+)</.exec(page.text)![1]!.replace(/ /g, '');
    const pending = /name="pending" value="([^"]*)"/.exec(page.text)![1]!;
    const authenticator = new AuthenticatorApp(secret);
    const done = await portal(request(app).post('/two-factor/totp'), cookie)
      .type('form')
      .send({ pending, code: await authenticator.nextCode(), return_to: '' });
    expect(done.status).toBe(200);
    cookie = setCookieValue(done, COOKIE) ?? cookie;
    const codes = [...done.text.matchAll(/<li><code>([A-Z0-9-]+)<\/code><\/li>/g)].map((match) => match[1]!);
    return { cookie, app: authenticator, codes };
  }

  function stepUp(cookie: string, method: string, code: string, address?: string): request.Test {
    return portal(request(app).post('/step-up'), cookie, address).type('form').send({ method, code, acr: '2fa', return_to: '' });
  }

  it('records factor.added for the authenticator app and its recovery codes', async () => {
    await enrol('totp1');
    await recorder.settled();
    const added = recorder.ofType('factor.added');
    expect(added).toHaveLength(2);
    expect(added[0]).toMatchObject({
      type: 'factor.added',
      outcome: 'success',
      reason: 'enrolled',
      factor: 'totp',
      userId: 'directory:local|totp1',
      app: 'auth',
      host: AUTH,
      network: '203.0.113.7/32',
      userAgent: 'Firefox 133 on Linux',
    });
    expect(added[0]!.time).toMatch(ISO_UTC);
    expect(added[0]!.requestId).toMatch(GENERATED_REQUEST_ID);
    expect(typeof added[0]!.sessionHandle).toBe('string');
    expect(added[1]).toMatchObject({ factor: 'recovery_codes', remaining: 10, userId: 'directory:local|totp1' });
  });

  it('records stepup.failed for a wrong code, then stepup.succeeded and factor.used for a right one', async () => {
    const { cookie, app: authenticator } = await enrol('totp2');
    await recorder.clear();
    const wrong = await stepUp(cookie, 'totp', '000000');
    expect(wrong.status).toBe(401);
    expect(await recorder.only('stepup.failed')).toMatchObject({
      outcome: 'failure',
      reason: 'wrong_code',
      factor: 'totp',
      userId: 'directory:local|totp2',
    });
    expect(recorder.ofType('stepup.succeeded')).toHaveLength(0);
    const right = await stepUp(cookie, 'totp', await authenticator.nextCode());
    expect(right.status).toBe(303);
    expect(await recorder.only('stepup.succeeded')).toMatchObject({ reason: 'authenticated', factor: 'totp', acr: '2fa' });
    expect(await recorder.only('factor.used')).toMatchObject({ reason: 'stepup', factor: 'totp', userId: 'directory:local|totp2' });
    // The events of the raised session carry its new handle, the one session.renewed announces.
    const renewed = await recorder.only('session.renewed');
    expect(recorder.ofType('stepup.succeeded')[0]!.sessionHandle).toBe(renewed.sessionHandle);
  });

  it('records a recovery code used with the codes remaining, new codes and the app removed', async () => {
    const enrolment = await enrol('totp3');
    const codes = enrolment.codes;
    let cookie = enrolment.cookie;
    await recorder.clear();
    const used = await stepUp(cookie, 'recovery', codes[0]!);
    expect(used.status).toBe(303);
    cookie = setCookieValue(used, COOKIE) ?? cookie;
    expect(await recorder.only('factor.used')).toMatchObject({ reason: 'stepup', factor: 'recovery_code', remaining: 9 });
    expect(await recorder.only('stepup.succeeded')).toMatchObject({ factor: 'recovery_code' });

    await recorder.clear();
    const regenerated = await portal(request(app).post('/two-factor/recovery-codes'), cookie).type('form').send({});
    expect(regenerated.status).toBe(200);
    expect(await recorder.only('factor.added')).toMatchObject({ reason: 'enrolled', factor: 'recovery_codes', remaining: 10 });

    await recorder.clear();
    const removed = await portal(request(app).post('/two-factor/totp/remove'), cookie).type('form').send({});
    expect(removed.status).toBe(303);
    await recorder.settled();
    expect(recorder.ofType('factor.removed').map((event) => [event.reason, event.factor, event.userId])).toEqual([
      ['self_service', 'totp', 'directory:local|totp3'],
      ['self_service', 'recovery_codes', 'directory:local|totp3'],
    ]);
  });

  it('records request.throttled (second_factor) once the factor throttle refuses', async () => {
    const { cookie } = await enrol('totp4');
    await recorder.clear();
    for (let attempt = 0; attempt < 2; attempt++) expect((await stepUp(cookie, 'totp', '000000', '198.51.100.4')).status).toBe(401);
    const refused = await stepUp(cookie, 'totp', '000000', '198.51.100.4');
    expect(refused.status).toBe(429);
    const event = await recorder.only('request.throttled');
    expect(event).toMatchObject({ reason: 'second_factor', method: 'stepup', userId: 'directory:local|totp4', network: '198.51.100.4/32' });
    expect(event.retryAfterSeconds).toBeGreaterThan(0);
    expect(recorder.ofType('stepup.failed')).toHaveLength(2);
  });

  async function registerPasskey(cookie: string, device: SoftAuthenticator): Promise<void> {
    const options = await portal(request(app).post('/passkeys/registration/options'), cookie);
    expect(options.status).toBe(200);
    const res = await portal(request(app).post('/passkeys/registration'), cookie).send({
      response: device.register(options.body, AUTH_ORIGIN),
      name: 'Laptop',
    });
    expect(res.status).toBe(201);
  }

  async function passkeySignIn(device: SoftAuthenticator, origin = AUTH_ORIGIN, address?: string): Promise<request.Response> {
    const options = await portal(request(app).post('/passkeys/sign-in/options'), undefined, address);
    expect(options.status).toBe(200);
    return portal(request(app).post('/passkeys/sign-in'), undefined, address).send({ response: device.assert(options.body, origin) });
  }

  it('records a passkey added, used to sign in, renamed, and removed', async () => {
    const cookie = await signIn('pk1');
    const device = new SoftAuthenticator();
    await recorder.clear();
    await registerPasskey(cookie, device);
    expect(await recorder.only('factor.added')).toMatchObject({ reason: 'enrolled', factor: 'passkey', userId: 'directory:local|pk1' });

    await recorder.clear();
    const signedIn = await passkeySignIn(device);
    expect(signedIn.status).toBe(200);
    expect(await recorder.only('signin.succeeded')).toMatchObject({ method: 'passkey', userId: 'directory:local|pk1' });
    expect(await recorder.only('factor.used')).toMatchObject({ reason: 'signin', factor: 'passkey', userId: 'directory:local|pk1' });
    expect(await recorder.only('session.created')).toMatchObject({ method: 'passkey' });
    // Renaming and removing a passkey take a fresh second factor: this passkey's own session.
    const withPasskey = setCookieValue(signedIn, COOKIE)!;

    await recorder.clear();
    const renamed = await portal(request(app).post('/passkeys/rename'), withPasskey)
      .type('form')
      .send({ credential: device.credentialId, name: 'Work laptop' });
    expect(renamed.status).toBe(303);
    const rename = await recorder.only('factor.renamed');
    expect(rename).toMatchObject({ reason: 'self_service', factor: 'passkey' });
    expect(JSON.stringify(rename)).not.toContain('Work laptop');

    await recorder.clear();
    const removed = await portal(request(app).post('/passkeys/remove'), withPasskey).type('form').send({ credential: device.credentialId });
    expect(removed.status).toBe(303);
    expect(await recorder.only('factor.removed')).toMatchObject({
      reason: 'self_service',
      factor: 'passkey',
      userId: 'directory:local|pk1',
    });
  });

  it('records a refused passkey sign-in, then request.throttled (passkey) once its throttle refuses', async () => {
    const cookie = await signIn('pk2');
    const device = new SoftAuthenticator();
    await registerPasskey(cookie, device);
    await recorder.clear();
    const address = '192.0.2.77';
    const refused = await passkeySignIn(device, 'https://evil.example', address);
    expect(refused.status).toBe(401);
    expect(await recorder.only('signin.failed')).toMatchObject({ reason: 'passkey_rejected', method: 'passkey', network: '192.0.2.77/32' });
    expect(recorder.ofType('signin.succeeded')).toHaveLength(0);

    await recorder.clear();
    const throttled = await passkeySignIn(device, AUTH_ORIGIN, address);
    expect(throttled.status).toBe(429);
    expect(await recorder.only('request.throttled')).toMatchObject({ reason: 'passkey', method: 'passkey', network: '192.0.2.77/32' });
    expect(recorder.ofType('signin.succeeded')).toHaveLength(0);
  });
});
