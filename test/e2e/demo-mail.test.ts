import type { Browser, BrowserContext } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { startInProcessDemo, type InProcessDemo } from '../helpers/demo-sites';
import { checkPage } from '../helpers/page-checks';
import { testRedisStore } from '../helpers/redis';

// A newcomer to the demo forgets bob's password: asks for a link at the portal, reads the mail at the demo's mail
// catcher (a real SMTP server in the auth site), follows the link, sets a new password and signs in with it. The
// account pages and the catcher are checked by axe-core at desktop and phone width.
jest.setTimeout(120_000);

describe('the demo mail catcher', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let demo: InProcessDemo;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    redis = await testRedisStore('e2e-demo-mail');
    demo = await startInProcessDemo(redis.store);
    browser = await launchChromium(['sso.localhost']);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await demo?.close();
    await redis?.cleanup();
  });

  it('shows the reset mail, whose link sets a new password for bob', async () => {
    const auth = `http://auth.sso.localhost:${demo.config.publicPort}`;
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${auth}/login`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await checkPage(page, 'account-forgot-password');
    await page.getByLabel('Email address').fill('bob@sso.localhost');
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your mail');
    // The mail goes out after the answer: reload the inbox until it is there, as the newcomer would.
    const resetMail = page.getByRole('link', { name: 'Reset your SSO Demo password' });
    for (let tries = 0; tries < 20; tries += 1) {
      await page.goto(`${auth}/demo-mail/`);
      if ((await resetMail.count()) > 0) break;
      await page.waitForTimeout(500);
    }
    await checkPage(page, 'demo-mail-inbox');
    await resetMail.first().click();
    await checkPage(page, 'demo-mail-message');
    await page.getByRole('link', { name: /password\/reset\?token=/ }).click();
    await page.waitForURL(`${auth}/password/reset`);
    await checkPage(page, 'account-reset-password');
    await page.getByLabel('New password').fill('bobs-new-lighthouse-phrase');
    await page.getByRole('button', { name: 'Set new password' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Your password was changed');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('Username').fill('bob');
    await page.getByLabel('Password').fill('bobs-new-lighthouse-phrase');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.hostname.startsWith('shop.'));
    await page.goto(`${auth}/password`);
    await checkPage(page, 'account-change-password');
  });
});
