import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';

/** Where e2e screenshots go (git-ignored). */
export const ARTIFACTS_DIR = resolve(__dirname, '../../test-artifacts');

/**
 * Headless Chromium with the given host names mapped to loopback, so `http://shop.sso.test:<port>` reaches the
 * in-process demo without touching DNS.
 */
export async function launchChromium(mappedDomains: string[]): Promise<Browser> {
  const rules = mappedDomains.map((domain) => `MAP *.${domain} 127.0.0.1, MAP ${domain} 127.0.0.1`).join(', ');
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', `--host-resolver-rules=${rules}`],
  });
}

/** Saves a full-page screenshot as test-artifacts/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS_DIR, `${name}.png`), fullPage: true });
}

/** Reads the QR code visible on the page from a screenshot, as a phone camera would. */
export async function decodeQrFromPage(page: Page): Promise<string> {
  const png = PNG.sync.read(await page.screenshot({ fullPage: true }));
  const code = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
  if (!code) throw new Error('no QR code found in the screenshot');
  return code.data;
}

/**
 * A page in a fresh context at desktop size whose Content-Security-Policy complaints (from the console) are pushed to
 * `violations`, so a journey can end with `expect(violations).toEqual([])`.
 *
 * @example
 * const { context, page } = await newWatchedPage(browser, cspViolations);
 */
export async function newWatchedPage(browser: Browser, violations: string[]): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  return { context, page };
}

/** Chromium's own virtual authenticator on a page, driven over CDP. */
export interface VirtualAuthenticator {
  cdp: CDPSession;
  authenticatorId: string;
}

/**
 * Adds to the page's browser Chromium's virtual authenticator: a platform authenticator holding resident keys and
 * verifying the user, as a laptop's fingerprint reader would, answering without a person (no passkey in it yet).
 *
 * @example
 * const { cdp, authenticatorId } = await addVirtualAuthenticator(page);
 */
export async function addVirtualAuthenticator(page: Page): Promise<VirtualAuthenticator> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}
