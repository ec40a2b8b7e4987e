import { randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import request from 'supertest';
import { KeyValueCredentialStore } from '../../lib/credentials';
import { errorHandler, securityHeaders } from '../../lib/http';
import { loginPortal } from '../../lib/portal/login-portal';
import { renderSessionsPage } from '../../lib/portal/portal-pages';
import { renderRecoveryCodesPage, renderTwoFactorPage } from '../../lib/portal/two-factor/two-factor-pages';
import { fileUserDirectory, type UserDirectory } from '../../lib/portal/user-directory';
import { establishLogin, requireSession, ssoSession } from '../../lib/session';
import { hashPassword } from '../../lib/util/password-hash';
import { setCookieValue } from '../helpers/cookies';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

// After a sign-in method changes (an authenticator app set up, replaced or turned off, new recovery codes, a passkey
// added or removed), the portal offers to end every other session of the user, keeping this one (ASVS 5.0 7.4.3):
// the factor was perhaps changed because a device was lost, and whoever holds it may hold a session too.

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const SECRET = 'portal-test-secret-0123456789-abcdefghij';
const SESSION_COOKIE = '__Secure-sso.sid';

let users: UserDirectory;
let redis: Awaited<ReturnType<typeof testRedisStore>>;
let app: Express;
let withoutTwoFactor: Express;

beforeAll(async () => {
  const fast = { N: 1024, r: 8, p: 1 };
  users = fileUserDirectory([
    { id: 'alice', username: 'alice', name: 'Alice', roles: [], passwordHash: await hashPassword('alice-password', fast) },
    { id: 'bob', username: 'bob', name: 'Bob', roles: [], passwordHash: await hashPassword('bob-password', fast) },
  ]);
  redis = await testRedisStore('sign-out-others');
  app = buildApp(true);
  withoutTwoFactor = buildApp(false);
});

function buildApp(twoFactor: boolean): Express {
  const credentials = new KeyValueCredentialStore(redis.store);
  const built = express();
  built.set('trust proxy', true);
  built.use(securityHeaders());
  built.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: SECRET, loginUrl: `${AUTH_ORIGIN}/login` }));
  // An app route that signs a directory user in an hour ago: a session whose last factor is no longer recent.
  built.post('/test/old-login', express.json(), async (req, res) => {
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
  built.use(
    loginPortal({
      users,
      store: redis.store,
      throttle: { namespace: 'sign-out-others' },
      ...(twoFactor ? { twoFactor: { credentials, sealingKey: randomBytes(32), issuer: 'Example' } } : {}),
      passkeys: { credentials },
    }),
  );
  built.get('/whoami', requireSession(), (req, res) => {
    res.json({ id: req.user!.id });
  });
  built.use(errorHandler({ log: false }));
  return built;
}

afterAll(async () => {
  await redis?.cleanup();
});

function fromPortal(test: request.Test, userAgent: string): request.Test {
  return test
    .set('Host', AUTH)
    .set('X-Forwarded-Proto', 'https')
    .set('Origin', AUTH_ORIGIN)
    .set('User-Agent', userAgent)
    .set('X-Forwarded-For', '203.0.113.5');
}

async function signIn(username: string, userAgent: string): Promise<string> {
  const res = await fromPortal(request(app).post('/login'), userAgent)
    .type('form')
    .send({ username, password: `${username}-password`, return_to: '' });
  const cookie = setCookieValue(res, SESSION_COOKIE);
  if (cookie === undefined) throw new Error(`${username} was not signed in: ${res.status}`);
  return cookie;
}

function whoami(cookie: string): request.Test {
  return fromPortal(request(app).get('/whoami'), 'any').set('Accept', 'application/json').set('Cookie', cookie);
}

describe('POST /logout with scope=others', () => {
  it('ends every other session of the user on every app and keeps this one, and says so on the sessions page', async () => {
    const phone = await signIn('alice', 'Phone');
    const laptop = await signIn('alice', 'Laptop');
    const tablet = await signIn('alice', 'Tablet');
    const bob = await signIn('bob', 'Bob');

    const res = await fromPortal(request(app).post('/logout'), 'Phone').set('Cookie', phone).type('form').send({ scope: 'others' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/sessions?others=1');
    expect(res.headers['set-cookie']).toBeUndefined();

    expect((await whoami(phone)).body).toEqual({ id: expect.stringContaining('alice') });
    expectProblem(await whoami(laptop), 401);
    expectProblem(await whoami(tablet), 401);
    // Another user's sessions are not touched.
    expect((await whoami(bob)).status).toBe(200);

    const page = await fromPortal(request(app).get('/sessions?others=1'), 'Phone').set('Cookie', phone);
    expect(page.text).toContain('Your other sessions were signed out.');
    // One browser left: this one.
    expect(page.text.match(/name="session" value=/g)).toHaveLength(1);
  });

  it('refuses it posted from another site, and ends nothing', async () => {
    const phone = await signIn('alice', 'Phone');
    const laptop = await signIn('alice', 'Laptop');
    const res = await fromPortal(request(app).post('/logout'), 'Phone')
      .set('Origin', 'https://evil.test')
      .set('Cookie', phone)
      .type('form')
      .send({ scope: 'others' });
    expectProblem(res, 403, 'csrf_origin');
    expect((await whoami(laptop)).status).toBe(200);
    expect((await whoami(phone)).status).toBe(200);
  });

  it('sends a visitor without a session to the login page, ending nothing', async () => {
    const laptop = await signIn('alice', 'Laptop');
    const res = await fromPortal(request(app).post('/logout'), 'Stranger').type('form').send({ scope: 'others' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/login');
    expect((await whoami(laptop)).status).toBe(200);
  });
});

describe('the offer to sign out the other sessions', () => {
  const offer = /<form method="post" action="\/logout" data-sign-out-others><input type="hidden" name="scope" value="others">/;

  it('is on the two-factor settings page and the passkeys page, where sign-in methods change', async () => {
    const cookie = await signIn('alice', 'Phone');
    for (const path of ['/two-factor', '/passkeys']) {
      const page = await fromPortal(request(app).get(path), 'Phone').set('Cookie', cookie);
      expect({ path, status: page.status }).toEqual({ path, status: 200 });
      expect(page.text).toMatch(offer);
    }
  });

  it('is on the recovery codes page shown after an app is set up or codes are renewed, and on the sessions page', () => {
    const codes = renderRecoveryCodesPage({ assetsPath: '/a', codes: ['ABCDE-FGHJK'], continueUrl: '/', logoutAction: '/logout' });
    expect(codes).toMatch(offer);
    const settingsPage = renderTwoFactorPage({
      assetsPath: '/a',
      userName: 'Alice',
      totpEnrolled: true,
      remainingRecoveryCodes: 10,
      enrolUrl: '/two-factor/totp',
      regenerateAction: '/two-factor/recovery-codes',
      removeAction: '/two-factor/totp/remove',
      logoutAction: '/logout',
    });
    expect(settingsPage).toMatch(offer);
    const sessions = renderSessionsPage({
      title: 'Your sessions',
      assetsPath: '/a',
      userName: 'Alice',
      sessions: [],
      revokeAction: '/sessions/revocations',
      logoutAction: '/logout',
    });
    expect(sessions).toMatch(offer);
  });
});

describe('ending another session needs a recent factor', () => {
  async function oldLogin(target: Express, username: string, userAgent: string): Promise<string> {
    const res = await fromPortal(request(target).post('/test/old-login'), userAgent).send({ subject: username });
    return setCookieValue(res, SESSION_COOKIE)!;
  }

  async function handleOf(cookie: string, userAgent: string): Promise<string> {
    const page = await fromPortal(request(app).get('/sessions'), 'Old').set('Cookie', cookie);
    const row = page.text.split('<li').find((item) => item.includes(userAgent))!;
    return /name="session" value="([^"]+)"/.exec(row)![1]!;
  }

  it('sends a session signed in an hour ago to the step-up page for its password before revoking another one', async () => {
    const laptop = await signIn('alice', 'Laptop A');
    const old = await oldLogin(app, 'alice', 'Old A');
    const handle = await handleOf(old, 'Laptop A');
    const revoke = () => fromPortal(request(app).post('/sessions/revocations'), 'Old').type('form');

    const refused = await revoke().set('Cookie', old).send({ session: handle });
    expect(refused.status).toBe(303);
    const stepUp = new URL(refused.headers.location as string, AUTH_ORIGIN);
    expect(stepUp.pathname).toBe('/step-up');
    expect(Object.fromEntries(stepUp.searchParams)).toEqual({ acr: '1fa', max_age: '300', return_to: `${AUTH_ORIGIN}/sessions` });
    expect((await whoami(laptop)).status).toBe(200);

    // The password, typed again at the step-up page, is a recent factor: the same revocation then goes through.
    const confirmed = await fromPortal(request(app).post('/step-up'), 'Old')
      .set('Cookie', old)
      .type('form')
      .send({ acr: '1fa', max_age: '300', return_to: `${AUTH_ORIGIN}/sessions`, username: 'alice', password: 'alice-password' });
    expect(confirmed.status).toBe(303);
    const raised = setCookieValue(confirmed, SESSION_COOKIE)!;
    expect((await revoke().set('Cookie', raised).send({ session: handle })).headers.location).toBe('/sessions?revoked=1');
    expectProblem(await whoami(laptop), 401);
  });

  it('asks the same before signing out the other sessions, but never before signing out this one', async () => {
    const laptop = await signIn('alice', 'Laptop B');
    const old = await oldLogin(app, 'alice', 'Old B');
    const others = await fromPortal(request(app).post('/logout'), 'Old').set('Cookie', old).type('form').send({ scope: 'others' });
    expect(others.status).toBe(303);
    expect(others.headers.location).toMatch(/^\/step-up\?acr=1fa&max_age=300&return_to=/);
    expect((await whoami(laptop)).status).toBe(200);

    const own = await handleOf(old, 'Old B');
    const revokeOwn = await fromPortal(request(app).post('/sessions/revocations'), 'Old')
      .set('Cookie', old)
      .type('form')
      .send({ session: own });
    expect(revokeOwn.headers.location).toBe('/login');
    expectProblem(await whoami(old), 401);
    expect((await whoami(laptop)).status).toBe(200);
  });

  it('sends to the login page to sign in again when the portal has no step-up page', async () => {
    const laptop = await signIn('alice', 'Laptop');
    const old = await oldLogin(withoutTwoFactor, 'alice', 'Old C');
    const others = await fromPortal(request(withoutTwoFactor).post('/logout'), 'Old')
      .set('Cookie', old)
      .type('form')
      .send({ scope: 'others' });
    expect(others.status).toBe(303);
    expect(others.headers.location).toBe(`/login?prompt=login&return_to=${encodeURIComponent(`${AUTH_ORIGIN}/sessions`)}`);
    expect((await whoami(laptop)).status).toBe(200);
  });
});
