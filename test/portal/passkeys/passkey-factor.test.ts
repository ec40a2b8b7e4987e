import { randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import request from 'supertest';
import { KeyValueCredentialStore } from '../../../lib/credentials/kv-credential-store';
import { errorHandler, securityHeaders } from '../../../lib/http';
import { loginPortal } from '../../../lib/portal/login-portal';
import { fileUserDirectory, type UserDirectory } from '../../../lib/portal/user-directory';
import { requireSession, ssoSession } from '../../../lib/session';
import { hashPassword } from '../../../lib/util/password-hash';
import { setCookieValue } from '../../helpers/cookies';
import { expectProblem } from '../../helpers/problem';
import { testRedisStore } from '../../helpers/redis';
import { SoftAuthenticator } from '../../helpers/soft-authenticator';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const ADMIN = 'https://admin.example.test/users';
const SECRET = 'passkey-factor-secret-0123456789-abcdefghij';
const COOKIE = '__Secure-sso.sid';
const FAST = { N: 1024, r: 8, p: 1 };

let users: UserDirectory;

beforeAll(async () => {
  users = fileUserDirectory([
    { id: 'alice', username: 'alice', name: 'Alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
    { id: 'bob', username: 'bob', name: 'Bob', roles: [], passwordHash: await hashPassword('bob-password', FAST) },
  ]);
});

function send(test: request.Test, cookie?: string, origin = AUTH_ORIGIN): request.Test {
  test.set('Host', AUTH).set('X-Forwarded-Proto', 'https').set('X-Forwarded-For', '203.0.113.9').set('Origin', origin);
  return cookie ? test.set('Cookie', cookie) : test;
}

describe('a passkey as second factor on the step-up page', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let app: Express;

  beforeEach(async () => {
    redis = await testRedisStore('passkey-factor');
    const credentials = new KeyValueCredentialStore(redis.store);
    app = express();
    app.set('trust proxy', true);
    app.use(securityHeaders());
    app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: SECRET, loginUrl: `${AUTH_ORIGIN}/login` }));
    app.use(
      loginPortal({
        users,
        store: redis.store,
        twoFactor: { credentials, sealingKey: randomBytes(32), issuer: 'Example' },
        passkeys: { credentials },
      }),
    );
    app.get('/whoami', requireSession(), (req, res) => res.json({ id: req.user!.id, authentication: req.user!.authentication }));
    app.use(errorHandler({ log: false }));
  });
  afterEach(() => redis.cleanup());

  async function signInWithPasskey(username: string): Promise<{ cookie: string; device: SoftAuthenticator }> {
    const login = await send(request(app).post('/login'))
      .type('form')
      .send({ username, password: `${username}-password` });
    const cookie = setCookieValue(login, COOKIE)!;
    const device = new SoftAuthenticator();
    const options = await send(request(app).post('/passkeys/registration/options'), cookie);
    await send(request(app).post('/passkeys/registration'), cookie).send({
      response: device.register(options.body, AUTH_ORIGIN),
      name: 'Key',
    });
    return { cookie, device };
  }

  async function stepUpResponse(cookie: string, device: SoftAuthenticator, origin = AUTH_ORIGIN): Promise<string> {
    const options = await send(request(app).post('/passkeys/step-up/options'), cookie);
    expect(options.status).toBe(200);
    return JSON.stringify(device.assert(options.body, origin));
  }

  function submitStepUp(cookie: string, passkeyResponse: string): request.Test {
    return send(request(app).post('/step-up'), cookie)
      .type('form')
      .send({ method: 'passkey', acr: 'phr', return_to: ADMIN, passkey_response: passkeyResponse });
  }

  it('offers the passkey on the step-up page, with the script that signs its challenge', async () => {
    const { cookie } = await signInWithPasskey('alice');
    const page = await send(request(app).get(`/step-up?acr=phr&return_to=${encodeURIComponent(ADMIN)}`), cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-method="passkey"');
    expect(page.text).toContain('data-passkey-step-up="passkeys/step-up/options"');
    expect(page.text).toContain('<script src="/portal-assets/passkeys.js" defer></script>');
  });

  it("raises the current session to phr with the passkey's amr, under a new session id, and returns", async () => {
    const { cookie, device } = await signInWithPasskey('alice');
    const options = await send(request(app).post('/passkeys/step-up/options'), cookie);
    expect(options.body.allowCredentials.map((c: { id: string }) => c.id)).toEqual([device.credentialId]);
    const res = await submitStepUp(cookie, JSON.stringify(device.assert(options.body, AUTH_ORIGIN)));
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(ADMIN);
    const raised = setCookieValue(res, COOKIE)!;
    expect(raised).not.toBe(cookie);
    const me = await send(request(app).get('/whoami'), raised);
    expect(me.body).toMatchObject({ id: 'directory:local|alice', authentication: { acr: 'phr', amr: ['pwd', 'hwk', 'user'] } });
  });

  it("refuses another user's passkey and leaves the level as it was", async () => {
    const alice = await signInWithPasskey('alice');
    const bob = await signInWithPasskey('bob');
    const res = await submitStepUp(alice.cookie, await stepUpResponse(alice.cookie, bob.device));
    expect(res.status).toBe(401);
    const me = await send(request(app).get('/whoami'), alice.cookie);
    expect(me.body.authentication).toMatchObject({ acr: '1fa', amr: ['pwd'] });
  });

  it('refuses a replayed step-up response and one made on another site', async () => {
    const { cookie, device } = await signInWithPasskey('alice');
    const response = await stepUpResponse(cookie, device);
    const first = await submitStepUp(cookie, response);
    expect(first.status).toBe(303);
    const raised = setCookieValue(first, COOKIE)!;
    expect((await submitStepUp(raised, response)).status).toBe(401);
    expect((await submitStepUp(raised, await stepUpResponse(raised, device, 'https://evil.test'))).status).toBe(401);
    expect((await submitStepUp(raised, '{"not":"json"')).status).toBe(401);
  });

  it('gives step-up options only to a signed-in user, from the portal’s own origin', async () => {
    expectProblem(await send(request(app).post('/passkeys/step-up/options')), 401, 'session_required');
    const { cookie } = await signInWithPasskey('alice');
    expectProblem(await send(request(app).post('/passkeys/step-up/options'), cookie, 'https://evil.test'), 403, 'csrf_origin');
  });
});
