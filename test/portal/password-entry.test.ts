/**
 * How the portal takes a password (ASVS 5.0 V6.2): fields browsers and password managers can fill and paste into
 * (6.2.6, 6.2.7), and a password checked as typed, not cut, case-folded or trimmed, whatever its length (6.2.8,
 * 6.2.9). The one change the kit makes is Unicode NFC, which docs/accounts.md explains.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type Request } from 'express';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { TOTP, Secret } from 'otpauth';
import { createSecretSealer, KeyValueCredentialStore, RecoveryCodes, TotpAuthenticator } from '../../lib/credentials';
import { errorHandler, securityHeaders } from '../../lib/http';
import { loginPortal, type LoginPortalOptions } from '../../lib/portal/login-portal';
import { recoveryCodeFactor, totpFactor } from '../../lib/portal/two-factor/second-factor';
import { fileUserDirectory, type UserDirectory } from '../../lib/portal/user-directory';
import { requireSession, ssoSession } from '../../lib/session';
import { hashPassword } from '../../lib/util/password-hash';
import { launchChromium } from '../helpers/browser';
import { testRedisStore } from '../helpers/redis';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const FAST = { N: 1024, r: 8, p: 1 };
const SECRET = 'password-entry-secret-0123456789-abcdefghij';
const SESSION_COOKIE = '__Secure-sso.sid';
// Every attempt of this file is a deliberate wrong password; the throttle has its own tests.
const NO_THROTTLE = { failures: 100_000, windowSeconds: 60 };
const THROTTLE = { perAccountAndNetwork: NO_THROTTLE, perAccount: NO_THROTTLE, perNetwork: NO_THROTTLE, perDevice: NO_THROTTLE };

/** A password of `length` characters, letters and digits drawn at random, so any change of one character matters. */
function passwordOf(length: number): string {
  return randomBytes(length).toString('base64url').replace(/[-_]/g, 'x').slice(0, length);
}

/** `password` with the character at `index` replaced by another one. */
function changedAt(password: string, index: number): string {
  return `${password.slice(0, index)}${password[index] === 'a' ? 'b' : 'a'}${password.slice(index + 1)}`;
}

const PASSWORDS = {
  alice: 'alice-password',
  long64: passwordOf(64),
  long128: passwordOf(128),
  long1000: passwordOf(1000),
  long1024: passwordOf(1024),
  cased: 'Correct-Horse-BATTERY-staple',
  spaced: '  two spaces either side  ',
  // Composed (NFC) as most keyboards type it.
  accented: 'cr\u00e8me-br\u00fbl\u00e9e-au-caf\u00e9',
};
type Username = keyof typeof PASSWORDS;

let users: UserDirectory;

beforeAll(async () => {
  users = fileUserDirectory(
    await Promise.all(
      Object.entries(PASSWORDS).map(async ([username, password]) => ({
        id: username,
        username,
        name: username,
        roles: [],
        passwordHash: await hashPassword(password, FAST),
      })),
    ),
  );
});

function portalApp(redis: Awaited<ReturnType<typeof testRedisStore>>, portal: Partial<LoginPortalOptions> = {}): Express {
  const app = express();
  app.set('trust proxy', true);
  app.use(securityHeaders());
  app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: SECRET, loginUrl: `${AUTH_ORIGIN}/login` }));
  app.use(loginPortal({ users, store: redis.store, throttle: THROTTLE, ...portal }));
  app.use(errorHandler({ log: false }));
  return app;
}

/** A form post of the portal's own origin, with the session cookie when given. */
function post(app: Express, path: string, form: Record<string, string>, cookie?: string): request.Test {
  const test = request(app)
    .post(path)
    .set('Host', AUTH)
    .set('X-Forwarded-Proto', 'https')
    .set('X-Forwarded-For', '203.0.113.7')
    .set('Origin', AUTH_ORIGIN)
    .type('form');
  if (cookie) test.set('Cookie', cookie);
  return test.send(form);
}

function get(app: Express, path: string, cookie?: string): request.Test {
  const test = request(app).get(path).set('Host', AUTH).set('X-Forwarded-Proto', 'https').set('Accept', 'text/html');
  return cookie ? test.set('Cookie', cookie) : test;
}

function sessionCookieOf(res: request.Response): string | undefined {
  const lines = (res.headers['set-cookie'] as unknown as string[] | undefined) ?? [];
  return lines.find((line) => line.startsWith(`${SESSION_COOKIE}=`))?.split(';')[0];
}

/** The status of a password login: 302 and a session cookie when it signed in. */
async function loginStatus(app: Express, username: string, password: string): Promise<number> {
  const res = await post(app, '/login', { username, password, return_to: '' });
  if (res.status === 302) expect(sessionCookieOf(res)).toBeDefined();
  return res.status;
}

/** Every `<input>` of a page, as its attributes. */
function inputsOf(html: string): Array<Record<string, string>> {
  return [...html.matchAll(/<input\b([^>]*)>/g)].map((match) =>
    Object.fromEntries([...(match[1] as string).matchAll(/([a-z-]+)(?:="([^"]*)")?/g)].map((attr) => [attr[1], attr[2] ?? ''])),
  );
}

/**
 * What a page must hold for password managers and paste to work (ASVS 6.2.6, 6.2.7): every password field masked
 * (`type="password"`) with `current-password` or `new-password`, long enough for 64 characters; every username field
 * with a `username` token; one-time code fields with `one-time-code`; no event-handler attribute (no `onpaste`) and no
 * inline script anywhere, and a CSP that would refuse them anyway. Answers the page's password fields.
 */
function expectPasswordManagerFriendly(res: request.Response): Array<Record<string, string>> {
  const csp = String(res.headers['content-security-policy']);
  expect(csp).toMatch(/script-src 'self'/);
  expect(csp).not.toMatch(/unsafe-inline|unsafe-hashes|unsafe-eval/);
  expect(res.text).not.toMatch(/\son[a-z]+\s*=/i);
  expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)/i);
  const inputs = inputsOf(res.text);
  const passwords = inputs.filter((input) => input.type === 'password' || /password/i.test(`${input.name} ${input.id}`));
  for (const field of passwords) {
    expect(field).toMatchObject({ type: 'password', autocomplete: expect.stringMatching(/^(current|new)-password$/) });
    expect(field.readonly).toBeUndefined();
    if (field.maxlength !== undefined) expect(Number(field.maxlength)).toBeGreaterThanOrEqual(64);
  }
  for (const field of inputs.filter((input) => input.name === 'username')) {
    expect(field.autocomplete).toMatch(/^username( webauthn)?$/);
  }
  for (const field of inputs.filter((input) => input.id === 'totp-code')) expect(field.autocomplete).toBe('one-time-code');
  return passwords;
}

// What a script blocking paste or password managers would contain: a listener for paste, copy, cut, drop or
// beforeinput events, the clipboard, or a field made read-only or its autocomplete changed.
const PASTE_BLOCKING =
  /['"](?:paste|copy|cut|drop|beforeinput)['"]|\bon(?:paste|copy|cut|drop|beforeinput)\b|clipboard|readonly|\.autocomplete\s*=|setAttribute\(\s*['"]autocomplete/gi;

/** The page's own scripts: none may block paste, reach the clipboard or change how fields are filled. */
async function expectScriptsLeavePasteAlone(app: Express, html: string): Promise<void> {
  const sources = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((match) => match[1] as string);
  expect(sources.length).toBeGreaterThan(0);
  for (const source of sources) {
    const script = await get(app, source);
    expect(script.status).toBe(200);
    expect({ source, blocks: script.text.match(PASTE_BLOCKING) ?? [] }).toEqual({
      source,
      blocks: [],
    });
  }
}

describe('the portal’s password fields', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;

  beforeAll(async () => {
    redis = await testRedisStore('password-entry');
  });
  afterAll(() => redis.cleanup());

  it('masks the password on the login page and lets password managers fill it and paste into it', async () => {
    const app = portalApp(redis);
    const page = await get(app, '/login');
    expect(page.status).toBe(200);
    expect(expectPasswordManagerFriendly(page)).toEqual([expect.objectContaining({ name: 'password', autocomplete: 'current-password' })]);
    expect(inputsOf(page.text).find((input) => input.name === 'username')?.autocomplete).toBe('username');
    await expectScriptsLeavePasteAlone(app, page.text);
    // The page shown again after a wrong password keeps the same fields.
    const failed = await post(app, '/login', { username: 'alice', password: 'wrong', return_to: '' });
    expect(failed.status).toBe(401);
    expect(expectPasswordManagerFriendly(failed)).toHaveLength(1);
  });

  it('offers saved passkeys in the username field (username webauthn) when the portal has passkeys', async () => {
    const app = portalApp(redis, { passkeys: { credentials: new KeyValueCredentialStore(redis.store) } });
    const page = await get(app, '/login');
    expect(expectPasswordManagerFriendly(page)).toHaveLength(1);
    expect(inputsOf(page.text).find((input) => input.name === 'username')?.autocomplete).toBe('username webauthn');
    await expectScriptsLeavePasteAlone(app, page.text);
  });

  it('does the same on the two-factor pages: the app enrolment code, and the step-up page asking the password again', async () => {
    const credentials = new KeyValueCredentialStore(redis.store);
    const app = portalApp(redis, { twoFactor: { credentials, sealingKey: randomBytes(32), issuer: 'Example' } });
    const signedIn = await post(app, '/login', { username: 'alice', password: PASSWORDS.alice, return_to: '' });
    let cookie = sessionCookieOf(signedIn)!;
    const enrolment = await get(app, '/two-factor/totp', cookie);
    expect(enrolment.status).toBe(200);
    expect(expectPasswordManagerFriendly(enrolment)).toEqual([]);
    expect(inputsOf(enrolment.text).find((input) => input.name === 'code')?.autocomplete).toBe('one-time-code');
    const secret = /data-totp-secret>([A-Z2-7 ]+)</.exec(enrolment.text)![1]!.replace(/ /g, '');
    const pending = inputsOf(enrolment.text).find((input) => input.name === 'pending')!.value!;
    const code = new TOTP({ secret: Secret.fromBase32(secret) }).generate();
    const enrolled = await post(app, '/two-factor/totp', { pending, code, return_to: '' }, cookie);
    expect(enrolled.status).toBe(200);
    cookie = sessionCookieOf(enrolled) ?? cookie;
    // Ten minutes later the login is older than max_age=300: the page asks the password with each method.
    const realNow = Date.now.bind(Date);
    const later = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 600_000);
    try {
      const stepUp = await get(app, '/step-up?acr=2fa&max_age=300', cookie);
      expect(stepUp.status).toBe(200);
      const passwordFields = expectPasswordManagerFriendly(stepUp);
      expect(passwordFields.length).toBeGreaterThanOrEqual(2);
      for (const field of passwordFields) expect(field.autocomplete).toBe('current-password');
      expect(inputsOf(stepUp.text).find((input) => input.id === 'totp-code')?.autocomplete).toBe('one-time-code');
      await expectScriptsLeavePasteAlone(app, stepUp.text);
    } finally {
      later.mockRestore();
    }
  });
});

describe('the portal checks a password exactly as typed', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let app: Express;

  beforeAll(async () => {
    redis = await testRedisStore('password-exact');
    app = portalApp(redis);
  });
  afterAll(() => redis.cleanup());

  it.each([['long64'], ['long128'], ['long1000'], ['long1024']] as Array<[Username]>)(
    'signs in with the %s password and refuses it one character off at the end, at position 70 or with one more character',
    async (username) => {
      const password = PASSWORDS[username];
      expect(await loginStatus(app, username, password)).toBe(302);
      expect(await loginStatus(app, username, changedAt(password, password.length - 1))).toBe(401);
      if (password.length > 70) expect(await loginStatus(app, username, changedAt(password, 70))).toBe(401);
      // What a store cutting passwords after 64 characters or 72 bytes (bcrypt) would let in.
      for (const cut of [64, 72].filter((length) => length < password.length)) {
        expect(await loginStatus(app, username, password.slice(0, cut))).toBe(401);
      }
      if (password.length < 1024) expect(await loginStatus(app, username, `${password}x`)).toBe(401);
    },
  );

  it('refuses a password over 1024 characters with 400 rather than cutting it to one that would pass', async () => {
    const res = await post(app, '/login', { username: 'long1024', password: `${PASSWORDS.long1024}x`, return_to: '' });
    expect(res.status).toBe(400);
    expect(sessionCookieOf(res)).toBeUndefined();
  });

  it('keeps the case: the password in lower or upper case is another password', async () => {
    expect(await loginStatus(app, 'cased', PASSWORDS.cased)).toBe(302);
    expect(await loginStatus(app, 'cased', PASSWORDS.cased.toLowerCase())).toBe(401);
    expect(await loginStatus(app, 'cased', PASSWORDS.cased.toUpperCase())).toBe(401);
  });

  it('keeps spaces: leading and trailing spaces are part of the password', async () => {
    expect(await loginStatus(app, 'spaced', PASSWORDS.spaced)).toBe(302);
    expect(await loginStatus(app, 'spaced', PASSWORDS.spaced.trim())).toBe(401);
    expect(await loginStatus(app, 'spaced', PASSWORDS.spaced.trimStart())).toBe(401);
    expect(await loginStatus(app, 'spaced', PASSWORDS.spaced.trimEnd())).toBe(401);
    expect(await loginStatus(app, 'spaced', PASSWORDS.spaced.replace(/ {2}/g, ' '))).toBe(401);
  });

  it('changes only the Unicode form (NFC): accents typed as combining marks sign in, look-alike compatibility letters do not', async () => {
    const decomposed = PASSWORDS.accented.normalize('NFD');
    expect(decomposed).not.toBe(PASSWORDS.accented);
    expect(await loginStatus(app, 'accented', PASSWORDS.accented)).toBe(302);
    expect(await loginStatus(app, 'accented', decomposed)).toBe(302);
    // Fullwidth letters are the same password under NFKC; NFC keeps them apart.
    const fullwidth = PASSWORDS.accented.replace('cr', '\uff43\uff52');
    expect(fullwidth.normalize('NFKC')).toBe(PASSWORDS.accented);
    expect(await loginStatus(app, 'accented', fullwidth)).toBe(401);
    expect(await loginStatus(app, 'accented', 'creme-brulee-au-cafe')).toBe(401);
  });
});

describe('typing and pasting into the portal’s fields in Chromium', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    redis = await testRedisStore('password-paste');
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    origin = `http://auth.paste.test:${port}`;
    const app = express();
    app.use(securityHeaders());
    app.use(
      ssoSession({
        store: redis.store,
        cookieDomain: 'paste.test',
        secret: SECRET,
        loginUrl: `${origin}/login`,
        allowInsecureLocalDevelopment: true,
        allowedRedirectPorts: [port],
      }),
    );
    app.use(loginPortal({ users, store: redis.store, throttle: THROTTLE }));
    app.get('/whoami', requireSession(), (req, res) => res.json({ id: req.user!.id, method: req.user!.method }));
    app.use(errorHandler({ log: false }));
    server.on('request', app);
    browser = await launchChromium(['paste.test']);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await redis?.cleanup();
  });

  it('lets the browser send the codes the portal hands out through the step-up fields, and stops other characters', async () => {
    const credentials = new KeyValueCredentialStore(redis.store);
    const sealer = createSecretSealer({ key: randomBytes(32) });
    const totp = new TotpAuthenticator({ credentials, sealer, issuer: 'Example' });
    const recovery = new RecoveryCodes(credentials, sealer);
    const [recoveryCode] = await recovery.regenerate('directory:local|alice');
    const req = {} as Request;
    const fields = `${await totpFactor(totp).renderFields('directory:local|alice', req)}${await recoveryCodeFactor(recovery, totp).renderFields('directory:local|alice', req)}`;
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.setContent(`<form>${fields}</form>`);
      // A pattern the browser cannot compile is ignored silently, so a wrong character must be caught too.
      const valid = (id: string, value: string) =>
        page.locator(`#${id}`).evaluate((element, typed) => {
          const input = element as unknown as { value: string; checkValidity(): boolean };
          input.value = typed;
          return input.checkValidity();
        }, value);
      expect(await valid('recovery-code', recoveryCode!)).toBe(true);
      expect(await valid('recovery-code', recoveryCode!.toLowerCase().replace(/-/g, ' '))).toBe(true);
      expect(await valid('recovery-code', `${recoveryCode!.slice(0, 10)}!`)).toBe(false);
      expect(await valid('totp-code', '123 456')).toBe(true);
      expect(await valid('totp-code', '12a456')).toBe(false);
    } finally {
      await context.close();
    }
  });

  it('signs in with a password copied from another page and pasted into the field with the keyboard', async () => {
    const context = await browser.newContext();
    try {
      // The password as a password manager or a note would hold it: copied there with Ctrl+C.
      const notes = await context.newPage();
      await notes.setContent(`<textarea id="note">${PASSWORDS.long128}</textarea>`);
      await notes.focus('#note');
      await notes.keyboard.press('Control+A');
      await notes.keyboard.press('Control+C');
      const page = await context.newPage();
      await page.goto(`${origin}/login?return_to=${encodeURIComponent(`${origin}/whoami`)}`);
      await page.getByLabel('Username').fill('long128');
      const password = page.getByLabel('Password');
      await password.focus();
      // Records whether a paste event reached the field, and whether the browser made it (a trusted event).
      await password.evaluate((element) => {
        type PasteEvent = { isTrusted: boolean };
        const field = element as unknown as {
          addEventListener(type: string, listener: (event: PasteEvent) => void): void;
          setAttribute(name: string, value: string): void;
        };
        field.addEventListener('paste', (event) => field.setAttribute('data-pasted', String(event.isTrusted)));
      });
      await page.keyboard.press('Control+V');
      expect(await password.getAttribute('data-pasted')).toBe('true');
      expect(await password.inputValue()).toBe(PASSWORDS.long128);
      await Promise.all([page.waitForURL(`${origin}/whoami`, { timeout: 10_000 }), page.getByRole('button', { name: 'Sign in' }).click()]);
      expect(JSON.parse((await page.locator('body').innerText()) as string)).toEqual({ id: 'directory:local|long128', method: 'password' });
    } finally {
      await context.close();
    }
  });
});
