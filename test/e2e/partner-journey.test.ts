import { passSecondFactor } from '../helpers/authenticator-app';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, newWatchedPage } from '../helpers/browser';
import { startDemoProcesses, type DemoProcesses } from '../helpers/demo';
import { checkPage } from '../helpers/page-checks';

// One session across domains, in headless Chromium against `npm run demo` as a user starts it (every site its own
// process, one front door): signed in on the shop, the partner app on another domain (partner.localhost, its own
// process and its own cookie) signs in through the portal's OpenID Provider without a password, and signing out on
// the portal's domain signs the partner out by back-channel.
jest.setTimeout(120_000);

describe('the partner app on another domain, through the portal as OpenID Provider', () => {
  let t: DemoProcesses;
  let browser: Browser;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    t = await startDemoProcesses();
    browser = await launchChromium(['sso.localhost', t.partnerDomain]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  // The partner learns of the ended session by a back-channel call after the portal has answered the browser, so
  // the test waits for that outcome (the partner refusing its cookie), up to a generous deadline.
  // It asks from a page of the partner, so the browser sends the partner's cookie as it would.
  async function partnerStatus(probe: Page, expected: number): Promise<number> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const status = await probe.evaluate(
        async () => (await fetch('/me', { headers: { Accept: 'application/json' }, redirect: 'manual' })).status,
      );
      if (status === expected || Date.now() > deadline) return status;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  it('signs in on the partner without a password, with its own cookie, and is signed out there when the portal session ends', async () => {
    const { context, page } = await newWatchedPage(browser, cspViolations);
    await page.goto(t.url('shop'));
    await page.waitForURL((url) => url.hostname === `auth.${t.domain}`);
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice-password');
    await Promise.all([page.waitForURL(t.url('shop')), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);

    // The partner: to the portal's provider and back, without the portal's login page.
    const visited: string[] = [];
    page.on('request', (request) => {
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) visited.push(request.url());
    });
    await page.goto(t.url('partner'));
    await page.waitForURL(t.url('partner'));
    const portal = new URL(t.url('auth')).origin;
    expect(visited.some((url) => url.startsWith(`${portal}/oidc/`))).toBe(true);
    expect(visited.some((url) => url.startsWith(`${portal}/login`))).toBe(false);
    const who = page.locator('#who');
    await expect(who.getAttribute('data-user-id')).resolves.toBe(`oidc:${portal}|directory:demo|alice`);
    await expect(who.getAttribute('data-method')).resolves.toBe('oidc');
    await expect(page.locator('p.meta').textContent()).resolves.toContain('admin');
    await checkPage(page, 'partner-signed-in');

    // Two sessions, one sign-on: the partner's cookie is its own domain's, the portal's never reaches the partner.
    const cookies = await context.cookies();
    const partnerCookie = cookies.find((cookie) => cookie.name === 'partner.sid');
    const portalCookie = cookies.find((cookie) => cookie.name === 'sso.sid');
    expect(partnerCookie?.domain).toMatch(new RegExp(`^\\.?${t.partnerDomain.replace(/\./g, '\\.')}$`));
    expect(portalCookie?.domain).toMatch(/^\.?sso\.localhost$/);
    expect(partnerCookie?.httpOnly).toBe(true);
    expect((await context.cookies(t.url('partner'))).map((cookie) => cookie.name)).toEqual(['partner.sid']);
    const probe = await context.newPage();
    await probe.goto(t.url('partner', '/signed-out'));
    expect(await partnerStatus(probe, 200)).toBe(200);

    // Sign out on the shop: the portal session ends, and the provider tells the partner by back-channel.
    await page.goto(t.url('shop'));
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(t.url('auth', '/login'))),
      page.getByRole('button', { name: 'Sign out everywhere' }).click(),
    ]);
    expect(await partnerStatus(probe, 401)).toBe(401);
    // The partner's cookie is still in the browser, but its session is gone: the partner asks the portal again.
    expect((await context.cookies(t.url('partner'))).map((cookie) => cookie.name)).toEqual(['partner.sid']);
    await page.goto(t.url('partner'));
    await page.waitForURL((url) => url.href.startsWith(t.url('auth', '/login')));
    expect(cspViolations).toEqual([]);
    await context.close();
  });
  async function signInAtShop(page: Page, username: string): Promise<void> {
    await page.goto(t.url('shop'));
    await page.waitForURL((url) => url.hostname === `auth.${t.domain}`);
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(`${username}-password`);
    await Promise.all([page.waitForURL(t.url('shop')), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
  }

  it("signs in at the portal in the middle of the partner's login, and the partner's sign-out ends the portal session too", async () => {
    const { context, page } = await newWatchedPage(browser, cspViolations);
    await page.goto(t.url('partner'));
    await page.waitForURL((url) => url.href.startsWith(t.url('auth', '/login')));
    await page.getByLabel('Username').fill('bob');
    await page.getByLabel('Password').fill('bob-password');
    // The login form's redirect chain ends on another domain: the portal continues it outside the form's CSP.
    await Promise.all([page.waitForURL(t.url('partner')), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    await expect(page.locator('#who').getAttribute('data-user-id')).resolves.toMatch(/\|directory:demo\|bob$/);

    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(t.url('auth', '/oidc/session/end'))),
      page.getByRole('button', { name: /Sign out/ }).click(),
    ]);
    await checkPage(page, 'provider-logout-confirm');
    await Promise.all([page.waitForURL(t.url('partner', '/signed-out')), page.getByRole('button', { name: 'Sign out' }).click()]);
    await page.locator('#signed-out').waitFor();
    // The parent-domain session ended too: the shop asks for a sign-in.
    await page.goto(t.url('shop'));
    await page.waitForURL((url) => url.href.startsWith(t.url('auth', '/login')));
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it("signs the partner out when the browser's portal session is revoked from another browser on the sessions page", async () => {
    const laptop = await newWatchedPage(browser, cspViolations);
    await signInAtShop(laptop.page, 'alice');
    await laptop.page.goto(t.url('partner'));
    await laptop.page.waitForURL(t.url('partner'));
    const probe = await laptop.context.newPage();
    await probe.goto(t.url('partner', '/signed-out'));
    expect(await partnerStatus(probe, 200)).toBe(200);

    const phone = await newWatchedPage(browser, cspViolations);
    await signInAtShop(phone.page, 'alice');
    // Revoking a session needs a fresh second factor (the demo's access policy): the phone sets up an
    // authenticator app on its way to admin, which gives its session two factors just now.
    await phone.page.goto(t.url('admin'));
    await passSecondFactor(phone.page, t.url('admin'));
    await phone.page.goto(t.url('auth', '/sessions'));
    const other = phone.page.locator('li:not([aria-current="true"])', { has: phone.page.getByRole('button', { name: /Revoke/ }) });
    // The other tests end their sessions, so the laptop's is alice's only other browser.
    await expect(other.count()).resolves.toBe(1);
    await Promise.all([phone.page.waitForURL(/revoked=1/), other.getByRole('button', { name: /Revoke/ }).click()]);
    await checkPage(phone.page, 'portal-sessions-revoked');
    expect(await partnerStatus(probe, 401)).toBe(401);
    expect(cspViolations).toEqual([]);
    await laptop.context.close();
    await phone.context.close();
  });
});
