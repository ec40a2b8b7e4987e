import express, { type Express } from 'express';
import request from 'supertest';
import { KeyValueCredentialStore } from '../../../lib/credentials/kv-credential-store';
import type { PasskeyRecords } from '../../../lib/credentials/passkey-records';
import { errorHandler, securityHeaders } from '../../../lib/http';
import { loginPortal, type LoginPortalOptions } from '../../../lib/portal/login-portal';
import { fileUserDirectory, type UserDirectory } from '../../../lib/portal/user-directory';
import { establishLogin, requireSession, ssoSession } from '../../../lib/session';
import { createRedisConnection, RedisStore, type KeyValueStore } from '../../../lib/store';
import { OptionsError } from '../../../lib/util/options';
import { hashPassword } from '../../../lib/util/password-hash';
import { setCookieValue } from '../../helpers/cookies';
import { expectProblem } from '../../helpers/problem';
import { startPrivateRedis, testRedisStore } from '../../helpers/redis';
import { SoftAuthenticator } from '../../helpers/soft-authenticator';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const SHOP = 'https://shop.example.test/cart';
const SECRET = 'passkey-test-secret-0123456789-abcdefghij';
const COOKIE = '__Secure-sso.sid';
const FAST = { N: 1024, r: 8, p: 1 };

let users: UserDirectory;

beforeAll(async () => {
  users = fileUserDirectory([
    { id: 'alice', username: 'alice', name: 'Alice', roles: ['admin'], passwordHash: await hashPassword('alice-password', FAST) },
    { id: 'bob', username: 'bob', name: 'Bob', roles: [], passwordHash: await hashPassword('bob-password', FAST) },
    { id: 'carol', username: 'carol', name: 'Carol', roles: [], passwordHash: await hashPassword('carol-password', FAST), disabled: true },
  ]);
});

function buildApp(
  store: KeyValueStore,
  credentials: PasskeyRecords,
  passkeys: Partial<NonNullable<LoginPortalOptions['passkeys']>> = {},
): Express {
  const app = express();
  app.set('trust proxy', true);
  app.use(securityHeaders());
  app.use(ssoSession({ store, cookieDomain: 'example.test', secret: SECRET, loginUrl: `${AUTH_ORIGIN}/login` }));
  // An app route that signs a directory user in an hour ago, for the "recent login" rule (and disabled users).
  app.post('/test/old-login', express.json(), async (req, res) => {
    const subject = String((req.body as { subject: string }).subject);
    const authTime = Math.floor(Date.now() / 1000) - 3600;
    await establishLogin(req, {
      source: 'directory:local',
      subject,
      name: subject,
      roles: [],
      method: 'password',
      authentication: { authTime },
    });
    res.status(204).end();
  });
  app.use(loginPortal({ users, store, passkeys: { credentials, ...passkeys } }));
  app.get('/whoami', requireSession(), (req, res) => {
    res.json({ id: req.user!.id, method: req.user!.method, roles: req.user!.roles, authentication: req.user!.authentication });
  });
  app.use(errorHandler({ log: false }));
  return app;
}

function fromPortal(test: request.Test, cookie?: string, origin = AUTH_ORIGIN, address = '203.0.113.5'): request.Test {
  test.set('Host', AUTH).set('X-Forwarded-Proto', 'https').set('Origin', origin).set('X-Forwarded-For', address);
  return cookie ? test.set('Cookie', cookie) : test;
}

describe('loginPortal passkeys', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let credentials: PasskeyRecords;
  let app: Express;

  beforeEach(async () => {
    redis = await testRedisStore('passkey-routes');
    credentials = new KeyValueCredentialStore(redis.store);
    app = buildApp(redis.store, credentials);
  });
  afterEach(() => redis.cleanup());

  async function passwordLogin(username: string): Promise<string> {
    const res = await fromPortal(request(app).post('/login'))
      .type('form')
      .send({ username, password: `${username}-password` });
    expect(res.status).toBe(302);
    return setCookieValue(res, COOKIE)!;
  }

  async function register(cookie: string, device = new SoftAuthenticator(), name = 'Laptop'): Promise<SoftAuthenticator> {
    const options = await fromPortal(request(app).post('/passkeys/registration/options'), cookie);
    expect(options.status).toBe(200);
    const res = await fromPortal(request(app).post('/passkeys/registration'), cookie).send({
      response: device.register(options.body, AUTH_ORIGIN),
      name,
    });
    expect(res.status).toBe(201);
    return device;
  }

  async function passkeySignIn(
    device: SoftAuthenticator,
    origin = AUTH_ORIGIN,
    body: Record<string, unknown> = {},
  ): Promise<request.Response> {
    const options = await fromPortal(request(app).post('/passkeys/sign-in/options'));
    expect(options.status).toBe(200);
    return fromPortal(request(app).post('/passkeys/sign-in')).send({ response: device.assert(options.body, origin), ...body });
  }

  it('registers a passkey after a password login, then signs in with it alone, as two phishing-resistant factors', async () => {
    const device = await register(await passwordLogin('alice'));
    const res = await passkeySignIn(device, AUTH_ORIGIN, { return_to: SHOP });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ redirect: SHOP });
    const me = await fromPortal(request(app).get('/whoami'), setCookieValue(res, COOKIE));
    expect(me.body).toMatchObject({
      id: 'directory:local|alice',
      method: 'passkey',
      roles: ['admin'],
      authentication: { acr: 'phr', amr: ['hwk', 'user'] },
    });
    const sessions = await fromPortal(request(app).get('/sessions'), setCookieValue(res, COOKIE));
    expect(sessions.text).toContain('signed in with a passkey');
    expect(sessions.text).toContain('<a href="/passkeys">Your passkeys</a>');
  });

  it('lists, renames and removes the signed-in user’s passkeys', async () => {
    const device = await register(await passwordLogin('alice'), new SoftAuthenticator({ backupEligible: true, backedUp: true }), 'Phone');
    // Alice has a passkey now: renaming or removing one takes a fresh second factor, here the passkey itself.
    const cookie = setCookieValue(await passkeySignIn(device), COOKIE)!;
    const page = await fromPortal(request(app).get('/passkeys'), cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Phone');
    expect(page.text).toContain('synced between your devices');
    expect(page.text).toContain('<script src="/portal-assets/passkeys.js" defer></script>');
    const renamed = await fromPortal(request(app).post('/passkeys/rename'), cookie)
      .type('form')
      .send({ credential: device.credentialId, name: 'Pixel' });
    expect(renamed.headers.location).toBe('/passkeys?renamed=1');
    expect((await credentials.findPasskey(device.credentialId))?.name).toBe('Pixel');
    const removed = await fromPortal(request(app).post('/passkeys/remove'), cookie).type('form').send({ credential: device.credentialId });
    expect(removed.headers.location).toBe('/passkeys?removed=1');
    expect(await credentials.findPasskey(device.credentialId)).toBeUndefined();
  });

  it("cannot rename or remove another user's passkey", async () => {
    const device = await register(await passwordLogin('alice'));
    const bob = await passwordLogin('bob');
    await fromPortal(request(app).post('/passkeys/rename'), bob).type('form').send({ credential: device.credentialId, name: 'Mine' });
    await fromPortal(request(app).post('/passkeys/remove'), bob).type('form').send({ credential: device.credentialId });
    expect(await credentials.findPasskey(device.credentialId)).toMatchObject({ userId: 'directory:local|alice', name: 'Laptop' });
  });

  it('requires a recent login to add a passkey, and offers to sign in again', async () => {
    const old = setCookieValue(await fromPortal(request(app).post('/test/old-login')).send({ subject: 'alice' }), COOKIE)!;
    expectProblem(await fromPortal(request(app).post('/passkeys/registration/options'), old), 401, 'recent_login_required');
    // Options fetched while the login was fresh do not help once it is old: the registration itself checks again.
    const fresh = await passwordLogin('alice');
    const options = await fromPortal(request(app).post('/passkeys/registration/options'), fresh);
    const response = new SoftAuthenticator().register(options.body, AUTH_ORIGIN);
    expectProblem(
      await fromPortal(request(app).post('/passkeys/registration'), old).send({ response, name: 'x' }),
      401,
      'recent_login_required',
    );
    const page = await fromPortal(request(app).get('/passkeys'), old);
    expect(page.text).toContain('href="/login?prompt=login&#38;return_to=https%3A%2F%2Fauth.example.test%2Fpasskeys"');
    expect(page.text).not.toContain('id="passkey-add"');
  });

  it('asks a user who has a passkey for a fresh second factor, not a password alone, before adding another', async () => {
    const device = await register(await passwordLogin('alice'));
    // A fresh password login (a stolen password, say) is one factor: it does not plant a second passkey.
    const password = await passwordLogin('alice');
    expectProblem(await fromPortal(request(app).post('/passkeys/registration/options'), password), 401, 'second_factor_required');
    const page = await fromPortal(request(app).get('/passkeys'), password);
    expect(page.text).toContain('sign in again with your passkey</a>');
    expect(page.text).not.toContain('id="passkey-add"');
    // Signed in with the passkey itself, the user may add another.
    const withPasskey = setCookieValue(await passkeySignIn(device), COOKIE)!;
    expect((await fromPortal(request(app).post('/passkeys/registration/options'), withPasskey)).status).toBe(200);
  });

  it('requires a recent login to rename or remove a passkey, and changes nothing without one', async () => {
    const fresh = await passwordLogin('bob');
    const device = await register(fresh);
    const old = setCookieValue(await fromPortal(request(app).post('/test/old-login')).send({ subject: 'bob' }), COOKIE)!;
    const rename = await fromPortal(request(app).post('/passkeys/rename'), old)
      .type('form')
      .send({ credential: device.credentialId, name: 'Gone' });
    expect(rename.status).toBe(401);
    expect(rename.text).toContain('Sign in again to rename a passkey.');
    const remove = await fromPortal(request(app).post('/passkeys/remove'), old).type('form').send({ credential: device.credentialId });
    expect(remove.status).toBe(401);
    expect(remove.text).toContain('Sign in again to remove a passkey.');
    expect(await credentials.findPasskey(device.credentialId)).toMatchObject({ name: 'Laptop' });
    const page = await fromPortal(request(app).get('/passkeys'), old);
    expect(page.text).toContain('To add, rename or remove a passkey, <a href="/login?prompt=login');
  });

  it('asks for a fresh second factor, not a password alone, to rename or remove a passkey', async () => {
    const device = await register(await passwordLogin('bob'));
    // A stolen password signs in with one factor: it must not strip the account of its passkey.
    const password = await passwordLogin('bob');
    expectProblem(
      await fromPortal(request(app).post('/passkeys/remove'), password)
        .set('Accept', 'application/json')
        .type('form')
        .send({ credential: device.credentialId }),
      401,
      'second_factor_required',
    );
    expectProblem(
      await fromPortal(request(app).post('/passkeys/rename'), password)
        .set('Accept', 'application/json')
        .type('form')
        .send({ credential: device.credentialId, name: 'Mine' }),
      401,
      'second_factor_required',
    );
    expect(await credentials.findPasskey(device.credentialId)).toMatchObject({ name: 'Laptop' });
    const withPasskey = setCookieValue(await passkeySignIn(device), COOKIE)!;
    const removed = await fromPortal(request(app).post('/passkeys/remove'), withPasskey)
      .type('form')
      .send({ credential: device.credentialId });
    expect(removed.headers.location).toBe('/passkeys?removed=1');
    expect(await credentials.findPasskey(device.credentialId)).toBeUndefined();
  });

  it('refuses passkey management without a session', async () => {
    expectProblem(await fromPortal(request(app).post('/passkeys/registration/options')), 401, 'session_required');
    const page = await fromPortal(request(app).get('/passkeys'));
    expect(page.status).toBe(303);
    expect(page.headers.location).toMatch(/^\/login\?return_to=/);
  });

  it.each([
    ['registration options', '/passkeys/registration/options'],
    ['registration', '/passkeys/registration'],
    ['rename', '/passkeys/rename'],
    ['remove', '/passkeys/remove'],
    ['sign-in options', '/passkeys/sign-in/options'],
    ['sign-in', '/passkeys/sign-in'],
  ])('refuses a cross-origin POST to %s', async (_label, path) => {
    const cookie = await passwordLogin('alice');
    expectProblem(await fromPortal(request(app).post(path), cookie, 'https://evil.test').send({}), 403, 'csrf_origin');
    expectProblem(await fromPortal(request(app).post(path), undefined, 'https://evil.test').send({}), 403, 'csrf_origin');
  });

  it('refuses an assertion made on another site and signs nobody in', async () => {
    const device = await register(await passwordLogin('alice'));
    const res = await passkeySignIn(device, 'https://evil.test');
    expectProblem(res, 401, 'passkey_refused');
    expect(setCookieValue(res, COOKIE)).toBeUndefined();
  });

  it('refuses a replayed assertion', async () => {
    const device = await register(await passwordLogin('alice'));
    const options = await fromPortal(request(app).post('/passkeys/sign-in/options'));
    const assertion = device.assert(options.body, AUTH_ORIGIN);
    expect((await fromPortal(request(app).post('/passkeys/sign-in')).send({ response: assertion })).status).toBe(200);
    expectProblem(await fromPortal(request(app).post('/passkeys/sign-in')).send({ response: assertion }), 401, 'passkey_refused');
  });

  it("signs in as the passkey's owner only: bob's passkey with alice's handle is refused", async () => {
    const alicesDevice = await register(await passwordLogin('alice'));
    const bobsDevice = await register(await passwordLogin('bob'));
    bobsDevice.userHandle = alicesDevice.userHandle;
    expectProblem(await passkeySignIn(bobsDevice), 401, 'passkey_refused');
  });

  it('refuses a passkey whose owner was disabled since', async () => {
    // carol's session comes from the app route; her passkey is stored directly, as if added before she was disabled.
    const device = new SoftAuthenticator();
    const old = buildApp(redis.store, credentials, { recentLoginSeconds: 7200 });
    const cookie = setCookieValue(await fromPortal(request(old).post('/test/old-login')).send({ subject: 'carol' }), COOKIE)!;
    const options = await fromPortal(request(old).post('/passkeys/registration/options'), cookie);
    expect(
      (await fromPortal(request(old).post('/passkeys/registration'), cookie).send({ response: device.register(options.body, AUTH_ORIGIN) }))
        .status,
    ).toBe(201);
    const res = await passkeySignIn(device);
    expectProblem(res, 401, 'passkey_refused');
    expect(setCookieValue(res, COOKIE)).toBeUndefined();
  });

  it('throttles failed passkey sign-ins per network, and a success does not count', async () => {
    app = buildApp(redis.store, credentials, { throttle: { failures: 3, windowSeconds: 600 } });
    const device = await register(await passwordLogin('alice'));
    expect((await passkeySignIn(device)).status).toBe(200);
    for (let i = 0; i < 3; i += 1) expectProblem(await passkeySignIn(device, 'https://evil.test'), 401, 'passkey_refused');
    const refused = await passkeySignIn(device);
    expectProblem(refused, 429, 'too_many_requests');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another network keeps its own budget.
    const options = await fromPortal(request(app).post('/passkeys/sign-in/options'));
    const other = await fromPortal(request(app).post('/passkeys/sign-in'), undefined, AUTH_ORIGIN, '198.51.100.7').send({
      response: device.assert(options.body, AUTH_ORIGIN),
    });
    expect(other.status).toBe(200);
  });

  it('limits the sign-in challenges one network may ask for, so nobody can fill the store with them', async () => {
    app = buildApp(redis.store, credentials, { challengesPerMinute: 3 });
    for (let i = 0; i < 3; i += 1) expect((await fromPortal(request(app).post('/passkeys/sign-in/options'))).status).toBe(200);
    const refused = await fromPortal(request(app).post('/passkeys/sign-in/options'));
    expectProblem(refused, 429, 'too_many_requests');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await fromPortal(request(app).post('/passkeys/sign-in/options'), undefined, AUTH_ORIGIN, '198.51.100.7')).status).toBe(200);
  });

  it('answers malformed input with 400 and changes nothing', async () => {
    const cookie = await passwordLogin('alice');
    expectProblem(await fromPortal(request(app).post('/passkeys/sign-in')).send({ response: 'nope' }), 400, 'invalid_passkey_response');
    expectProblem(await fromPortal(request(app).post('/passkeys/sign-in')).type('json').send('{"response":'), 400);
    expectProblem(
      await fromPortal(request(app).post('/passkeys/registration'), cookie).send({ response: {}, name: 'x'.repeat(65) }),
      400,
      'invalid_passkey_name',
    );
    expect(await credentials.listPasskeys('directory:local|alice')).toEqual([]);
  });

  it('offers passkeys on the login page through autofill and a button, with its script served by the portal', async () => {
    const page = await fromPortal(request(app).get('/login'));
    expect(page.text).toContain('autocomplete="username webauthn"');
    expect(page.text).toContain('id="passkey-sign-in"');
    expect(page.text).toContain('data-passkey-sign-in="/passkeys/sign-in"');
    expect(page.text).not.toMatch(/<script>|<script [^s]/);
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self'(;|$)/);
    const script = await fromPortal(request(app).get('/portal-assets/passkeys.js'));
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
    expect(script.text).toContain('SimpleWebAuthnBrowser');
    expect(script.text).toContain('useBrowserAutofill');
  });

  it('fails closed with 503 when Redis is down', async () => {
    const privateRedis = await startPrivateRedis();

    const client = createRedisConnection(privateRedis.url);
    const store = new RedisStore(client, { prefix: 'passkeys:' });
    try {
      const down = buildApp(store, new KeyValueCredentialStore(store));
      await privateRedis.stop();
      const res = await fromPortal(request(down).post('/passkeys/sign-in/options'));
      expectProblem(res, 503);
    } finally {
      await store.close().catch(() => undefined);
      client.disconnect();
      await privateRedis.stop();
    }
  });

  it('checks its options when the portal is created', () => {
    expect(() => buildApp(redis.store, credentials, { recentLoginSeconds: 5 })).toThrow(OptionsError);
    expect(() => buildApp(redis.store, credentials, { rpId: 'com' })).toThrow(/rpId/);
    expect(() => buildApp(redis.store, { findPasskey: 1 } as never)).toThrow(/CredentialStore/);
  });
});
