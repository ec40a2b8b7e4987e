import { randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import express4 from 'express4';
import { TOTP, Secret } from 'otpauth';
import request from 'supertest';
import { Pool } from 'pg';
import { KeyValueCredentialStore, PostgresCredentialStore, type CredentialStore } from '../../../lib/credentials';
import { errorHandler, securityHeaders } from '../../../lib/http';
import { loginPortal } from '../../../lib/portal/login-portal';
import type { SecondFactor } from '../../../lib/portal/two-factor/second-factor';
import { DEFAULT_DIRECTORY_SOURCE, fileUserDirectory, type UserDirectory } from '../../../lib/portal/user-directory';
import { requireSession, ssoSession } from '../../../lib/session';
import { hashPassword } from '../../../lib/util/password-hash';
import { expectProblem } from '../../helpers/problem';
import { testPostgresSchema } from '../../helpers/postgres';
import { freePort, testRedisStore } from '../../helpers/redis';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const ADMIN = 'https://admin.example.test/users?page=2';
const FAST = { N: 1024, r: 8, p: 1 };
const SECRET = 'portal-test-secret-0123456789-abcdefghij';
const SESSION_COOKIE = '__Secure-sso.sid';

/** A browser against the portal: keeps its cookies (the session's and the portal's own), sends the portal's Origin on POSTs. */
class Browser {
  cookie = '';
  /** Every cookie the portal set, by name (paths aside: the step-up form is where the device cookie goes anyway). */
  readonly jar = new Map<string, string>();
  /** The network the browser is on, as the proxy reports it. */
  address = '203.0.113.9';
  constructor(private readonly app: Express) {}

  private keep(res: request.Response): request.Response {
    const lines = (res.headers['set-cookie'] as unknown as string[] | undefined) ?? [];
    for (const line of lines) {
      const [pair = ''] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      if (name === SESSION_COOKIE) this.cookie = pair;
      else this.jar.set(name, pair);
    }
    return res;
  }

  private cookies(): string {
    return [this.cookie, ...this.jar.values()].filter(Boolean).join('; ');
  }

  async get(path: string, host = AUTH): Promise<request.Response> {
    const test = request(this.app).get(path).set('Host', host).set('X-Forwarded-Proto', 'https').set('Accept', 'text/html');
    if (this.cookies()) test.set('Cookie', this.cookies());
    return this.keep(await test);
  }

  async post(
    path: string,
    form: Record<string, string>,
    origin = AUTH_ORIGIN,
    headers: Record<string, string> = {},
  ): Promise<request.Response> {
    const test = request(this.app)
      .post(path)
      .set('Host', AUTH)
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-For', this.address)
      .set('Origin', origin)
      .set(headers)
      .type('form');
    if (this.cookies()) test.set('Cookie', this.cookies());
    return this.keep(await test.send(form));
  }
}

/** Attribute text as a browser reads it: the kit escapes with numeric references (`&#38;`), others with names. */
function unescapeHtml(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_match, code: string) => String.fromCharCode(Number(code)))
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
}

/** The hidden fields of the first form of a page whose method is `method` (or the first form at all). */
function formFields(html: string, method?: string): Record<string, string> {
  const forms = html.split('<form').slice(1);
  const form = method === undefined ? forms[0] : forms.find((text) => text.includes(`data-method="${method}"`));
  if (form === undefined) throw new Error(`no form${method ? ` for ${method}` : ''} in the page`);
  const fields: Record<string, string> = {};
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1] as string] = unescapeHtml(match[2] as string);
  }
  return fields;
}

function secretOf(html: string): string {
  const match = /data-totp-secret>([A-Z2-7 ]+)</.exec(html);
  if (!match) throw new Error('no secret on the enrolment page');
  return (match[1] as string).replace(/ /g, '');
}

const codeAt = (secret: string, offsetSteps = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: Date.now() + offsetSteps * 30_000,
  });

/** A directory of users without roles whose password is `<name>-password`. */
async function directoryOf(names: readonly string[]): Promise<UserDirectory> {
  return fileUserDirectory(
    await Promise.all(
      names.map(async (name) => ({
        id: name,
        username: name,
        name,
        roles: [],
        passwordHash: await hashPassword(`${name}-password`, FAST),
      })),
    ),
  );
}

type Factors = { credentials: CredentialStore; cleanup: () => Promise<void> };

const credentialStores: Array<[string, (redis: Awaited<ReturnType<typeof testRedisStore>>) => Promise<Factors>]> = [
  ['Redis', async (redis) => ({ credentials: new KeyValueCredentialStore(redis.store), cleanup: async () => undefined })],
  [
    'PostgreSQL',
    async () => {
      const pg = await testPostgresSchema('step_up');
      return { credentials: new PostgresCredentialStore(pg.pool, { schema: pg.schema }), cleanup: pg.cleanup };
    },
  ],
];

/** The portal with second factors kept in `credentials`, and a two-factor route, on the test Redis. */
async function portalApp(
  redis: Awaited<ReturnType<typeof testRedisStore>>,
  users: UserDirectory,
  credentials: CredentialStore,
  methods: SecondFactor[] = [],
  createApp: () => Express = express,
): Promise<Express> {
  const app = createApp();
  app.set('trust proxy', true);
  app.use(securityHeaders());
  app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: SECRET, loginUrl: `${AUTH_ORIGIN}/login` }));
  app.use(
    loginPortal({
      users,
      store: redis.store,
      throttle: { perAccountAndNetwork: { failures: 3, windowSeconds: 900 } },
      twoFactor: { credentials, sealingKey: randomBytes(32), issuer: 'Example', methods },
    }),
  );
  app.get('/vault', requireSession({ acr: 'phr' }), (req, res) => res.json({ acr: req.user!.authentication?.acr }));
  app.get('/admin', requireSession({ acr: '2fa', maxAgeSeconds: 300 }), (req, res) => {
    res.json({ id: req.user!.id, acr: req.user!.authentication?.acr, amr: req.user!.authentication?.amr });
  });
  app.use(errorHandler({ log: false }));
  return app;
}

describe.each(credentialStores)('the portal’s second factors and step-up page, factors in %s', (_name, openFactors) => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let factors: Factors;
  let users: UserDirectory;
  let app: Express;

  beforeAll(async () => {
    redis = await testRedisStore('step-up-portal');
    factors = await openFactors(redis);
    // One account per test, so one test's enrolment never changes what another test starts from.
    const names = ['alice', 'bob', ...Array.from({ length: 20 }, (_, index) => `user${index}`)];
    users = await directoryOf(names);
    app = await portalApp(redis, users, factors.credentials);
  });
  afterAll(async () => {
    await factors?.cleanup();
    await redis?.cleanup();
  });

  async function signIn(username: string): Promise<Browser> {
    const browser = new Browser(app);
    const res = await browser.post('/login', { username, password: `${username}-password`, return_to: '' });
    expect(res.status).toBe(302);
    return browser;
  }

  /** Enrols TOTP for a fresh signed-in browser; returns the browser, the secret and the recovery codes. */
  async function enrolled(username: string): Promise<{ browser: Browser; secret: string; codes: string[] }> {
    const browser = await signIn(username);
    const page = await browser.get('/two-factor/totp');
    expect(page.status).toBe(200);
    const secret = secretOf(page.text);
    const done = await browser.post('/two-factor/totp', { ...formFields(page.text), code: codeAt(secret) });
    expect(done.status).toBe(200);
    const codes = [...done.text.matchAll(/<li><code>([A-Z0-9-]+)<\/code><\/li>/g)].map((match) => match[1] as string);
    return { browser, secret, codes };
  }

  it('sends a user without a second factor from the step-up page to enrolment, and back', async () => {
    const browser = await signIn('alice');
    const stepUp = await browser.get(`/step-up?return_to=${encodeURIComponent(ADMIN)}&acr=2fa&max_age=300`);
    expect(stepUp.status).toBe(303);
    const enrol = new URL(stepUp.headers.location!, AUTH_ORIGIN);
    expect(enrol.pathname).toBe('/two-factor/totp');
    const back = enrol.searchParams.get('return_to')!;
    expect(new URL(back).pathname).toBe('/step-up');
  });

  it('enrols TOTP only after one right code, shows ten recovery codes once and raises the session to 2fa', async () => {
    const browser = await signIn('alice');
    const page = await browser.get('/two-factor/totp');
    expect(page.text).toContain('<svg');
    const secret = secretOf(page.text);
    const wrong = await browser.post('/two-factor/totp', {
      ...formFields(page.text),
      code: '000000' === codeAt(secret) ? '111111' : '000000',
    });
    expect(wrong.status).toBe(401);
    const before = await browser.get('/admin');
    expect(before.status).toBe(302);
    const cookieBefore = browser.cookie;
    const done = await browser.post('/two-factor/totp', { ...formFields(page.text), code: codeAt(secret) });
    expect(done.status).toBe(200);
    expect([...done.text.matchAll(/<li><code>/g)]).toHaveLength(10);
    expect(browser.cookie).not.toBe(cookieBefore);
    const admin = await browser.get('/admin');
    expect(admin.status).toBe(200);
    expect(admin.body).toMatchObject({ acr: '2fa', amr: ['pwd', 'otp'] });
  });

  it('refuses a pending secret sealed for another user', async () => {
    const alice = await signIn('user0');
    const bob = await signIn('user1');
    const page = await alice.get('/two-factor/totp');
    const res = await bob.post('/two-factor/totp', { ...formFields(page.text), code: codeAt(secretOf(page.text)) });
    expectProblem(res, 400, 'invalid_request');
  });

  describe('step-up', () => {
    it('asks only the second factor of a fresh login, raises the same user with a new session id and returns to return_to', async () => {
      const { secret } = await enrolled('user2');
      const browser = await signIn('user2');
      const page = await browser.get(`/step-up?return_to=${encodeURIComponent(ADMIN)}&acr=2fa&max_age=300`);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain('name="password"');
      const before = browser.cookie;
      // The enrolment used this step already; the next step's code is within the window and not a replay.
      const res = await browser.post('/step-up', { ...formFields(page.text, 'totp'), code: codeAt(secret, 1) });
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(ADMIN);
      expect(browser.cookie).not.toBe(before);
      const admin = await browser.get('/admin');
      expect(admin.body).toMatchObject({ id: `${DEFAULT_DIRECTORY_SOURCE}|user2`, acr: '2fa', amr: ['pwd', 'otp'] });
    });

    it('refuses a replayed TOTP code', async () => {
      const { secret } = await enrolled('user3');
      const first = await signIn('user3');
      const page = await first.get(`/step-up?acr=2fa`);
      const code = codeAt(secret, 1);
      expect((await first.post('/step-up', { ...formFields(page.text, 'totp'), code })).status).toBe(303);
      const second = await signIn('user3');
      const again = await second.post('/step-up', { ...formFields(page.text, 'totp'), code });
      expect(again.status).toBe(401);
      expect((await second.get('/admin')).status).toBe(302);
    });

    it('accepts a recovery code once', async () => {
      const { codes } = await enrolled('user4');
      const first = await signIn('user4');
      const page = await first.get(`/step-up?acr=2fa`);
      const fields = formFields(page.text, 'recovery');
      expect((await first.post('/step-up', { ...fields, code: (codes[0] as string).toLowerCase() })).status).toBe(303);
      const second = await signIn('user4');
      expect((await second.post('/step-up', { ...fields, code: codes[0] as string })).status).toBe(401);
      expect((await second.post('/step-up', { ...fields, code: codes[1] as string })).status).toBe(303);
    });

    it('asks the password again when the login is older than max_age, and refuses another user’s password', async () => {
      const { codes } = await enrolled('user5');
      const browser = await signIn('user5');
      // Ten minutes later the login is older than max_age=300.
      const realNow = Date.now.bind(Date);
      const later = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 600_000);
      try {
        const page = await browser.get(`/step-up?return_to=${encodeURIComponent(ADMIN)}&acr=2fa&max_age=300`);
        expect(page.text).toContain('name="password"');
        const fields = formFields(page.text, 'recovery');
        const other = await browser.post('/step-up', {
          ...fields,
          username: 'alice',
          password: 'alice-password',
          code: codes[0] as string,
        });
        expect(other.status).toBe(401);
        const res = await browser.post('/step-up', { ...fields, username: 'user5', password: 'user5-password', code: codes[1] as string });
        expect(res.status).toBe(303);
        const admin = await browser.get('/admin');
        expect(admin.body).toMatchObject({ id: `${DEFAULT_DIRECTORY_SOURCE}|user5`, acr: '2fa' });
      } finally {
        later.mockRestore();
      }
    });

    it('throttles factor attempts like passwords: 429 with Retry-After, even for the right code', async () => {
      const { secret } = await enrolled('user6');
      const browser = await signIn('user6');
      const page = await browser.get('/step-up?acr=2fa');
      const fields = formFields(page.text, 'totp');
      const wrong = codeAt(secret) === '123456' ? '654321' : '123456';
      for (let attempt = 0; attempt < 3; attempt += 1)
        expect((await browser.post('/step-up', { ...fields, code: wrong })).status).toBe(401);
      const limited = await browser.post('/step-up', { ...fields, code: codeAt(secret, 1) });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    });

    it('keeps a browser that passed the second factor before its own budget: 100 wrong codes from 100 networks lock out no one else', async () => {
      // user13 turns the app on in her browser: the code proves the factor, and the browser gets its factor device token.
      const { browser: hers, secret } = await enrolled('user13');
      expect([...hers.jar.keys()]).toContain('sso.factor-device');
      // Someone holding her password signs in elsewhere and guesses codes from 100 networks.
      const attacker = await signIn('user13');
      const fields = formFields((await attacker.get('/step-up?acr=2fa')).text, 'totp');
      const wrong = codeAt(secret) === '123456' || codeAt(secret, 1) === '123456' ? '654321' : '123456';
      const statuses: number[] = [];
      for (let network = 0; network < 100; network += 1) {
        attacker.address = `198.51.100.${network}`;
        statuses.push((await attacker.post('/step-up', { ...fields, code: wrong })).status);
      }
      // The account limit (10 failures an hour from browsers it does not know) stops the guessing.
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
      expect(new Set(statuses.slice(10))).toEqual(new Set([429]));
      // Her right code from her own network and browser is accepted, not refused for an hour.
      const own = await hers.post('/step-up', { ...fields, code: codeAt(secret, 1) });
      expect(own.status).toBe(303);
      // A browser that never passed her second factor is still held back by the account limit.
      const stranger = await signIn('user13');
      expect((await stranger.post('/step-up', { ...fields, code: codeAt(secret, 1) })).status).toBe(429);
    });

    it('refuses a step-up form from another origin (CSRF) and changes nothing', async () => {
      const { codes } = await enrolled('user7');
      const browser = await signIn('user7');
      const page = await browser.get('/step-up?acr=2fa');
      const res = await browser.post('/step-up', { ...formFields(page.text, 'recovery'), code: codes[0] as string }, 'https://evil.test');
      expect(res.status).toBe(403);
      expect((await browser.get('/admin')).status).toBe(302);
    });

    it('answers a malformed requirement with 400 and drops an unsafe return_to', async () => {
      const browser = await signIn('alice');
      expectProblem(await browser.get('/step-up?acr=9fa'), 400, 'invalid_request');
      expectProblem(await browser.get('/step-up?acr=2fa&max_age=-5'), 400, 'invalid_request');
      const page = await browser.get(`/step-up?acr=2fa&return_to=${encodeURIComponent('https://evil.test/')}`);
      expect(new URL(page.headers.location ?? 'https://auth.example.test/', AUTH_ORIGIN).searchParams.get('return_to') ?? '').not.toContain(
        'evil',
      );
    });

    it('sends a visitor without a session to the login page', async () => {
      const res = await new Browser(app).get('/step-up?acr=2fa');
      expect(res.status).toBe(303);
      expect(new URL(res.headers.location!, AUTH_ORIGIN).pathname).toBe('/login');
    });
  });

  describe('changing factors', () => {
    it('replacing an enrolled app needs a fresh second factor, not only the password', async () => {
      await enrolled('user8');
      const browser = await signIn('user8');
      const res = await browser.get('/two-factor/totp');
      expect(res.status).toBe(303);
      const location = new URL(res.headers.location!, AUTH_ORIGIN);
      expect(location.pathname).toBe('/step-up');
      expect(location.searchParams.get('acr')).toBe('2fa');
    });

    it('new recovery codes need a fresh second factor and replace the old ones', async () => {
      const { browser, codes } = await enrolled('user9');
      const again = await browser.post('/two-factor/recovery-codes', {});
      expect(again.status).toBe(200);
      const fresh = [...again.text.matchAll(/<li><code>([A-Z0-9-]+)<\/code><\/li>/g)].map((match) => match[1] as string);
      expect(fresh).toHaveLength(10);
      const other = await signIn('user9');
      expect((await other.post('/two-factor/recovery-codes', {})).status).toBe(303);
      const page = await other.get('/step-up?acr=2fa');
      expect((await other.post('/step-up', { ...formFields(page.text, 'recovery'), code: codes[2] as string })).status).toBe(401);
      expect((await other.post('/step-up', { ...formFields(page.text, 'recovery'), code: fresh[0] as string })).status).toBe(303);
    });

    const userId = (name: string) => `${DEFAULT_DIRECTORY_SOURCE}|${name}`;

    it('turning the app off, after a fresh second factor, removes it with its recovery codes', async () => {
      const { browser, codes } = await enrolled('user10');
      // Another browser of the same user holds a step-up form from before the removal.
      const later = await signIn('user10');
      const heldForm = formFields((await later.get('/step-up?acr=2fa')).text, 'recovery');
      expect((await browser.get('/two-factor')).text).toContain('data-totp-remove');
      const res = await browser.post('/two-factor/totp/remove', {});
      expect(res.status).toBe(303);
      expect(new URL(res.headers.location!, AUTH_ORIGIN).pathname).toBe('/two-factor');
      expect((await browser.get('/two-factor')).text).toContain('data-totp-status="off"');
      expect(await factors.credentials.getTotp(userId('user10'))).toBeUndefined();
      expect(await factors.credentials.remainingRecoveryCodes(userId('user10'))).toBe(0);
      // No second factor is left to give: an old recovery code no longer passes as one, and the step-up page
      // sends the user to set one up.
      expect((await later.post('/step-up', { ...heldForm, code: codes[0] as string })).status).not.toBe(303);
      expect((await later.get('/admin')).status).toBe(302);
      const stepUp = await later.get('/step-up?acr=2fa');
      expect(stepUp.status).toBe(303);
      expect(new URL(stepUp.headers.location!, AUTH_ORIGIN).pathname).toBe('/two-factor/totp');
    });

    it('a password-only session is sent to step up first, and the app stays', async () => {
      await enrolled('user11');
      const browser = await signIn('user11');
      const res = await browser.post('/two-factor/totp/remove', {});
      expect(res.status).toBe(303);
      const location = new URL(res.headers.location!, AUTH_ORIGIN);
      expect(location.pathname).toBe('/step-up');
      expect(location.searchParams.get('acr')).toBe('2fa');
      expect(new URL(location.searchParams.get('return_to')!).pathname).toBe('/two-factor');
      expect(await factors.credentials.getTotp(userId('user11'))).toBeDefined();
      expect(await factors.credentials.remainingRecoveryCodes(userId('user11'))).toBe(10);
    });

    it('refuses a form from another origin (CSRF), even with a fresh second factor, and the app stays', async () => {
      const { browser } = await enrolled('user12');
      expect((await browser.post('/two-factor/totp/remove', {}, 'https://evil.test')).status).toBe(403);
      expect(await factors.credentials.getTotp(userId('user12'))).toBeDefined();
      expect(await factors.credentials.remainingRecoveryCodes(userId('user12'))).toBe(10);
    });

    it('sends a visitor without a session to the login page, and refuses one posting from another origin', async () => {
      const res = await new Browser(app).post('/two-factor/totp/remove', {});
      expect(res.status).toBe(303);
      expect(new URL(res.headers.location!, AUTH_ORIGIN).pathname).toBe('/login');
      // Without a session cookie the session's own CSRF check has nothing to guard; the portal's check still refuses.
      expectProblem(await new Browser(app).post('/two-factor/totp/remove', {}, 'https://evil.test'), 403, 'csrf_origin');
    });
  });
});

describe('the step-up page when the credential store is down', () => {
  it('fails closed with 503, never "no second factor"', async () => {
    const redis = await testRedisStore('step-up-outage');
    const pool = new Pool({ host: '127.0.0.1', port: await freePort(), user: 'postgres', database: 'test', connectionTimeoutMillis: 2000 });
    try {
      const users = fileUserDirectory([
        { id: 'alice', username: 'alice', name: 'alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
      ]);
      const app = await portalApp(redis, users, new PostgresCredentialStore(pool, { schema: 'ssotest_down' }));
      const browser = new Browser(app);
      expect((await browser.post('/login', { username: 'alice', password: 'alice-password', return_to: '' })).status).toBe(302);
      expectProblem(await browser.get('/step-up?acr=2fa'), 503, 'store_unavailable');
      expectProblem(await browser.get('/two-factor/totp'), 503, 'store_unavailable');
    } finally {
      await pool.end();
      await redis.cleanup();
    }
  });
});

describe('a second-factor method plugged in through twoFactor.methods (the shape passkeys use)', () => {
  it('is offered for the levels it reaches, with its fields and scripts, and raises the session to its level', async () => {
    const redis = await testRedisStore('step-up-plugin');
    try {
      const challenges = new Map<string, string>();
      const hardwareKey: SecondFactor = {
        id: 'test-key',
        label: 'Use your security key',
        amr: 'hwk',
        level: 'phr',
        scripts: ['/portal-assets/test-key.js'],
        isAvailable: async (userId) => userId.endsWith('|alice'),
        renderFields: async (userId) => {
          const challenge = randomBytes(8).toString('hex');
          challenges.set(userId, challenge);
          return `<input type="hidden" name="challenge" value="${challenge}"><input name="proof" aria-label="Proof">`;
        },
        verify: async (userId, form) => form.proof === `signed:${challenges.get(userId)}`,
      };
      const users = fileUserDirectory([
        { id: 'alice', username: 'alice', name: 'alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
      ]);
      const app = await portalApp(redis, users, new KeyValueCredentialStore(redis.store), [hardwareKey]);
      const browser = new Browser(app);
      await browser.post('/login', { username: 'alice', password: 'alice-password', return_to: '' });
      const page = await browser.get('/step-up?acr=phr');
      expect(page.status).toBe(200);
      // TOTP cannot reach phr: only the key is offered, with its script.
      expect(page.text).not.toContain('data-method="totp"');
      expect(page.text).toContain('<script src="/portal-assets/test-key.js" defer></script>');
      const fields = formFields(page.text, 'test-key');
      expect((await browser.post('/step-up', { ...fields, proof: 'signed:wrong' })).status).toBe(401);
      const again = await browser.get('/step-up?acr=phr');
      const fresh = formFields(again.text, 'test-key');
      expect((await browser.post('/step-up', { ...fresh, proof: `signed:${fresh.challenge}` })).status).toBe(303);
      expect((await browser.get('/vault')).body).toEqual({ acr: 'phr' });
    } finally {
      await redis.cleanup();
    }
  });
});

describe('a form that waited for the step-up (the sessions page’s "Revoke")', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let app: Express;
  const FORM_POST = { Accept: 'text/html,application/xhtml+xml', Referer: `${AUTH_ORIGIN}/sessions` };

  beforeAll(async () => {
    redis = await testRedisStore('step-up-resume');
    const users = await directoryOf(['alice', 'bob', 'carol', 'dave']);
    app = express();
    app.set('trust proxy', true);
    app.use(securityHeaders());
    app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: SECRET, loginUrl: `${AUTH_ORIGIN}/login` }));
    // As the demo's access policy has it: revoking a session needs a second factor from the last five minutes.
    app.post('/sessions/revocations', requireSession({ acr: '2fa', maxAgeSeconds: 300 }));
    // A kept form whose action is another origin than the portal's (only a bug could keep one; the page must not post it).
    app.post('/test/keep-foreign-form', (req, res) => {
      req.session.stepUpResume = { id: 'foreign', action: 'https://evil.example.net/steal', fields: [['a', 'b']], createdAt: Date.now() };
      req.session.save(() => res.sendStatus(204));
    });
    app.use(
      loginPortal({
        users,
        store: redis.store,
        twoFactor: { credentials: new KeyValueCredentialStore(redis.store), sealingKey: randomBytes(32), issuer: 'Example' },
      }),
    );
    app.use(errorHandler({ log: false, html: true }));
  });
  afterAll(() => redis?.cleanup());

  async function signIn(username: string): Promise<Browser> {
    const browser = new Browser(app);
    expect((await browser.post('/login', { username, password: `${username}-password`, return_to: '' })).status).toBe(302);
    return browser;
  }

  /** A browser whose session has two factors (it enrolled an app), and the app's secret. */
  async function enrolledBrowser(username: string): Promise<{ browser: Browser; secret: string; codes: string[] }> {
    const browser = await signIn(username);
    const page = await browser.get('/two-factor/totp');
    const secret = secretOf(page.text);
    const done = await browser.post('/two-factor/totp', { ...formFields(page.text), code: codeAt(secret) });
    expect(done.status).toBe(200);
    const codes = [...done.text.matchAll(/<li><code>([A-Z0-9-]+)<\/code><\/li>/g)].map((match) => match[1] as string);
    return { browser, secret, codes };
  }

  /** The handle of the session listed on `browser`'s sessions page that is not its own. */
  async function otherHandle(browser: Browser): Promise<string> {
    const page = await browser.get('/sessions');
    const item = page.text.split('<li').find((text) => !text.startsWith(' aria-current') && text.includes('name="session"'));
    return /name="session" value="([^"]+)"/.exec(item!)![1]!;
  }

  /** Posts "Revoke" from the sessions page; resolves to the step-up URL it was sent to. */
  async function revoke(browser: Browser, handle: string): Promise<URL> {
    const res = await browser.post('/sessions/revocations', { session: handle }, AUTH_ORIGIN, FORM_POST);
    expect(res.status).toBe(303);
    return new URL(res.headers.location!);
  }

  it('sends the revocation on once the factor is given, without a second form, and only once', async () => {
    const { browser: laptop, secret } = await enrolledBrowser('alice');
    const phone = await signIn('alice');
    const stepUp = await revoke(phone, await otherHandle(phone));
    expect(stepUp.pathname).toBe('/step-up');
    expect(stepUp.searchParams.get('resume')).toBeTruthy();
    // Nothing is done before the step-up.
    expect((await laptop.get('/two-factor')).status).toBe(200);

    const page = await phone.get(`${stepUp.pathname}${stepUp.search}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Then what you asked for is done.');
    const fields = formFields(page.text, 'totp');
    expect(fields.resume).toBe(stepUp.searchParams.get('resume'));
    const done = await phone.post('/step-up', { ...fields, code: codeAt(secret, 1) });
    // The page posting the form again, at once (portal.js) or with one click.
    expect(done.status).toBe(200);
    expect(done.text).toContain(`<form method="post" action="${AUTH_ORIGIN}/sessions/revocations" data-resume>`);
    const resumed = formFields(done.text);
    expect(resumed).toEqual({ session: expect.any(String) });
    const sent = await phone.post('/sessions/revocations', resumed, AUTH_ORIGIN, { ...FORM_POST, Referer: `${AUTH_ORIGIN}/step-up` });
    expect(sent.status).toBe(303);
    expect(sent.headers.location).toBe('/sessions?revoked=1');
    expect((await laptop.get('/two-factor')).status).toBe(303);

    // Used once: the same step-up link now only returns to the sessions page.
    const again = await phone.get(`${stepUp.pathname}${stepUp.search}`);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(`${AUTH_ORIGIN}/sessions`);
  });

  it('resumes after enrolment too, for a user who had no second factor yet', async () => {
    const other = await signIn('bob');
    const phone = await signIn('bob');
    const stepUp = await revoke(phone, await otherHandle(phone));
    const toEnrol = await phone.get(`${stepUp.pathname}${stepUp.search}`);
    expect(new URL(toEnrol.headers.location!, AUTH_ORIGIN).pathname).toBe('/two-factor/totp');
    const enrol = await phone.get(toEnrol.headers.location!);
    const secret = secretOf(enrol.text);
    const codes = await phone.post('/two-factor/totp', { ...formFields(enrol.text), code: codeAt(secret) });
    const back = new URL(unescapeHtml(/<a class="button[^"]*" href="([^"]+)">Continue/.exec(codes.text)![1]!));
    const done = await phone.get(`${back.pathname}${back.search}`);
    expect(done.status).toBe(200);
    expect(done.text).toContain('data-resume');
    const sent = await phone.post('/sessions/revocations', formFields(done.text), AUTH_ORIGIN, FORM_POST);
    expect(sent.headers.location).toBe('/sessions?revoked=1');
    expect((await other.get('/two-factor')).status).toBe(303);
  });

  it('sends the form on only in the session that posted it', async () => {
    const { browser: laptop, secret, codes } = await enrolledBrowser('carol');
    const phone = await signIn('carol');
    const stepUp = await revoke(phone, await otherHandle(phone));
    // The laptop (two factors, same user) follows the phone's step-up link: the form is not in its session.
    const elsewhere = await laptop.get(`${stepUp.pathname}${stepUp.search}`);
    expect(elsewhere.status).toBe(303);
    expect(elsewhere.headers.location).toBe(`${AUTH_ORIGIN}/sessions`);
    const posted = await laptop.post('/step-up', {
      return_to: `${AUTH_ORIGIN}/sessions`,
      acr: '2fa',
      max_age: '300',
      resume: stepUp.searchParams.get('resume')!,
      method: 'totp',
      code: codeAt(secret, 1),
    });
    expect(posted.status).toBe(303);
    expect(posted.text).not.toContain('data-resume');
    // And a wrong id does not send the phone's own form.
    const page = await phone.get(`${stepUp.pathname}${stepUp.search}`);
    const wrong = await phone.post('/step-up', { ...formFields(page.text, 'recovery'), resume: 'not-the-id', code: codes[0]! });
    expect(wrong.status).toBe(303);
    expect((await laptop.get('/two-factor')).status).toBe(200);
  });

  it('never posts a kept form to another origin than its own', async () => {
    const { browser, secret } = await enrolledBrowser('dave');
    const phone = await signIn('dave');
    expect((await phone.post('/test/keep-foreign-form', {})).status).toBe(204);
    const page = await phone.get(`/step-up?acr=2fa&return_to=${encodeURIComponent(`${AUTH_ORIGIN}/sessions`)}&resume=foreign`);
    const res = await phone.post('/step-up', { ...formFields(page.text, 'totp'), code: codeAt(secret, 1) });
    expect(res.status).toBe(303);
    expect(res.text).not.toContain('evil.example.net');
    void browser;
  });
});

describe('on Express 4', () => {
  it('enrols, steps up and reaches the two-factor route the same way', async () => {
    const redis = await testRedisStore('step-up-express4');
    try {
      const users = fileUserDirectory([
        { id: 'alice', username: 'alice', name: 'alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
      ]);
      const app = await portalApp(redis, users, new KeyValueCredentialStore(redis.store), [], express4 as unknown as () => Express);
      const browser = new Browser(app);
      expect((await browser.post('/login', { username: 'alice', password: 'alice-password', return_to: '' })).status).toBe(302);
      const admin = await browser.get('/admin');
      expect(admin.status).toBe(302);
      expect(new URL(admin.headers.location!).pathname).toBe('/step-up');
      const page = await browser.get('/two-factor/totp');
      const secret = secretOf(page.text);
      expect((await browser.post('/two-factor/totp', { ...formFields(page.text), code: codeAt(secret) })).status).toBe(200);
      expect((await browser.get('/admin')).body).toMatchObject({ acr: '2fa' });
      expectProblem(await browser.get('/step-up?acr=9fa'), 400, 'invalid_request');
    } finally {
      await redis.cleanup();
    }
  });
});
