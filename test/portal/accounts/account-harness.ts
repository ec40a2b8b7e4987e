import { randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import { Secret } from 'otpauth';
import request from 'supertest';
import { passwordPolicy, rangeBreachCheck, redisUserDirectory, type WritableUserDirectory } from '../../../lib/accounts';
import { createSecretSealer, KeyValueCredentialStore, TotpAuthenticator } from '../../../lib/credentials';
import { errorHandler, securityHeaders } from '../../../lib/http';
import { mailer, type Mailer } from '../../../lib/mail';
import { loginPortal } from '../../../lib/portal/login-portal';
import type { PortalAccountOptions } from '../../../lib/portal/accounts/account-options';
import { ssoSession } from '../../../lib/session';
import type { KeyValueStore } from '../../../lib/store';
import { hashPassword } from '../../../lib/util/password-hash';
import { AuthenticatorApp } from '../../helpers/authenticator-app';
import { startBreachRangeServer, type BreachRangeServer } from '../../helpers/breach-range-server';
import { recordEvents, type EventRecorder } from '../../helpers/event-recorder';
import { startMailCatcher, type MailCatcher } from '../../helpers/mail-catcher';
import { testRedisStore } from '../../helpers/redis';

export const AUTH = 'auth.example.test';
export const AUTH_ORIGIN = `https://${AUTH}`;
export const SESSION_COOKIE = '__Secure-sso.sid';
export const BREACHED = 'tangerine-harbour-lantern-1987';
const FAST = { N: 1024, r: 8, p: 1 };
const NO_LIMIT = { failures: 100_000, windowSeconds: 60 };
const THROTTLE = { perAccountAndNetwork: NO_LIMIT, perAccount: NO_LIMIT, perNetwork: NO_LIMIT, perDevice: NO_LIMIT };

/** The accounts every harness starts with, by username: password and address. */
export const PEOPLE = {
  alice: { password: 'alice-old-password-7', email: 'alice@example.test' },
  bob: { password: 'bob-old-password-7', email: 'bob@example.test' },
  carol: { password: 'carol-old-password-7', email: 'carol@example.test' },
  // Dave's only second factor is a passkey.
  dave: { password: 'dave-old-password-7', email: 'dave@example.test' },
  // Erin and Frank have an authenticator app, as Carol does: the portal accepts each time step's code once per user,
  // so tests that step up often share the steps out between users instead of waiting 30 s for the next one.
  erin: { password: 'erin-old-password-7', email: 'erin@example.test' },
  frank: { password: 'frank-old-password-7', email: 'frank@example.test' },
} as const;

/** The users with an enrolled authenticator app. */
export type AppUser = 'carol' | 'erin' | 'frank';
const APP_USERS: AppUser[] = ['carol', 'erin', 'frank'];

/** A portal with self-service accounts on real Redis, a real SMTP server, a fake breach range API. */
export interface AccountHarness {
  app: Express;
  users: WritableUserDirectory;
  store: KeyValueStore;
  mailer: Mailer;
  catcher: MailCatcher;
  range: BreachRangeServer;
  recorder: EventRecorder;
  /** The enrolled authenticator apps of Carol, Erin and Frank. */
  apps: Record<AppUser, AuthenticatorApp>;
  close(): Promise<void>;
}

/**
 * Starts the harness; `accounts` overrides the portal's account options (a mailer pointing elsewhere, throttles).
 *
 * @example
 * const harness = await startAccountHarness();
 */
export async function startAccountHarness(
  accounts: Partial<PortalAccountOptions> & { brokenMailer?: boolean; cookieDomain?: string } = {},
): Promise<AccountHarness> {
  const redis = await testRedisStore('accounts');
  const catcher = await startMailCatcher();
  const range = await startBreachRangeServer(new Map([[BREACHED, 812]]));
  const recorder = recordEvents({ app: 'auth' });
  const users = redisUserDirectory(redis.store);
  for (const [username, person] of Object.entries(PEOPLE)) {
    await users.createUser({
      id: `u-${username}`,
      username,
      name: username[0]!.toUpperCase() + username.slice(1),
      email: person.email,
      emailVerified: true,
      passwordHash: await hashPassword(person.password, FAST),
    });
  }
  const credentials = new KeyValueCredentialStore(redis.store);
  const sealingKey = randomBytes(32);
  const totp = new TotpAuthenticator({ credentials, sealer: createSecretSealer({ key: sealingKey }), issuer: 'Example' });
  await credentials.addPasskey({
    credentialId: randomBytes(16).toString('base64url'),
    userId: 'directory:local|u-dave',
    publicKey: randomBytes(77).toString('base64url'),
    counter: 0,
    transports: ['internal'],
    deviceType: 'multiDevice',
    backedUp: true,
    name: 'Laptop',
    createdAt: Math.floor(Date.now() / 1000),
  });
  const apps = {} as Record<AppUser, AuthenticatorApp>;
  for (const user of APP_USERS) {
    const secret = new Secret({ size: 20 }).base32;
    apps[user] = new AuthenticatorApp(secret);
    expect(await totp.enrol(`directory:local|u-${user}`, secret, await apps[user].nextCode())).toBe(true);
  }
  const mail: Mailer = mailer({
    smtp: { host: '127.0.0.1', port: accounts.brokenMailer ? 1 : catcher.port, timeoutSeconds: 2 },
    from: '"Example" <no-reply@example.test>',
    siteName: 'Example',
  });
  const { brokenMailer: _ignored, cookieDomain = 'example.test', ...overrides } = accounts;
  const portalUrl = overrides.portalUrl ?? AUTH_ORIGIN;
  const app = express();
  app.set('trust proxy', true);
  app.use(securityHeaders());
  app.use(
    ssoSession({
      store: redis.store,
      cookieDomain,
      secret: 'accounts-secret-0123456789-abcdefghijkl',
      loginUrl: `${portalUrl}/login`,
      events: recorder.events,
    }),
  );
  app.use(
    loginPortal({
      users,
      store: redis.store,
      throttle: THROTTLE,
      twoFactor: { credentials, sealingKey, issuer: 'Example' },
      passkeys: { credentials, rpName: 'Example' },
      accounts: {
        portalUrl: AUTH_ORIGIN,
        mailer: mail,
        passwordPolicy: passwordPolicy({ breachCheck: rangeBreachCheck({ url: range.url }), contextWords: ['example'] }),
        resetsPerAddress: NO_LIMIT,
        resetsPerNetwork: NO_LIMIT,
        // Tests sign in from several networks; the notice tests turn this kind back on.
        notifications: { newSignIn: false },
        ...overrides,
      },
    }),
  );
  app.use(errorHandler({ log: false }));
  return {
    app,
    users,
    store: redis.store,
    mailer: mail,
    catcher,
    range,
    recorder,
    apps,
    async close() {
      mail.close();
      await catcher.close();
      await range.close();
      await recorder.events.close();
      await redis.cleanup();
    },
  };
}

/** A form post of `origin` (the portal's own by default), from `network`, with cookies when given. */
export function post(
  app: Express,
  path: string,
  form: Record<string, string | string[]>,
  cookie = '',
  origin = AUTH_ORIGIN,
  network = '203.0.113.7',
): request.Test {
  const test = request(app)
    .post(path)
    .set('Host', AUTH)
    .set('X-Forwarded-Proto', 'https')
    .set('X-Forwarded-For', network)
    .set('Origin', origin)
    .set('Accept', 'text/html')
    .type('form');
  if (cookie) test.set('Cookie', cookie);
  return test.send(form);
}

export function get(app: Express, path: string, cookie = ''): request.Test {
  const test = request(app)
    .get(path)
    .set('Host', AUTH)
    .set('X-Forwarded-Proto', 'https')
    .set('X-Forwarded-For', '203.0.113.7')
    .set('Accept', 'text/html');
  return cookie ? test.set('Cookie', cookie) : test;
}

/** The `name=value` of a cookie the response set (undefined when it set none or cleared it). */
export function cookieOf(res: request.Response, name: string): string | undefined {
  const lines = (res.headers['set-cookie'] as unknown as string[] | undefined) ?? [];
  const pair = lines.find((line) => line.startsWith(`${name}=`))?.split(';')[0];
  return pair === undefined || pair === `${name}=` ? undefined : pair;
}

/** Signs in with a password; answers the session cookie. */
export async function signIn(app: Express, username: string, password: string, network = '203.0.113.7'): Promise<string> {
  const res = await post(app, '/login', { username, password, return_to: '' }, '', AUTH_ORIGIN, network);
  expect(res.status).toBe(302);
  return cookieOf(res, SESSION_COOKIE)!;
}

/**
 * The next mail to `address` (mails to others before it are passed over).
 *
 * @example
 * const mail = await mailTo(harness.catcher, 'alice@example.test');
 */
export async function mailTo(catcher: MailCatcher, address: string): Promise<Awaited<ReturnType<MailCatcher['nextMessage']>>> {
  for (;;) {
    const message = await catcher.nextMessage();
    if (message.envelopeTo.includes(address)) return message;
  }
}

/** The link of a received mail's plain text: the first URL starting with `prefix`. */
export function linkIn(text: string | undefined, prefix: string): string {
  const found = (text ?? '').split(/\s+/).find((word) => word.startsWith(prefix));
  if (!found) throw new Error(`no ${prefix} link in the mail:\n${text}`);
  return found;
}
