import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Browser, Page } from 'playwright-core';
import { errorHandler } from '../../lib/http';
import { requireSession, ssoSession } from '../../lib/session';
import { launchChromium, screenshot } from '../helpers/browser';
import { SESSION_SECRET, startProviderPortal, type ProviderPortal } from '../helpers/openid-provider-harness';
import { startPartnerApp, type PartnerApp } from '../helpers/partner-app';
import { testRedisStore } from '../helpers/redis';

// One user, one session, two domains, in headless Chromium: alice signs in on shop.sso.localhost (the parent
// domain's session), partner.localhost (express-openid-connect, another domain) signs her in through the portal's
// OpenID provider without a password, and "sign out everywhere" on the portal logs her out of partner by back-channel.
jest.setTimeout(60_000);

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;

describe('single sign-on across domains through the portal provider', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let portal: ProviderPortal;
  let partner: PartnerApp;
  let shop: Server;
  let shopOrigin: string;
  let browser: Browser;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    redis = await testRedisStore('op-journey');
    const shopApp = express();
    shop = shopApp.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => shop.once('listening', () => resolve()));
    const shopPort = (shop.address() as AddressInfo).port;
    shopOrigin = `http://shop.sso.localhost:${shopPort}`;

    partner = await startPartnerApp('partner.localhost');
    portal = await startProviderPortal({
      store: redis.store,
      clients: [
        {
          clientId: 'partner',
          clientSecret: SECRET,
          redirectUris: [partner.redirectUri],
          postLogoutRedirectUris: [partner.origin],
          backchannelLogoutUri: partner.backchannelLogoutUri,
        },
      ],
      browserHost: 'auth.sso.localhost',
      appPorts: [shopPort],
    });
    await partner.connect({
      issuer: portal.issuer,
      clientId: 'partner',
      clientSecret: SECRET,
      redisUrl: process.env.SSO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      redisPrefix: `${redis.prefix}partner:`,
    });

    shopApp.use(
      ssoSession({
        store: redis.store,
        cookieDomain: 'sso.localhost',
        secret: SESSION_SECRET,
        loginUrl: `${portal.issuer}/login`,
        allowInsecureLocalDevelopment: true,
        allowedRedirectPorts: [shopPort, portal.port],
      }),
    );
    shopApp.get('/', requireSession(), (req, res) => {
      res.type('html').send(`<!doctype html><title>Shop</title><p id="who" data-user-id="${req.user!.id}">${req.user!.name}</p>`);
    });
    shopApp.use(errorHandler({ log: false }));
    browser = await launchChromium(['sso.localhost', 'partner.localhost']);
  });

  afterAll(async () => {
    await browser?.close();
    await partner?.close();
    await portal?.close();
    shop?.closeAllConnections();
    await new Promise<void>((resolve) => (shop ? shop.close(() => resolve()) : resolve()));
    await redis?.cleanup();
  });

  function watch(page: Page): string[] {
    const visited: string[] = [];
    // Every top-level request, redirects included: where the browser was sent on its way.
    page.on('request', (request) => {
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) visited.push(request.url());
    });
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    return visited;
  }

  it('signs alice in on shop, then on partner without a password, then out of both from the portal', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const visited = watch(page);

    await page.goto(`${shopOrigin}/`);
    await page.waitForURL((url) => url.hostname === 'auth.sso.localhost' && url.pathname === '/login');
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill(portal.passwords.alice!);
    await Promise.all([page.waitForURL(`${shopOrigin}/`), page.getByRole('button', { name: 'Sign in' }).click()]);
    await expect(page.locator('#who').getAttribute('data-user-id')).resolves.toBe('directory:local|alice');

    const before = visited.length;
    await page.goto(`${partner.origin}/login`);
    await page.waitForURL(`${partner.origin}/`);
    await expect(page.locator('#who').getAttribute('data-sub')).resolves.toBe('directory:local|alice');
    // Through the provider, never through the portal's password page.
    const hops = visited.slice(before);
    expect(hops.some((url) => new URL(url).pathname.startsWith('/oidc/'))).toBe(true);
    expect(hops.some((url) => new URL(url).pathname === '/login' && new URL(url).hostname === 'auth.sso.localhost')).toBe(false);
    await screenshot(page, 'provider-partner-signed-in');
    // The partner refreshes its access token at the provider with its (rotating) refresh token.
    await page.goto(`${partner.origin}/refresh`);
    await expect(page.locator('#refreshed').getAttribute('data-changed')).resolves.toBe('true');

    const loggedOut = partner.nextBackchannelLogout();
    await page.goto(`${portal.issuer}/account`);
    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    expect(await loggedOut).toBe(204);

    await page.goto(`${partner.origin}/`);
    await expect(page.locator('#who').getAttribute('data-sub')).resolves.toBe('');
    await page.goto(`${shopOrigin}/`);
    await page.waitForURL((url) => url.hostname === 'auth.sso.localhost' && url.pathname === '/login');
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it('signs in at the portal during the partner login, and signs out of both from the partner (RP-initiated)', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    watch(page);
    await page.goto(`${partner.origin}/login`);
    await page.waitForURL((url) => url.hostname === 'auth.sso.localhost' && url.pathname === '/login');
    await page.getByLabel('Username').fill('bob');
    await page.getByLabel('Password').fill(portal.passwords.bob!);
    // The form's redirect chain ends at the client: the portal continues it outside the form's CSP form-action.
    await Promise.all([page.waitForURL(`${partner.origin}/`), page.getByRole('button', { name: 'Sign in' }).click()]);
    await expect(page.locator('#who').getAttribute('data-sub')).resolves.toBe('directory:local|bob');

    await page.goto(`${partner.origin}/logout`);
    await page.waitForURL((url) => url.hostname === 'auth.sso.localhost' && url.pathname === '/oidc/session/end');
    await screenshot(page, 'provider-logout-confirm');
    await Promise.all([page.waitForURL((url) => url.origin === partner.origin), page.getByRole('button', { name: 'Sign out' }).click()]);
    await expect(page.locator('#who').getAttribute('data-sub')).resolves.toBe('');
    // The parent-domain session ended too: shop asks for a sign-in.
    await page.goto(`${shopOrigin}/`);
    await page.waitForURL((url) => url.hostname === 'auth.sso.localhost' && url.pathname === '/login');
    expect(cspViolations).toEqual([]);
    await context.close();
  });
});
