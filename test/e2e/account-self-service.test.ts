import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../helpers/browser';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls';
import { BREACHED, linkIn, mailTo, PEOPLE, startAccountHarness, type AccountHarness } from '../portal/accounts/account-harness';

// Self-service accounts in headless Chromium, over real TLS (a throw-away CA; the browser is told to accept it):
// a forgotten password is reset through the mail the SMTP server received, a common and a breached password are
// refused with a reason on the page, and a password change signs out the user's other browser. Pages are checked
// at 390 px for horizontal scrolling.
jest.setTimeout(90_000);

const DOMAIN = 'accounts.test';

describe('self-service accounts in the browser', () => {
  let certs: TestCertificates;
  let server: Server;
  let harness: AccountHarness;
  let browser: Browser;
  let origin = '';
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    certs = makeTestCertificates(DOMAIN);
    // The server listens first: the portal's public URL needs its port.
    const served: { app?: Express } = {};
    server = createServer({ cert: readFileSync(certs.certPath), key: readFileSync(certs.keyPath) }, (req, res) => served.app!(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `https://auth.${DOMAIN}:${(server.address() as AddressInfo).port}`;
    harness = await startAccountHarness({ portalUrl: origin, cookieDomain: DOMAIN });
    served.app = harness.app;
    browser = await launchChromium([DOMAIN]);
  }, 60_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await harness?.close();
    certs?.remove();
  });

  async function newPage(width = 1280): Promise<Page> {
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width, height: 844 } });
    contexts.push(context);
    return context.newPage();
  }

  async function signIn(page: Page, username: string, password: string): Promise<void> {
    await page.goto(`${origin}/login?return_to=${encodeURIComponent(`${origin}/sessions`)}`);
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await Promise.all([page.waitForURL(`${origin}/sessions`), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
  }

  async function fitsTheScreen(page: Page): Promise<void> {
    await expect(
      page.evaluate(
        () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
      ),
    ).resolves.toBeLessThanOrEqual(390);
  }

  it('resets a forgotten password through the mailed link, then signs in with it', async () => {
    const page = await newPage(390);
    await page.goto(`${origin}/login`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('Email address').fill(PEOPLE.alice.email);
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your mail');
    await fitsTheScreen(page);
    const mail = await mailTo(harness.catcher, PEOPLE.alice.email);
    const link = linkIn(mail.text, `${origin}/password/reset?token=`);
    await page.goto(link);
    // The token left the address bar with the first redirect.
    expect(page.url()).toBe(`${origin}/password/reset`);
    await page.getByLabel('New password').fill('password123');
    await page.getByRole('button', { name: 'Set new password' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('one of the most common passwords');
    await fitsTheScreen(page);
    await page.getByLabel('New password').fill('harbour-violet-seventy');
    await page.getByRole('button', { name: 'Set new password' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Your password was changed');
    await screenshot(page, 'account-reset-done-390');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('harbour-violet-seventy');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.pathname !== '/login');
    await page.goto(link);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('This link was used already');
  });

  it('refuses a breached password with its reason, and a change signs out the other browser', async () => {
    const laptop = await newPage();
    const phone = await newPage(390);
    await signIn(laptop, 'bob', PEOPLE.bob.password);
    await signIn(phone, 'bob', PEOPLE.bob.password);
    await laptop.getByRole('link', { name: 'Change your password' }).click();
    await laptop.getByLabel('Current password').fill(PEOPLE.bob.password);
    await laptop.getByLabel('New password').fill(BREACHED);
    await laptop.getByRole('button', { name: 'Change password' }).click();
    await expect(laptop.getByRole('alert').textContent()).resolves.toContain('appeared in a data breach');
    await laptop.getByLabel('Current password').fill(PEOPLE.bob.password);
    await laptop.getByLabel('New password').fill('meadow-copper-thirteen');
    await expect(laptop.getByLabel('Sign me out everywhere else (other browsers and apps)').isChecked()).resolves.toBe(true);
    await laptop.getByRole('button', { name: 'Change password' }).click();
    await expect(laptop.getByRole('status').textContent()).resolves.toBe('Your password was changed.');
    await phone.goto(`${origin}/sessions`);
    expect(new URL(phone.url()).pathname).toBe('/login');
    await fitsTheScreen(phone);
    await laptop.goto(`${origin}/sessions`);
    expect(new URL(laptop.url()).pathname).toBe('/sessions');
  });
});
