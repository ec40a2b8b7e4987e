import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { decodeQrFromPage, launchChromium, screenshot } from '../helpers/browser';
import { startDemoForTest, type DemoUnderTest } from '../helpers/demo';

// The demo's user journeys in headless Chromium: real cookies, real CSP, real CORS, real redirects.
// The domain is sso.localhost: QR login accepts plain http only on loopback names, and *.localhost is one.
jest.setTimeout(60_000);

describe('browser journeys through the demo', () => {
  let t: DemoUnderTest;
  let browser: Browser;
  let outsider: Server;
  let outsiderUrl: string;
  const cspViolations: string[] = [];

  beforeAll(async () => {
    t = await startDemoForTest('sso.localhost');
    browser = await launchChromium(['sso.localhost', 'other.test']);
    // A page on a loopback host outside the parent domain, to call the api from a non-allowed origin.
    outsider = createServer((_req, res) =>
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>outsider</title><h1>Another site</h1>'),
    );
    await new Promise<void>((resolve) => outsider.listen(0, '127.0.0.1', resolve));
    outsiderUrl = `http://evil.other.test:${(outsider.address() as AddressInfo).port}/`;
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (outsider ? outsider.close(() => resolve()) : resolve()));
    await t?.close();
  });

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    return { context, page };
  }

  async function passwordLogin(page: Page, username: string, password: string, returnTo: string): Promise<void> {
    await page.goto(returnTo);
    await page.waitForURL((url) => url.hostname.startsWith('auth.'));
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await Promise.all([page.waitForURL((url) => url.href === returnTo), page.getByRole('button', { name: 'Sign in' }).click()]);
  }

  it('(a) logs in once at the portal, then shop and admin both show alice, and the api answers the page', async () => {
    const { context, page } = await newPage();
    await page.goto(t.demo.url('shop'));
    await page.waitForURL((url) => url.hostname === `auth.${t.demo.domain}`);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe(t.demo.url('shop'));
    await screenshot(page, 'portal-login');
    // Keyboard only: the username field has focus, Tab reaches the password, Enter submits.
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type('alice-password');
    await Promise.all([page.waitForURL(t.demo.url('shop')), page.keyboard.press('Enter')]);
    await expectSignedIn(page, 'directory:demo|alice', 'password');
    await page.locator('#notes-status[data-state="ok"]').waitFor();
    await page.getByLabel('New note').fill('bought a lamp');
    await page.getByRole('button', { name: 'Add note' }).click();
    await page.locator('#notes-list li', { hasText: 'bought a lamp' }).waitFor();
    await screenshot(page, 'shop-signed-in');

    await page.goto(t.demo.url('admin'));
    await expectSignedIn(page, 'directory:demo|alice', 'password');
    await expect(page.locator('#reports').textContent()).resolves.toContain('3 orders today');
    await screenshot(page, 'admin-signed-in');

    await page.goto(t.demo.url('auth', '/sessions'));
    await expect(page.locator('tr[aria-current="true"]').textContent()).resolves.toContain('This browser');
    await screenshot(page, 'portal-sessions');
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it('(c) logs in through the demo OpenID provider', async () => {
    const { context, page } = await newPage();
    await page.goto(`${t.demo.url('auth', '/login')}?return_to=${encodeURIComponent(t.demo.url('shop'))}`);
    await page.getByRole('link', { name: 'Sign in with the Demo IdP' }).click();
    await page.waitForURL((url) => url.hostname === `idp.${t.demo.domain}`);
    await screenshot(page, 'idp-login');
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice-password');
    await Promise.all([page.waitForURL(t.demo.url('shop')), page.getByRole('button', { name: /Sign in/ }).click()]);
    // Linked by the demo's linkAccount: the provider's alice is the directory's alice, with the directory's roles.
    await expectSignedIn(page, 'directory:demo|alice', 'oidc');
    const me = await page.evaluate(async () => (await fetch('/me')).json());
    expect(me).toEqual({ id: 'directory:demo|alice', name: 'Alice Example', roles: ['admin'], method: 'oidc' });
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it("throttles the provider's own password page after 5 failures", async () => {
    const { context, page } = await newPage();
    await page.goto(`${t.demo.url('auth', '/login')}?return_to=${encodeURIComponent(t.demo.url('shop'))}`);
    await page.getByRole('link', { name: 'Sign in with the Demo IdP' }).click();
    await page.waitForURL((url) => url.hostname === `idp.${t.demo.domain}`);
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 6; attempt += 1) {
      await page.getByLabel('Password').fill(`guess-${attempt}`);
      await page.getByLabel('Username').fill('bob');
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.getByRole('button', { name: /Sign in/ }).click(),
      ]);
      statuses.push(response.status());
      await page.getByRole('alert').waitFor();
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    await context.close();
  });

  /** Desktop shows the QR code; the phone (signed in on the domain) scans it; resolves once the phone shows Confirm. */
  async function startQrLogin(): Promise<{
    desktop: { context: BrowserContext; page: Page };
    phone: { context: BrowserContext; page: Page };
  }> {
    const phone = await newPage();
    await passwordLogin(phone.page, 'alice', 'alice-password', t.demo.url('shop'));
    const desktop = await newPage();
    await desktop.page.goto(`${t.demo.url('auth', '/login')}?return_to=${encodeURIComponent(t.demo.url('shop'))}`);
    await desktop.page.getByRole('link', { name: 'Scan a QR code' }).click();
    await desktop.page.waitForURL((url) => url.hostname === `idp.${t.demo.domain}`);
    await desktop.page.locator('#qr-code svg').waitFor();
    await screenshot(desktop.page, 'qr-code');
    const scanned = await decodeQrFromPage(desktop.page);
    expect(new URL(scanned).origin).toBe(new URL(t.demo.url('idp')).origin);
    await phone.page.goto(scanned);
    await phone.page.locator('#qr-confirmed').waitFor();
    await screenshot(phone.page, 'qr-confirm-on-phone');
    return { desktop, phone };
  }

  // The confirmation page sends a same-origin referrer policy: under no-referrer Chromium would post its form with
  // `Origin: null`, and the provider's same-origin check would refuse it.
  it('(b) logs in by QR code confirmed on a phone that is signed in at the provider', async () => {
    const { desktop, phone } = await startQrLogin();
    await Promise.all([desktop.page.waitForURL(t.demo.url('shop'), { timeout: 8_000 }), phone.page.locator('#qr-confirmed').click()]);
    await expectSignedIn(desktop.page, undefined, 'qr');
    await screenshot(desktop.page, 'shop-after-qr');
    await desktop.context.close();
    await phone.context.close();
  });

  it('(d) signing out on admin signs out of shop too', async () => {
    const { context, page } = await newPage();
    await passwordLogin(page, 'alice', 'alice-password', t.demo.url('admin'));
    await expectSignedIn(page, 'directory:demo|alice', 'password');
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(t.demo.url('auth', '/login'))),
      page.getByRole('button', { name: 'Sign out everywhere' }).click(),
    ]);
    await page.goto(t.demo.url('shop'));
    await page.waitForURL((url) => url.href.startsWith(t.demo.url('auth', '/login')));
    expect(await page.locator('#who').count()).toBe(0);
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it('(e) lets a page of the domain call the api with credentials, and stops a page of another site', async () => {
    const { context, page } = await newPage();
    await passwordLogin(page, 'alice', 'alice-password', t.demo.url('shop'));
    const api = t.demo.url('api', '/notes');
    const call = (url: string) =>
      page.evaluate(async (target) => {
        try {
          const response = await fetch(target, {
            credentials: 'include',
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ title: 'cross-site?', body: '' }),
          });
          return `status ${response.status}`;
        } catch {
          return 'blocked';
        }
      }, url);
    await expect(call(api)).resolves.toBe('status 201');

    await page.goto(outsiderUrl);
    await expect(call(api)).resolves.toBe('blocked');
    const readable = await page.evaluate(async (target) => {
      try {
        await (await fetch(target, { credentials: 'include' })).text();
        return 'read';
      } catch {
        return 'blocked';
      }
    }, api);
    expect(readable).toBe('blocked');
    await page.goto(t.demo.url('shop'));
    const titles = await page.evaluate(async (target) => {
      const notes = (await (await fetch(target, { credentials: 'include' })).json()) as Array<{ title: string }>;
      return notes.map((note) => note.title);
    }, api);
    expect(titles.filter((title) => title === 'cross-site?')).toHaveLength(1);
    await context.close();
  });

  it('(f) shows bob the friendly 403 page on admin', async () => {
    const { context, page } = await newPage();
    await passwordLogin(page, 'bob', 'bob-password', t.demo.url('shop'));
    const response = await page.goto(t.demo.url('admin'));
    expect(response?.status()).toBe(403);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sorry, this page is for administrators');
    await expect(page.locator('#forbidden').textContent()).resolves.toContain('Bob Example');
    await screenshot(page, 'admin-forbidden-bob');
    await context.close();
  });

  it('keeps the portal usable by keyboard with a visible focus and an announced error', async () => {
    const { context, page } = await newPage();
    await page.goto(t.demo.url('auth', '/login'));
    expect(await page.locator(':focus').getAttribute('id')).toBe('username');
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type('wrong');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').waitFor();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Wrong username or password');
    // After a failure the password field has the focus, and the focus ring is drawn.
    expect(await page.locator(':focus').getAttribute('id')).toBe('password');
    type StyleWindow = { getComputedStyle(element: unknown): { outlineStyle: string } };
    const outline = await page
      .locator(':focus')
      .evaluate((element) => (globalThis as unknown as StyleWindow).getComputedStyle(element).outlineStyle);
    expect(outline).toBe('solid');
    await screenshot(page, 'portal-login-error');
    await context.close();
  });

  async function expectSignedIn(page: Page, userId: string | undefined, method: string): Promise<void> {
    const who = page.locator('#who');
    await who.waitFor();
    if (userId) await expect(who.getAttribute('data-user-id')).resolves.toBe(userId);
    await expect(who.getAttribute('data-method')).resolves.toBe(method);
  }
});
