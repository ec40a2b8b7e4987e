import type { Browser } from 'playwright-core';
import { escapeHtml, renderConfirmationPage, renderMessagePage } from '../../lib/qr/qr-pages';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import type { Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { patchStatus, qrconnectQuery, SHOP_REDIRECT, startProvider, type ProviderHarness } from '../helpers/qr-harness';
import { testRedisStore } from '../helpers/redis';
import request from 'supertest';
import { generateAppSecret, hashAppSecret } from '../../lib/qr/app-registry';

/** Reads the QR code as a phone camera would, from a screenshot of the code's element only (fast to decode). */
async function scanQr(page: Page): Promise<string> {
  const png = PNG.sync.read(await page.locator('#qr-code').screenshot());
  const code = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
  if (!code) throw new Error('no QR code found on the page');
  return code.data;
}

describe('page rendering', () => {
  it('escapes what it shows, so a hostile user agent cannot inject markup', () => {
    const html = renderConfirmationPage({
      appName: 'Shop',
      status: 'pending',
      requesterIp: '127.0.0.1',
      requesterUserAgent: '<script>alert(1)</script>',
      createdAt: 0,
      actionUrl: '/sns/qr-logins/x/confirmation',
      stylesheetUrl: '/sns/qr-login/qr-login.css',
      isScanner: false,
    });
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain(escapeHtml('<script>alert(1)</script>'));
    expect(renderMessagePage({ title: 't', message: '"><img src=x>', stylesheetUrl: '/s.css' })).not.toContain('"><img');
  });

  const request = {
    appName: 'Shop',
    requesterIp: '198.51.100.7',
    requesterUserAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
    createdAt: Date.UTC(2031, 0, 1, 12),
    now: Date.UTC(2031, 0, 1, 12) + 10_000,
    actionUrl: '/sns/qr-logins/x/confirmation',
    stylesheetUrl: '/sns/qr-login/qr-login.css',
    userName: 'Alice Example',
  };

  it('names the requesting device in words, its IP, how long ago it asked and the account, never the raw user agent', () => {
    const html = renderConfirmationPage({ ...request, status: 'pending', isScanner: false });
    expect(html).toContain('<dd id="qr-ua">Chrome on Linux</dd>');
    expect(html).not.toContain('Mozilla/5.0');
    expect(html).toContain('<dd id="qr-ip">198.51.100.7</dd>');
    expect(html).toContain(`<time datetime="${new Date(request.createdAt).toISOString()}">just now</time>`);
    expect(html).toContain('<dd id="qr-account">Alice Example</dd>');
    expect(html).toContain('<h1>Sign in to Shop on another device?</h1>');
    expect(html).toContain('<link rel="stylesheet" href="/sns/qr-login/qr-login.css">');
    expect(html).not.toMatch(/<script|<style|\sstyle=|\son[a-z]+=/i);
  });

  it('offers Deny in the same place and form as Confirm, warning against codes someone else sent', () => {
    const html = renderConfirmationPage({ ...request, status: 'pending', isScanner: false });
    expect(html).toMatch(/<div class="decision">.*id="qr-denied" class="deny">Deny<.*id="qr-confirmed" class="confirm">Confirm</);
    expect(html).toContain('If someone sent you this code or asked you to scan it, deny');
  });

  it.each([
    ['confirmed', 'You confirmed this sign-in.'],
    ['denied', 'You denied this sign-in. Nobody was signed in.'],
    ['expired', 'This sign-in request has expired.'],
  ] as const)('says plainly what happened once the request is %s, without buttons', (status, words) => {
    const html = renderConfirmationPage({ ...request, status, isScanner: true });
    expect(html).toContain(words);
    expect(html).not.toContain('<button');
  });
});

describe('the QR pages as the provider serves them', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let idp: ProviderHarness;
  const LOGIN_PAGE = 'https://auth.example.test/login?from=qr';

  beforeAll(async () => {
    redis = await testRedisStore('qr-pages-served');
    idp = await startProvider(redis.store, {
      rateLimits: false,
      apps: [
        {
          appid: 'shop',
          secretHash: hashAppSecret(generateAppSecret()),
          name: 'Shop',
          redirectUris: [SHOP_REDIRECT],
          loginPageUrl: LOGIN_PAGE,
        },
      ],
    });
  });

  afterAll(async () => {
    await idp.close();
    await redis.cleanup();
  });

  it("links the app's own sign-in page as another way to sign in, and styles the page with the kit's stylesheet", async () => {
    const page = await request(idp.url)
      .get('/sns/oauth2/qrconnect')
      .query(qrconnectQuery({ format: 'html' }))
      .set('Accept', 'text/html');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<a id="qr-other-ways" href="${LOGIN_PAGE}">Use another way to sign in</a>`);
    expect(page.text).toContain('<link rel="stylesheet" href="/sns/qr-login/qr-login.css">');
    const css = await request(idp.url).get('/sns/qr-login/qr-login.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.text).toContain('.decision');
  });

  it("styles the page of a request that cannot finish with the kit's stylesheet too", async () => {
    const page = await request(idp.url).get('/sns/qr-logins/no-such-request/redirection').set('Accept', 'text/html');
    expect(page.status).toBe(404);
    expect(page.text).toContain('<link rel="stylesheet" href="/sns/qr-login/qr-login.css">');
  });
});

describe('the QR page in a real browser (Chromium)', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let idp: ProviderHarness;
  let browser: Browser;

  beforeAll(async () => {
    redis = await testRedisStore('qr-pages');
    idp = await startProvider(redis.store, { rateLimits: false });
    browser = await launchChromium(['example.test']);
  });

  afterAll(async () => {
    await browser.close();
    await idp.close();
    await redis.cleanup();
  });

  it('shows a scannable QR of the confirm URL, follows the request live and lands on redirect_uri with code and state', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    const port = new URL(idp.url).port;
    await page.goto(`http://localhost:${port}/sns/oauth2/qrconnect?${qrconnectQuery({ format: 'html' })}`);

    const scanned = await scanQr(page);
    expect(scanned).toMatch(new RegExp(`^http://localhost:${port}/sns/qr-logins/[A-Za-z0-9_-]{32}/confirmation$`));
    const authCode = /qr-logins\/([^/]+)\//.exec(scanned)![1]!;

    expect((await patchStatus(idp.url, authCode, 'scanned', 'alice')).status).toBe(200);
    await page.waitForSelector('#qr-status[data-status="scanned"]', { timeout: 3000 });
    // The relying app is not running here (its host resolves to a closed port); the navigation request is enough.
    const navigation = page.waitForRequest((req) => req.url().startsWith(SHOP_REDIRECT), { timeout: 5000 });
    expect((await patchStatus(idp.url, authCode, 'confirmed', 'alice')).status).toBe(200);
    const landed = new URL((await navigation).url());
    expect(landed?.searchParams.get('state')).toBe('st-123');
    expect(landed?.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // The strict CSP held: no inline script was needed, so the browser reported no violation.
    expect(consoleErrors.filter((text) => /Content Security Policy/i.test(text))).toEqual([]);
    await context.close();
  });

  it('falls back to polling the status URL when the browser has no EventSource', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.addInitScript(() => {
      delete (globalThis as { EventSource?: unknown }).EventSource;
    });
    const statusRequests: string[] = [];
    page.on('request', (req) => {
      if (req.url().endsWith('/status')) statusRequests.push(req.url());
    });
    const port = new URL(idp.url).port;
    await page.goto(`http://localhost:${port}/sns/oauth2/qrconnect?${qrconnectQuery({ format: 'html' })}`);
    const authCode = /qr-logins\/([^/]+)\//.exec(await scanQr(page))![1]!;
    await patchStatus(idp.url, authCode, 'scanned', 'alice');
    await page.waitForSelector('#qr-status[data-status="scanned"]', { timeout: 5000 });
    expect(statusRequests.length).toBeGreaterThan(0);
    await context.close();
  });

  it('shows the denial and offers a new code', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const port = new URL(idp.url).port;
    await page.goto(`http://localhost:${port}/sns/oauth2/qrconnect?${qrconnectQuery({ format: 'html' })}`);
    const authCode = /qr-logins\/([^/]+)\//.exec(await scanQr(page))![1]!;
    await patchStatus(idp.url, authCode, 'scanned', 'alice');
    await patchStatus(idp.url, authCode, 'denied', 'alice');
    await page.waitForSelector('#qr-status[data-status="denied"]', { timeout: 3000 });
    expect(await page.isVisible('#qr-retry a')).toBe(true);
    expect(await page.isHidden('#qr-code')).toBe(true);
    await context.close();
  });
});
