import type { Browser } from 'playwright-core';
import { escapeHtml, renderConfirmationPage, renderMessagePage } from '../../lib/qr/qr-pages';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import type { Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { patchStatus, qrconnectQuery, SHOP_REDIRECT, startProvider, type ProviderHarness } from '../helpers/qr-harness';
import { testRedisStore } from '../helpers/redis';

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
      isScanner: false,
    });
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain(escapeHtml('<script>alert(1)</script>'));
    expect(renderMessagePage('t', '"><img src=x>')).not.toContain('"><img');
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
