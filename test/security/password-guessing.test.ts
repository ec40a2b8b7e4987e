/**
 * Online password guessing against the login portal, wired as docs/portal-and-demo.md shows (behind a TLS proxy on
 * loopback, `trust proxy` set), on a real Redis. The attacker presents many client addresses through
 * X-Forwarded-For from loopback, as a botnet or an IPv6 host rotating its interface ids would. Every password the
 * portal checks is counted, so a test can say how many guesses got through.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import request from 'supertest';
import { errorHandler, securityHeaders } from '../../lib/http';
import { DEVICE_COOKIE } from '../../lib/portal/throttle/device-cookie';
import { issueDeviceToken, deviceTokenKey } from '../../lib/portal/throttle/device-token';
import { loginPortal } from '../../lib/portal/login-portal';
import { DEFAULT_THROTTLE_LIMITS, type LoginThrottleOptions } from '../../lib/portal/throttle/login-throttle-options';
import { fileUserDirectory, normalizeUsername, type UserDirectory } from '../../lib/portal/user-directory';
import { ssoSession } from '../../lib/session';
import { hashPassword } from '../../lib/util/password-hash';
import { setCookieValue } from '../helpers/cookies';
import { testRedisStore } from '../helpers/redis';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const FAST = { N: 1024, r: 8, p: 1 };
// A whole hour: every window of every limit starts here, so the bounds below are exact.
const START = Date.UTC(2031, 0, 1, 12);

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let directory: UserDirectory;
let run = 0;

beforeAll(async () => {
  redis = await testRedisStore('password-guessing');
  directory = fileUserDirectory([
    { id: 'alice', username: 'alice', name: 'Alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
    { id: 'mallory', username: 'mallory', name: 'Mallory', roles: [], passwordHash: await hashPassword('mallory-password', FAST) },
  ]);
});
afterAll(async () => {
  await redis.cleanup();
});

interface Portal {
  server: Server;
  clock: { now: number };
  /** Passwords the portal checked, per normalized username. */
  checks: Map<string, number>;
  close(): Promise<void>;
}

async function startPortal(throttle: LoginThrottleOptions = {}): Promise<Portal> {
  run += 1;
  const clock = { now: START };
  const checks = new Map<string, number>();
  const users: UserDirectory = {
    findById: (id) => directory.findById(id),
    verifyPassword: (username, password) => {
      checks.set(normalizeUsername(username), (checks.get(normalizeUsername(username)) ?? 0) + 1);
      return directory.verifyPassword(username, password);
    },
  };
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(securityHeaders());
  app.use(
    ssoSession({
      store: redis.store,
      cookieDomain: 'example.test',
      secret: randomBytes(32).toString('base64url'),
      loginUrl: `${AUTH_ORIGIN}/login`,
    }),
  );
  app.use(loginPortal({ users, store: redis.store, throttle: { namespace: `guessing-${run}`, clock: () => clock.now, ...throttle } }));
  app.use(errorHandler({ log: false }));
  const server = app.listen(0);
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, clock, checks, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A password login as a browser on the portal's page would post it, from `address` (the proxy's X-Forwarded-For). */
function login(portal: Portal, username: string, password: string, address: string, cookie?: string): request.Test {
  const test = request(portal.server)
    .post('/login')
    .set('Host', AUTH)
    .set('X-Forwarded-Proto', 'https')
    .set('X-Forwarded-For', address)
    .set('Origin', AUTH_ORIGIN)
    .type('form');
  if (cookie !== undefined) test.set('Cookie', cookie);
  return test.send({ username, password });
}

/** The i-th address of a distinct network: IPv4 addresses and IPv6 /64s, alternately. */
function network(i: number): string {
  return i % 2 === 0 ? `198.51.${(i >> 8) & 0xff}.${i & 0xff}` : `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`;
}

/** A browser of alice's that has signed in before: its device cookie. */
async function knownBrowser(portal: Portal, address = '192.0.2.10'): Promise<string> {
  const res = await login(portal, 'alice', 'alice-password', address);
  expect(res.status).toBe(302);
  return setCookieValue(res, DEVICE_COOKIE)!;
}

describe('password guessing against the login portal', () => {
  let portal: Portal;
  afterEach(async () => {
    await portal.close();
  });

  it('gives the addresses of one IPv6 /64 one budget together', async () => {
    portal = await startPortal();
    const statuses = [];
    for (let i = 1; i <= 50; i += 1) {
      statuses.push(
        (await login(portal, 'alice', `guess-${i}`, `2001:db8:77:1:${i.toString(16)}:${randomBytes(2).toString('hex')}::9`)).status,
      );
    }
    const budget = DEFAULT_THROTTLE_LIMITS.perAccountAndNetwork.failures;
    expect(portal.checks.get('alice')).toBe(budget);
    expect(statuses.filter((status) => status === 401)).toHaveLength(budget);
    expect(statuses.filter((status) => status === 429)).toHaveLength(50 - budget);
    // The next /64 is another network.
    expect((await login(portal, 'alice', 'guess', '2001:db8:77:2::9')).status).toBe(401);
  });

  it('gives the addresses of one IPv6 /64 one budget across accounts too (password spraying)', async () => {
    portal = await startPortal({ perNetwork: { failures: 10, windowSeconds: 900 } });
    for (let i = 1; i <= 50; i += 1) await login(portal, `user-${i}`, 'Summer2031!', `2001:db8:78:1::${i.toString(16)}`);
    expect([...portal.checks.values()].reduce((a, b) => a + b, 0)).toBe(10);
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address', async () => {
    portal = await startPortal();
    for (let i = 0; i < 3; i += 1) expect((await login(portal, 'alice', `guess-${i}`, '203.0.113.77')).status).toBe(401);
    for (let i = 3; i < 5; i += 1) expect((await login(portal, 'alice', `guess-${i}`, '::ffff:203.0.113.77')).status).toBe(401);
    expect((await login(portal, 'alice', 'alice-password', '203.0.113.77')).status).toBe(429);
    expect((await login(portal, 'alice', 'alice-password', '::ffff:cb00:714d')).status).toBe(429);
    expect(portal.checks.get('alice')).toBe(5);
  });

  it("does not stop the user's known browser, however many networks the attacker guesses from", async () => {
    portal = await startPortal();
    const device = await knownBrowser(portal);
    for (let i = 0; i < 200; i += 1) await login(portal, 'alice', `guess-${i}`, network(i));
    const res = await login(portal, 'alice', 'alice-password', '192.0.2.10', device);
    expect(res.status).toBe(302);
    expect(setCookieValue(res, '__Secure-sso.sid')).toBeDefined();
    // From another network too: the browser is known, not its address.
    const travelling = await login(portal, 'alice', 'alice-password', '100.64.0.1', setCookieValue(res, DEVICE_COOKIE));
    expect(travelling.status).toBe(302);
  });

  it('throttles a new browser of the user like a stranger', async () => {
    portal = await startPortal();
    await knownBrowser(portal);
    for (let i = 0; i < 200; i += 1) await login(portal, 'alice', `guess-${i}`, network(i));
    const res = await login(portal, 'alice', 'alice-password', '192.0.2.10');
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBe(3600);
    expect(setCookieValue(res, '__Secure-sso.sid')).toBeUndefined();
  });

  it('keeps the guesses at one account bounded through a distributed attack lasting an hour', async () => {
    portal = await startPortal();
    let device = await knownBrowser(portal);
    const perMinute = 10;
    let answered401 = 0;
    for (let minute = 0; minute < 60; minute += 1) {
      portal.clock.now = START + minute * 60_000;
      for (let i = 0; i < perMinute; i += 1) {
        const res = await login(portal, 'alice', `guess-${minute}-${i}`, network(minute * perMinute + i));
        expect([401, 429]).toContain(res.status);
        if (res.status === 401) answered401 += 1;
      }
      if (minute % 20 === 19) {
        // The user signs in on the known browser while the attack goes on.
        const res = await login(portal, 'alice', 'alice-password', '192.0.2.10', device);
        expect(res.status).toBe(302);
        device = setCookieValue(res, DEVICE_COOKIE)!;
      }
    }
    const userSignIns = 1 + 3;
    const attackerChecks = portal.checks.get('alice')! - userSignIns;
    // 600 guesses from 600 networks; one perAccount window spans the hour.
    expect(attackerChecks).toBe(answered401);
    expect(attackerChecks).toBeGreaterThan(0);
    expect(attackerChecks).toBeLessThanOrEqual(DEFAULT_THROTTLE_LIMITS.perAccount.failures);
  });

  it('keeps the bound under a burst of parallel guesses', async () => {
    portal = await startPortal();
    const statuses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => login(portal, 'alice', `guess-${i}`, network(i)).then((r) => r.status)),
    );
    expect(portal.checks.get('alice')).toBeLessThanOrEqual(DEFAULT_THROTTLE_LIMITS.perAccount.failures);
    expect(statuses.filter((status) => status === 401)).toHaveLength(portal.checks.get('alice')!);
  });

  it("gives nothing to another user's device cookie, a forged one, or one from another portal", async () => {
    portal = await startPortal({ deviceTokenSecret: 'password-guessing-test-secret-0123456789ab' });
    const mallorys = setCookieValue(await login(portal, 'mallory', 'mallory-password', '198.18.0.1'), DEVICE_COOKIE)!;
    const alices = await knownBrowser(portal);
    const other = await startPortal({ deviceTokenSecret: 'another-portal-secret-0123456789-abcdefgh' });
    const elsewhere = await knownBrowser(other).finally(() => other.close());
    const [version, nonce, expires, mac] = alices.slice(DEVICE_COOKIE.length + 1).split('.') as [string, string, string, string];
    const forgeries = [
      mallorys,
      elsewhere,
      `${DEVICE_COOKIE}=${issueDeviceToken(deviceTokenKey(randomBytes(32)), 'alice', START / 1000, 3600)}`,
      `${DEVICE_COOKIE}=${version}.${nonce}.${Number(expires) + 86400}.${mac}`,
      `${DEVICE_COOKIE}=${version}.${randomBytes(16).toString('base64url')}.${expires}.${mac}`,
    ];
    for (let i = 0; i < 40; i += 1) await login(portal, 'alice', `guess-${i}`, network(i));
    const checked = portal.checks.get('alice');
    for (const cookie of forgeries) {
      expect((await login(portal, 'alice', 'alice-password', '198.18.0.1', cookie)).status).toBe(429);
    }
    expect(portal.checks.get('alice')).toBe(checked);
    // The genuine cookie still works: the forgeries were refused for what they are.
    expect((await login(portal, 'alice', 'alice-password', '198.18.0.1', alices)).status).toBe(302);
  });

  it('revokes a device cookie that keeps failing, so a stolen one buys a few guesses at most', async () => {
    portal = await startPortal();
    const device = await knownBrowser(portal);
    for (let i = 0; i < 40; i += 1) await login(portal, 'alice', `guess-${i}`, network(i));
    const before = portal.checks.get('alice')!;
    const statuses = [];
    for (let i = 0; i < 30; i += 1) statuses.push((await login(portal, 'alice', `stolen-${i}`, '198.18.0.2', device)).status);
    const perDevice = DEFAULT_THROTTLE_LIMITS.perDevice.failures;
    expect(portal.checks.get('alice')! - before).toBe(perDevice);
    expect(statuses.slice(perDevice)).toEqual(new Array(30 - perDevice).fill(429));
    // Revoked for good: the right password from that cookie is a stranger's now, and strangers are throttled.
    portal.clock.now += DEFAULT_THROTTLE_LIMITS.perDevice.windowSeconds * 1000;
    for (let i = 0; i < 40; i += 1) await login(portal, 'alice', `guess-${i}`, network(100 + i));
    expect((await login(portal, 'alice', 'alice-password', '192.0.2.10', device)).status).toBe(429);
  });

  it('answers the same whether or not the account exists', async () => {
    portal = await startPortal();
    const answers = [];
    for (const username of ['alice', 'no-such-user']) {
      for (let i = 0; i < 40; i += 1) await login(portal, username, `guess-${i}`, network(i));
      const res = await login(portal, username, 'x', '198.18.0.3');
      const { date: _date, 'content-length': _length, etag: _etag, ...headers } = res.headers;
      answers.push({ status: res.status, headers, page: res.text.split(username).join('?') });
    }
    expect(answers[0]!.status).toBe(429);
    expect(answers[1]).toEqual(answers[0]);
  });
});
