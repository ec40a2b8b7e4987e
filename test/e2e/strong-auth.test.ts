import type { Browser, BrowserContext, Page } from 'playwright-core';
import { enrolInBrowser, stepUpInBrowser as stepUpWith, totpCodeAt as codeAt } from '../helpers/authenticator-app';
import { launchChromium } from '../helpers/browser';
import { startInProcessDemo, type InProcessDemo } from '../helpers/demo-sites';
import { checkPage } from '../helpers/page-checks';
import { testRedisStore } from '../helpers/redis';

// Strong authentication in headless Chromium against the demo (every site in this process behind its front door,
// real Redis): a user enrols an authenticator app on the way to a two-factor page, later steps up from the shop to
// the admin audit page with a code computed here by otpauth, a replayed code and a used recovery code are refused,
// and factor attempts are throttled. Real cookies, CSP (form-action across subdomains), redirects.
jest.setTimeout(120_000);

describe('strong authentication in the browser', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let demo: InProcessDemo;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const cspViolations: string[] = [];
  let shop: string;
  let audit: string;
  let secret = '';
  let enrolmentCode = '';
  let recoveryCodes: string[] = [];

  beforeAll(async () => {
    redis = await testRedisStore('e2e-strong');
    demo = await startInProcessDemo(redis.store);
    browser = await launchChromium(['sso.localhost']);
    const port = demo.config.publicPort;
    shop = `http://shop.sso.localhost:${port}/`;
    audit = `http://admin.sso.localhost:${port}/audit`;
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await demo?.close();
    await redis?.cleanup();
  });

  async function signedInPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    await page.goto(shop);
    await page.waitForURL((url) => url.hostname.startsWith('auth.'));
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice-password');
    await Promise.all([page.waitForURL((url) => url.href === shop), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    return page;
  }

  it('enrols an authenticator app on the way to a two-factor page, sees ten recovery codes once, and arrives', async () => {
    const page = await signedInPage();
    await page.goto(audit);
    await page.waitForURL((url) => url.pathname === '/two-factor/totp');
    await expect(page.locator('figure.qr svg').count()).resolves.toBe(1);
    await checkPage(page, 'portal-totp-enrolment');
    const enrolment = await enrolInBrowser(page);
    secret = enrolment.app.secret;
    enrolmentCode = enrolment.code;
    recoveryCodes = enrolment.recoveryCodes;
    expect(recoveryCodes).toHaveLength(10);
    await checkPage(page, 'portal-recovery-codes');
    await Promise.all([page.waitForURL(audit), page.getByRole('link', { name: 'Continue' }).click()]);
    await expect(page.locator('#audit').textContent()).resolves.toContain('No changes today');
  });

  it('steps up from the shop to the admin audit page with the next code, after a replayed code is refused', async () => {
    const page = await signedInPage();
    await page.goto(audit);
    await page.waitForURL((url) => url.pathname === '/step-up');
    await expect(page.locator('input[name="password"]').count()).resolves.toBe(0);
    await checkPage(page, 'portal-step-up');
    // The code the enrolment used is spent: a replay is refused.
    await stepUpWith(page, 'totp', enrolmentCode);
    await expect(page.getByRole('alert').textContent()).resolves.toContain('did not work');
    expect(new URL(page.url()).hostname.startsWith('auth.')).toBe(true);
    await stepUpWith(page, 'totp', codeAt(secret, 1));
    await page.waitForURL(audit);
    await expect(page.locator('#audit').textContent()).resolves.toContain('No changes today');
    // The shop, on another subdomain, sees the same raised session.
    await page.goto(shop);
    await expect(page.locator('#who').getAttribute('data-user-id')).resolves.toBe('directory:demo|alice');
    await checkPage(page, 'shop-after-step-up');
  });

  it('accepts a recovery code once', async () => {
    const first = await signedInPage();
    await first.goto(audit);
    await first.waitForURL((url) => url.pathname === '/step-up');
    await stepUpWith(first, 'recovery', recoveryCodes[0]!);
    await first.waitForURL(audit);
    const second = await signedInPage();
    await second.goto(audit);
    await second.waitForURL((url) => url.pathname === '/step-up');
    await stepUpWith(second, 'recovery', recoveryCodes[0]!);
    await expect(second.getByRole('alert').textContent()).resolves.toContain('did not work');
  });

  it('throttles factor attempts: after the limit even the right code is refused with 429', async () => {
    const page = await signedInPage();
    await page.goto(audit);
    await page.waitForURL((url) => url.pathname === '/step-up');
    const wrong = codeAt(secret, 2) === '000000' ? '111111' : '000000';
    let status = 0;
    for (let attempt = 0; attempt < 8 && status !== 429; attempt += 1) {
      const form = page.locator('form[data-method="totp"]');
      await form.locator('input[name="code"]').fill(wrong);
      const [response] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === 'POST' && res.request().isNavigationRequest()),
        form.getByRole('button', { name: 'Continue' }).click(),
      ]);
      status = response.status();
      await page.waitForLoadState('load');
    }
    expect(status).toBe(429);
    await stepUpWith(page, 'totp', codeAt(secret, 1));
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Too many failed attempts');
    expect(new URL(page.url()).hostname.startsWith('auth.')).toBe(true);
  });

  it('shows no Content Security Policy violation on the way', () => {
    expect(cspViolations).toEqual([]);
  });
});
