import express, { type Express } from 'express';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import {
  errorHandler,
  fileUserDirectory,
  hashPassword,
  loginPortal,
  pinoSink,
  redisStreamSink,
  securityEvents,
  securityHeaders,
  ssoSession,
  type SecurityEvents,
} from '../../lib';
import { launchChromium } from '../helpers/browser';
import { setCookieValue } from '../helpers/cookies';
import { checkPage } from '../helpers/page-checks';
import { testRedisStore } from '../helpers/redis';

const AUTH = 'auth.example.test';
const AUTH_ORIGIN = `https://${AUTH}`;
const COOKIE = '__Secure-sso.sid';
const FAST = { N: 1024, r: 8, p: 1 };
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';

/** The portal with events in a Redis stream (or, `keep: false`, only in logs). */
async function portalApp(store: Awaited<ReturnType<typeof testRedisStore>>['store'], events: SecurityEvents): Promise<Express> {
  const users = fileUserDirectory([
    { id: 'u-alice', username: 'alice', name: 'Alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
    { id: 'u-bob', username: 'bob', name: 'Bob', roles: [], passwordHash: await hashPassword('bob-password', FAST) },
  ]);
  const app = express();
  app.set('trust proxy', true);
  app.use(securityHeaders());
  app.use(
    ssoSession({
      store,
      cookieDomain: 'example.test',
      secret: 'activity-page-secret-0123456789-abcdefghij',
      loginUrl: `${AUTH_ORIGIN}/login`,
      events,
    }),
  );
  app.use(loginPortal({ users, store }));
  app.use(errorHandler({ log: false }));
  return app;
}

function login(app: Express, username: string, password: string, address: string): request.Test {
  return request(app)
    .post('/login')
    .set('Host', AUTH)
    .set('X-Forwarded-Proto', 'https')
    .set('X-Forwarded-For', address)
    .set('Origin', AUTH_ORIGIN)
    .set('User-Agent', FIREFOX)
    .type('form')
    .send({ username, password, return_to: '' });
}

describe('the portal’s Recent security activity page', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let events: SecurityEvents;
  let app: Express;
  let chromium: Browser;

  beforeAll(async () => {
    redis = await testRedisStore('activity-page');
    events = securityEvents({ app: 'auth', sinks: [redisStreamSink({ store: redis.store })] });
    app = await portalApp(redis.store, events);
    chromium = await launchChromium(['example.test']);
  });
  afterAll(async () => {
    await chromium?.close();
    await events.close();
    await redis.cleanup();
  });

  /** A Chromium page whose requests to the portal are answered by the app in process, as behind a TLS proxy. */
  async function portalPage(cookie: string): Promise<Page> {
    const context = await chromium.newContext({ viewport: { width: 1280, height: 800 } });
    await context.route(`${AUTH_ORIGIN}/**`, async (route) => {
      const url = new URL(route.request().url());
      const res = await request(app)
        .get(`${url.pathname}${url.search}`)
        .set('Host', AUTH)
        .set('X-Forwarded-Proto', 'https')
        .set('Accept', route.request().headers().accept ?? '*/*')
        .set('Cookie', cookie)
        .buffer(true)
        .parse((response, done) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => done(null, Buffer.concat(chunks)));
        });
      const headers = Object.fromEntries(
        Object.entries(res.headers as Record<string, string | string[]>).map(([name, value]) => [
          name,
          Array.isArray(value) ? value.join(', ') : value,
        ]),
      );
      await route.fulfill({ status: res.status, headers, body: res.body as Buffer });
    });
    return context.newPage();
  }

  it('shows sign-ins with method, device and network, failed attempts on the account, and sessions an admin ended', async () => {
    // Someone else tries alice's username from another network, then alice signs in.
    expect((await login(app, 'Alice', 'guessed-password', '198.51.100.23')).status).toBe(401);
    const signedIn = await login(app, 'alice', 'alice-password', '203.0.113.5');
    expect(signedIn.status).toBe(302);
    const cookie = setCookieValue(signedIn, COOKIE)!;
    // Bob's failures are not alice's business.
    expect((await login(app, 'bob', 'wrong-password', '192.0.2.1')).status).toBe(401);
    // What an administrator's "sign out this user" records (the admin pages are their own area).
    events.emit('session.ended', { reason: 'admin', userId: 'directory:local|u-alice', actorId: 'directory:local|root', count: 2 });
    await events.flush();

    const page = await portalPage(cookie);
    const answer = await page.goto(`${AUTH_ORIGIN}/activity`);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['cache-control']).toBe('no-store');
    await expect(page.locator('h1').textContent()).resolves.toBe('Recent security activity');
    const items = (await page.locator('ul.activity li').allInnerTexts()).map((text) => text.replace(/\s+/g, ' ').trim());
    expect(items).toHaveLength(3);
    expect(items[0]).toMatch(/^An administrator signed you out/);
    expect(items[1]).toMatch(/^Signed in with your password .*Firefox 133 on Linux · network 203\.0\.113\.5\/32$/);
    expect(items[2]).toMatch(/^Failed sign-in attempt \(wrong password\) Failed .*network 198\.51\.100\.23\/32$/);
    expect(items.join(' ')).not.toContain('192.0.2.1');

    await checkPage(page, 'portal-activity', { everyImpact: true });

    await Promise.all([page.waitForURL(`${AUTH_ORIGIN}/sessions`), page.getByRole('link', { name: /This wasn’t me/ }).click()]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Your sessions');
    expect(await page.getByRole('link', { name: 'Recent security activity' }).getAttribute('href')).toBe('/activity');
    await page.goto(`${AUTH_ORIGIN}/activity`);
    expect(await page.getByRole('link', { name: 'Change your password' }).getAttribute('href')).toBe('/password/change');
    await page.context().close();
  });

  it('sends a visitor without a session to the login page', async () => {
    const res = await request(app).get('/activity').set('Host', AUTH).set('X-Forwarded-Proto', 'https');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`/login?return_to=${encodeURIComponent(`${AUTH_ORIGIN}/activity`)}`);
  });

  it('says so when the site keeps no events, instead of showing an empty record', async () => {
    const logsOnly = securityEvents({ sinks: [pinoSink({ destination: { write: () => true } as unknown as NodeJS.WritableStream })] });
    const plain = await portalApp(redis.store, logsOnly);
    const signedIn = await login(plain, 'bob', 'bob-password', '203.0.113.9');
    const res = await request(plain)
      .get('/activity')
      .set('Host', AUTH)
      .set('X-Forwarded-Proto', 'https')
      .set('Cookie', setCookieValue(signedIn, COOKIE)!);
    expect(res.status).toBe(200);
    expect(res.text).toContain('This site does not keep a record of security activity.');
    await logsOnly.close();
  });
});
