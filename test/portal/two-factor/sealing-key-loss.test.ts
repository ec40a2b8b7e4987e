import { randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import request from 'supertest';
import { KeyValueCredentialStore, PostgresCredentialStore, type CredentialStore } from '../../../lib/credentials';
import { errorHandler, securityHeaders } from '../../../lib/http';
import { loginPortal } from '../../../lib/portal/login-portal';
import { fileUserDirectory, type UserDirectory } from '../../../lib/portal/user-directory';
import { requireSession, ssoSession } from '../../../lib/session';
import { hashPassword } from '../../../lib/util/password-hash';
import { enrolOverHttp, totpCodeAt, type AuthenticatorApp, type PortalRequests } from '../../helpers/authenticator-app';
import { setCookieValue } from '../../helpers/cookies';
import { debugLines } from '../../helpers/debug-lines';
import { testPostgresSchema } from '../../helpers/postgres';
import { expectProblem } from '../../helpers/problem';
import { testRedisStore } from '../../helpers/redis';

// docs/strong-auth.md: "losing the key voids every enrolment: users set their app up again after signing in with a
// password". A portal restarted without the key that sealed a user's authenticator app (lost, or dropped from
// previousSealingKeys) must treat that app, and the recovery codes that back it up, as not set up: never a 5xx, never
// a step-up page asking for a code nobody can check.
const AUTH = 'auth.example.test';
const ORIGIN = `https://${AUTH}`;
const ADMIN = 'https://admin.example.test/reports';
const COOKIE = '__Secure-sso.sid';
const SESSION_SECRET = `portal-test-secret-${randomBytes(16).toString('hex')}`;
const FAST = { N: 1024, r: 8, p: 1 };

type Keys = { sealingKey: Buffer; previousSealingKeys?: Buffer[] };
type Factors = { credentials: CredentialStore; cleanup: () => Promise<void> };

const credentialStores: Array<[string, (redis: Awaited<ReturnType<typeof testRedisStore>>) => Promise<Factors>]> = [
  ['Redis', async (redis) => ({ credentials: new KeyValueCredentialStore(redis.store), cleanup: async () => undefined })],
  [
    'PostgreSQL',
    async () => {
      const pg = await testPostgresSchema('sealing_key_loss');
      return { credentials: new PostgresCredentialStore(pg.pool, { schema: pg.schema }), cleanup: pg.cleanup };
    },
  ],
];

/** The portal as one run of it sees the world: the shared session store and factors, and this run's sealing keys. */
function portal(redis: Awaited<ReturnType<typeof testRedisStore>>, users: UserDirectory, credentials: CredentialStore, keys: Keys) {
  const app: Express = express();
  app.set('trust proxy', true);
  app.use(securityHeaders());
  app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: SESSION_SECRET, loginUrl: `${ORIGIN}/login` }));
  app.use(loginPortal({ users, store: redis.store, twoFactor: { credentials, issuer: 'Example', ...keys } }));
  app.get('/admin', requireSession({ acr: '2fa' }), (req, res) => res.json({ acr: req.user!.authentication?.acr }));
  app.use(errorHandler({ log: false }));
  const wrap = (test: request.Test) => test.set('Host', AUTH).set('X-Forwarded-Proto', 'https').set('X-Forwarded-For', '203.0.113.7');
  const requests: PortalRequests = { get: (path) => wrap(request(app).get(path)), post: (path) => wrap(request(app).post(path)) };
  return {
    ...requests,
    async signIn(username: string): Promise<string> {
      const res = await requests
        .post('/login')
        .set('Origin', ORIGIN)
        .type('form')
        .send({ username, password: `${username}-password`, return_to: '' });
      expect(res.status).toBe(302);
      return setCookieValue(res, COOKIE)!;
    },
    enrol: (cookie: string, replacing?: AuthenticatorApp) => enrolOverHttp(requests, ORIGIN, cookie, COOKIE, replacing),
    /** Whether a fresh password sign-in is asked for the app's code at the step-up page (not sent to set one up). */
    async asksForTheApp(username: string): Promise<boolean> {
      const cookie = await this.signIn(username);
      const page = await requests.get('/step-up?acr=2fa').set('Cookie', cookie).set('Accept', 'text/html');
      return page.status === 200 && page.text.includes('data-method="totp"');
    },
    stepUp: (cookie: string, method: string, code: string) =>
      requests
        .post('/step-up')
        .set('Origin', ORIGIN)
        .set('Cookie', cookie)
        .type('form')
        .send({ method, code, acr: '2fa', max_age: '', return_to: ADMIN }),
  };
}

describe.each(credentialStores)('a sealing key that no longer opens a secret, factors in %s', (_name, openFactors) => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let factors: Factors;
  let users: UserDirectory;

  beforeAll(async () => {
    redis = await testRedisStore('sealing-key-loss');
    factors = await openFactors(redis);
    users = fileUserDirectory(
      await Promise.all(
        ['alice', 'bob', 'carol'].map(async (name) => ({
          id: name,
          username: name,
          name,
          roles: [],
          passwordHash: await hashPassword(`${name}-password`, FAST),
        })),
      ),
    );
  });
  afterAll(async () => {
    await factors?.cleanup();
    await redis?.cleanup();
  });

  const run = (keys: Keys) => portal(redis, users, factors.credentials, keys);

  /** Enrols an app for `username` at `site`, with its recovery codes. */
  async function enrolAt(site: ReturnType<typeof run>, username: string): Promise<{ app: AuthenticatorApp; recoveryCodes: string[] }> {
    const { app, recoveryCodes } = await site.enrol(await site.signIn(username));
    expect(recoveryCodes).toHaveLength(10);
    return { app, recoveryCodes };
  }

  /** What a user whose app no longer opens meets at `site`: password sign-in, then set the app up again; no 5xx. */
  async function expectSetUpAgain(site: ReturnType<typeof run>, username: string, old: { app: AuthenticatorApp; recoveryCodes: string[] }) {
    const cookie = await site.signIn(username);
    // The step-up page sends the user to set an app up, instead of asking for a code nobody can check.
    const stepUp = await site.get(`/step-up?acr=2fa&return_to=${encodeURIComponent(ADMIN)}`).set('Cookie', cookie);
    expect(stepUp.status).toBe(303);
    expect(new URL(stepUp.headers.location!, ORIGIN).pathname).toBe('/two-factor/totp');
    // The old app's code and a recovery code are not offered ways in: 400, nothing raised, never a 500.
    for (const [method, code] of [
      ['totp', totpCodeAt(old.app.secret, 1)],
      ['recovery', old.recoveryCodes[0]!],
    ] as const) {
      expectProblem(await site.stepUp(cookie, method, code), 400, 'invalid_request');
    }
    expect((await site.get('/admin').set('Cookie', cookie).set('Accept', 'application/json')).status).toBe(401);
    const settings = await site.get('/two-factor').set('Cookie', cookie).set('Accept', 'text/html');
    expect(settings.text).toContain('data-totp-status="off"');
    expect(settings.text).not.toContain('recovery code');
    // Setting an app up again needs only the recent password sign-in, and the new app is the user's factor from now on.
    const again = await site.enrol(cookie, old.app);
    expect((await site.get('/admin').set('Cookie', again.cookie)).body).toEqual({ acr: '2fa' });
    expect(await site.asksForTheApp(username)).toBe(true);
  }

  it('a lost key: the user signs in with the password, sets the app up again, and the new one works', async () => {
    const before = run({ sealingKey: randomBytes(32) });
    const old = await enrolAt(before, 'alice');
    // The portal restarts with a new key and without the old one.
    const after = run({ sealingKey: randomBytes(32) });
    const lines = await debugLines('credentials', () => expectSetUpAgain(after, 'alice', old));
    expect(lines.join('\n')).toMatch(/an authenticator app does not open with the configured sealing keys/);
    expect(lines.join('\n')).not.toContain(old.app.secret);
  });

  it('a key still in previousSealingKeys keeps the app; once dropped from them, the app counts as not set up', async () => {
    const first = randomBytes(32);
    const second = randomBytes(32);
    const old = await enrolAt(run({ sealingKey: first }), 'bob');
    const carol = await enrolAt(run({ sealingKey: first }), 'carol');
    // Rotation: the old key opens the app, and signing in with it re-seals it with the new key.
    const rotated = run({ sealingKey: second, previousSealingKeys: [first] });
    expect((await rotated.stepUp(await rotated.signIn('carol'), 'totp', await carol.app.nextCode())).status).toBe(303);
    // The first key dropped: bob, who did not sign in meanwhile, sets his app up again; carol's app was re-sealed.
    const dropped = run({ sealingKey: randomBytes(32), previousSealingKeys: [second] });
    await expectSetUpAgain(dropped, 'bob', old);
    expect(await dropped.asksForTheApp('carol')).toBe(true);
  });
});
