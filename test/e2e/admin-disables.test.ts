import type { Browser, BrowserContext, Page } from 'playwright-core';
import { enrolInBrowser } from '../helpers/authenticator-app';
import { launchChromium } from '../helpers/browser';
import { startInProcessDemo, type InProcessDemo } from '../helpers/demo-sites';
import { testRedisStore } from '../helpers/redis';

// An administrator disables a user in headless Chromium against the demo (every site in this process behind its
// front door, real Redis): the user's tabs still open on the shop and the admin site are signed out at their next
// request, and the user cannot sign in again.
jest.setTimeout(120_000);

describe('an administrator disables a user', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let demo: InProcessDemo;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let shop: string;
  let admin: string;

  beforeAll(async () => {
    redis = await testRedisStore('e2e-admin-disable');
    demo = await startInProcessDemo(redis.store);
    browser = await launchChromium(['sso.localhost']);
    const port = demo.config.publicPort;
    shop = `http://shop.sso.localhost:${port}/`;
    admin = `http://admin.sso.localhost:${port}/`;
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await demo?.close();
    await redis?.cleanup();
  });

  async function signedIn(username: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(shop);
    await page.waitForURL((url) => url.hostname.startsWith('auth.'));
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(`${username}-password`);
    await Promise.all([page.waitForURL((url) => url.href === shop), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    return { context, page };
  }

  it("signs the user's open tabs on the shop and the admin site out at their next request", async () => {
    // Bob has the shop open in one tab and the admin site (which tells him it is not for him) in another.
    const bob = await signedIn('bob');
    const bobAdmin = await bob.context.newPage();
    const forbidden = await bobAdmin.goto(admin);
    expect(forbidden?.status()).toBe(403);
    await expect(bob.page.locator('#who').getAttribute('data-user-id')).resolves.toBe('directory:demo|bob');

    // Alice, an admin, opens the accounts page: the admin site takes a second factor, here enrolled on the way.
    const alice = await signedIn('alice');
    await alice.page.goto(`${admin}accounts`);
    await alice.page.waitForURL((url) => url.pathname === '/two-factor/totp');
    await enrolInBrowser(alice.page);
    await Promise.all([alice.page.waitForURL(`${admin}accounts`), alice.page.getByRole('link', { name: 'Continue' }).click()]);
    const row = alice.page.locator('li[data-account="bob"]');
    await expect(row.textContent()).resolves.toContain('active');
    await Promise.all([
      alice.page.waitForURL((url) => url.search === '?done=disable'),
      row.getByRole('button', { name: /Disable/ }).click(),
    ]);
    await expect(alice.page.locator('li[data-account="bob"] .facts').textContent()).resolves.toContain('disabled');

    // Bob's next request on either site finds no session: both tabs land on the portal's sign-in page.
    // (reload resolves once the page it ends on has loaded, redirects followed.)
    const onLoginPage = (page: Page) => {
      const url = new URL(page.url());
      return { host: url.hostname.split('.')[0], path: url.pathname };
    };
    await bob.page.reload();
    expect(onLoginPage(bob.page)).toEqual({ host: 'auth', path: '/login' });
    await bobAdmin.reload();
    expect(onLoginPage(bobAdmin)).toEqual({ host: 'auth', path: '/login' });
    // And he cannot sign in again.
    await bob.page.getByLabel('Username').fill('bob');
    await bob.page.getByLabel('Password').fill('bob-password');
    await bob.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(bob.page.getByRole('alert').textContent()).resolves.toMatch(/did not work|incorrect|wrong/i);

    // Alice enables him again; the demo is as it was.
    const again = alice.page.locator('li[data-account="bob"]');
    await Promise.all([
      alice.page.waitForURL((url) => url.search === '?done=enable'),
      again.getByRole('button', { name: /Enable/ }).click(),
    ]);

    // "Send a reset link" mails bob his own single-use link (read in the demo's mail catcher); Alice sees no link.
    await Promise.all([
      alice.page.waitForURL((url) => url.search === '?done=reset-link'),
      alice.page.locator('li[data-account="bob"]').getByRole('button', { name: 'Send a reset link' }).click(),
    ]);
    await expect(alice.page.content()).resolves.not.toMatch(/password\/reset\?token=/);
    const inbox = await alice.context.newPage();
    await inbox.goto(`http://auth.sso.localhost:${demo.config.publicPort}/demo-mail/`);
    await expect(inbox.locator('body').textContent()).resolves.toContain('bob@sso.localhost');
  });
});
