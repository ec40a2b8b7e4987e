import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { passSecondFactor, secondFactorReturnTo, type AuthenticatorApp } from '../helpers/authenticator-app';
import { ARTIFACTS_DIR, decodeQrFromPage, launchChromium, screenshot } from '../helpers/browser';
import { startDemoProcesses, type DemoProcesses } from '../helpers/demo';
import { checkPage, PHONE_WIDTH } from '../helpers/page-checks';

// The demo's user journeys in headless Chromium, against `npm run demo` as a user starts it: every site its own
// process, one front door. Real cookies, real CSP, real CORS, real redirects. The domain is sso.localhost: QR login
// accepts plain http only on loopback names, and *.localhost is one. Every kit page is screenshotted at desktop
// width and at 390 px (test-artifacts/) and checked with axe-core. Admin asks two factors: the journeys that reach it
// enrol an authenticator app at the portal (codes computed here by otpauth) or type its next code.
jest.setTimeout(120_000);

describe('browser journeys through the demo', () => {
  let t: DemoProcesses;
  let browser: Browser;
  let outsider: Server;
  let outsiderUrl: string;
  const cspViolations: string[] = [];
  // The users' authenticator apps, once they have enrolled one at the portal.
  const apps: Record<string, AuthenticatorApp | undefined> = {};

  beforeAll(async () => {
    t = await startDemoProcesses();
    browser = await launchChromium(['sso.localhost', 'other.test']);
    // A page on a loopback host outside the parent domain, to call the api from a non-allowed origin.
    outsider = createServer((_req, res) =>
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>outsider</title><h1>Another site</h1>'),
    );
    await new Promise<void>((resolve) => outsider.listen(0, '127.0.0.1', resolve));
    outsiderUrl = `http://evil.other.test:${(outsider.address() as AddressInfo).port}/`;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (outsider ? outsider.close(() => resolve()) : resolve()));
    await t?.close();
  });

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    return { context, page };
  }

  /** Where a navigation ended, with its answer's status and the start of the page's text, for a failure message. */
  async function whereItEnded(page: Page, answer: Response | null): Promise<string> {
    const text = await page
      .locator('body')
      .innerText()
      .catch(() => '');
    return `at ${page.url()} (answer ${answer?.status()}): ${text.slice(0, 300)}`;
  }

  async function passwordLogin(page: Page, username: string, password: string, returnTo: string): Promise<void> {
    const opened = await page.goto(returnTo);
    await page
      .waitForURL((url) => url.hostname.startsWith('auth.'))
      .catch(async (error: Error) => {
        // Say where the browser ended up instead of only that it timed out.
        throw new Error(`${returnTo} did not lead to the portal: ${await whereItEnded(page, opened)}\n${error.message}`);
      });
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await Promise.all([
      page.waitForURL((url) => url.href === returnTo),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
  }

  /** Opens admin and checks the password alone does not show it: the portal asks for a second factor first. */
  async function openAdminWithSecondFactor(page: Page, username: string): Promise<void> {
    const opened = await page.goto(t.url('admin'));
    // The portal is reached by redirects, so the navigation has ended there or not at all: say where it ended instead.
    if (new URL(page.url()).hostname !== `auth.${t.domain}`) {
      throw new Error(`admin did not send ${username} to the portal: ${await whereItEnded(page, opened)}`);
    }
    expect(secondFactorReturnTo(page.url())).toBe(t.url('admin'));
    expect(await page.locator('#reports').count()).toBe(0);
    apps[username] = await passSecondFactor(page, t.url('admin'), apps[username]);
  }

  async function expectSignedIn(page: Page, userId: string | undefined, method: string): Promise<void> {
    const who = page.locator('#who');
    await who.waitFor();
    if (userId) await expect(who.getAttribute('data-user-id')).resolves.toBe(userId);
    await expect(who.getAttribute('data-method')).resolves.toBe(method);
  }

  it('(a) logs in once at the portal, then shop and admin (other processes) both show alice, and the api answers the page', async () => {
    const { context, page } = await newPage();
    await page.goto(t.url('shop'));
    await page.waitForURL((url) => url.hostname === `auth.${t.domain}`);
    expect(new URL(page.url()).searchParams.get('return_to')).toBe(t.url('shop'));
    await checkPage(page, 'portal-login');
    // Keyboard only: the username field has focus, Tab reaches the password, Enter submits.
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type('alice-password');
    await Promise.all([page.waitForURL(t.url('shop')), page.keyboard.press('Enter')]);
    await expectSignedIn(page, 'directory:demo|alice', 'password');
    await page.locator('#notes-status[data-state="ok"]').waitFor();
    await page.getByLabel('New note').fill('bought a lamp');
    await page.getByRole('button', { name: 'Add note' }).click();
    await page.locator('#notes-list li', { hasText: 'bought a lamp' }).waitFor();
    await checkPage(page, 'shop-signed-in');

    await openAdminWithSecondFactor(page, 'alice');
    await expectSignedIn(page, 'directory:demo|alice', 'password');
    await expect(page.locator('#reports').textContent()).resolves.toContain('3 orders today');
    await checkPage(page, 'admin-signed-in');

    await page.goto(t.url('auth', '/sessions'));
    const current = page.locator('li[aria-current="true"]');
    await expect(current.textContent()).resolves.toContain('This browser');
    // A device people can read, and when it was last active, instead of a user-agent string and a timestamp.
    await expect(current.locator('.device').textContent()).resolves.toBe('Chrome on Linux');
    await expect(current.locator('time').textContent()).resolves.toBe('just now');
    await checkPage(page, 'portal-sessions');
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it('(c) logs in through the demo OpenID provider, a separate process, and the account is linked in plain sight', async () => {
    const { context, page } = await newPage();
    await page.goto(`${t.url('auth', '/login')}?return_to=${encodeURIComponent(t.url('shop'))}`);
    await page.getByRole('link', { name: 'Sign in with the Demo IdP' }).click();
    await page.waitForURL((url) => url.hostname === `idp.${t.domain}`);
    await screenshot(page, 'idp-login');
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice-password');
    await Promise.all([page.waitForURL(t.url('shop')), page.getByRole('button', { name: /Sign in/ }).click()]);
    // Linked by the demo's linkAccount: the provider's alice is the directory's alice, with the directory's roles.
    await expectSignedIn(page, 'directory:demo|alice', 'oidc');
    const me = await page.evaluate(async () => (await fetch('/me')).json());
    expect(me).toEqual({ id: 'directory:demo|alice', name: 'Alice Example', roles: ['admin'], method: 'oidc' });
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it("throttles the provider's own password page after 5 failures", async () => {
    const { context, page } = await newPage();
    await page.goto(`${t.url('auth', '/login')}?return_to=${encodeURIComponent(t.url('shop'))}`);
    await page.getByRole('link', { name: 'Sign in with the Demo IdP' }).click();
    await page.waitForURL((url) => url.hostname === `idp.${t.domain}`);
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 6; attempt += 1) {
      await page.getByLabel('Password').fill(`guess-${attempt}`);
      await page.getByLabel('Username').fill('bob');
      const [response] = await Promise.all([
        // The form's own submission: the login page also posts for passkey autofill options as it loads.
        page.waitForResponse((r) => r.request().method() === 'POST' && r.request().isNavigationRequest()),
        page.getByRole('button', { name: /Sign in/ }).click(),
      ]);
      statuses.push(response.status());
      await page.getByRole('alert').waitFor();
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    await context.close();
  });

  it('shows a finished page when the portal throttles password guessing', async () => {
    const { context, page } = await newPage();
    await page.goto(t.url('auth', '/login'));
    let status = 0;
    for (let attempt = 0; attempt < 6; attempt += 1) {
      await page.getByLabel('Username').fill('mallory');
      await page.getByLabel('Password').fill(`guess-${attempt}`);
      const [response] = await Promise.all([
        // The form's own submission: the login page also posts for passkey autofill options as it loads.
        page.waitForResponse((r) => r.request().method() === 'POST' && r.request().isNavigationRequest()),
        page.getByRole('button', { name: 'Sign in', exact: true }).click(),
      ]);
      status = response.status();
      await page.getByRole('alert').waitFor();
    }
    expect(status).toBe(429);
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/Too many/i);
    await checkPage(page, 'portal-throttled');
    await context.close();
  });

  /** Desktop shows the QR code; the phone (signed in on the domain) scans it; resolves once the phone shows the request. */
  async function startQrLogin(): Promise<{
    desktop: { context: BrowserContext; page: Page };
    phone: { context: BrowserContext; page: Page };
  }> {
    const phone = await newPage();
    await phone.page.setViewportSize({ width: PHONE_WIDTH, height: 844 });
    await passwordLogin(phone.page, 'alice', 'alice-password', t.url('shop'));
    const desktop = await newPage();
    await desktop.page.goto(`${t.url('auth', '/login')}?return_to=${encodeURIComponent(t.url('shop'))}`);
    await desktop.page.getByRole('link', { name: 'Scan a QR code' }).click();
    await desktop.page.waitForURL((url) => url.pathname === '/sns/oauth2/qrconnect');
    await desktop.page.locator('#qr-code svg').waitFor();
    const scanned = await decodeQrFromPage(desktop.page);
    expect(new URL(scanned).origin).toBe(new URL(t.url('auth')).origin);
    await phone.page.goto(scanned);
    await phone.page.locator('#qr-confirmed').waitFor();
    return { desktop, phone };
  }

  it('(b) logs in by QR code, confirmed on a phone whose page says who asks, from which device and when, with Deny as prominent as Confirm', async () => {
    const { desktop, phone } = await startQrLogin();
    await checkPage(desktop.page, 'qr-code');
    await expect(phone.page.locator('#qr-app').textContent()).resolves.toBe('SSO Demo Portal');
    await expect(phone.page.locator('#qr-ua').textContent()).resolves.toBe('Chrome on Linux');
    await expect(phone.page.locator('#qr-ip').textContent()).resolves.toBe('127.0.0.1');
    await expect(phone.page.locator('#qr-when time').textContent()).resolves.toBe('just now');
    // On the phone, both choices are the same size, side by side, within the first screen.
    const deny = (await phone.page.locator('#qr-denied').boundingBox())!;
    const confirm = (await phone.page.locator('#qr-confirmed').boundingBox())!;
    expect(Math.abs(deny.width - confirm.width)).toBeLessThanOrEqual(1);
    expect(deny.height).toBe(confirm.height);
    expect(deny.y).toBe(confirm.y);
    expect(deny.height).toBeGreaterThanOrEqual(44);
    expect(deny.y + deny.height).toBeLessThanOrEqual(844);
    await screenshot(phone.page, `qr-confirm-on-phone-${PHONE_WIDTH}`);
    await checkPage(phone.page, 'qr-confirm-on-phone');
    await phone.page.setViewportSize({ width: PHONE_WIDTH, height: 844 });
    await Promise.all([desktop.page.waitForURL(t.url('shop'), { timeout: 8_000 }), phone.page.locator('#qr-confirmed').click()]);
    await expectSignedIn(desktop.page, undefined, 'qr');
    await expect(phone.page.locator('#qr-final').textContent()).resolves.toContain('You confirmed this sign-in');
    await screenshot(desktop.page, 'shop-after-qr');
    await desktop.context.close();
    await phone.context.close();
    expect(cspViolations).toEqual([]);
  });

  it('denies a QR login from the phone: the computer is told, and nobody is signed in', async () => {
    const { desktop, phone } = await startQrLogin();
    await phone.page.locator('#qr-denied').click();
    await expect(phone.page.locator('#qr-final').textContent()).resolves.toContain('You denied this sign-in');
    await desktop.page.locator('#qr-status[data-status="denied"]').waitFor();
    await expect(desktop.page.locator('#qr-retry a').isVisible()).resolves.toBe(true);
    await checkPage(desktop.page, 'qr-code-denied');
    await desktop.context.close();
    await phone.context.close();
  });

  it('offers another way to sign in from the QR page, back at the portal', async () => {
    const { context, page } = await newPage();
    await page.goto(t.url('auth', '/login'));
    await page.getByRole('link', { name: 'Scan a QR code' }).click();
    await page.locator('#qr-code svg').waitFor();
    await Promise.all([page.waitForURL(t.url('auth', '/login')), page.getByRole('link', { name: 'Use another way to sign in' }).click()]);
    await expect(page.getByLabel('Password').isVisible()).resolves.toBe(true);
    await context.close();
  });

  it('(d) signing out on admin signs out of shop too', async () => {
    const { context, page } = await newPage();
    await passwordLogin(page, 'alice', 'alice-password', t.url('shop'));
    await openAdminWithSecondFactor(page, 'alice');
    await expectSignedIn(page, 'directory:demo|alice', 'password');
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(t.url('auth', '/login'))),
      page.getByRole('button', { name: 'Sign out everywhere' }).click(),
    ]);
    await page.goto(t.url('shop'));
    await page.waitForURL((url) => url.href.startsWith(t.url('auth', '/login')));
    expect(await page.locator('#who').count()).toBe(0);
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it('(e) lets a page of the domain call the api with credentials, and stops a page of another site', async () => {
    const { context, page } = await newPage();
    await passwordLogin(page, 'alice', 'alice-password', t.url('shop'));
    const api = t.url('api', '/notes');
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
    await page.goto(t.url('shop'));
    const titles = await page.evaluate(async (target) => {
      const notes = (await (await fetch(target, { credentials: 'include' })).json()) as Array<{ title: string }>;
      return notes.map((note) => note.title);
    }, api);
    expect(titles.filter((title) => title === 'cross-site?')).toHaveLength(1);
    await context.close();
  });

  it('(f) shows bob the friendly 403 page on admin at once, without asking him for a second factor', async () => {
    const { context, page } = await newPage();
    await passwordLogin(page, 'bob', 'bob-password', t.url('shop'));
    // bob lacks the admin role, which no second factor would give him: admin says so straight away, with no step-up
    // and no authenticator app to enrol first.
    const visited: string[] = [];
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) visited.push(frame.url());
    });
    const response = await page.goto(t.url('admin'));
    expect(response?.status()).toBe(403);
    expect(page.url()).toBe(t.url('admin'));
    expect(visited.filter((url) => new URL(url).hostname === `auth.${t.domain}`)).toEqual([]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sorry, this page is for administrators');
    await expect(page.locator('#forbidden').textContent()).resolves.toContain('Bob Example');
    await checkPage(page, 'admin-forbidden-bob');
    await context.close();
  });

  it("shows the kit's error page for an address that does not exist", async () => {
    const { context, page } = await newPage();
    const response = await page.goto(t.url('shop', '/no-such-page'));
    expect(response?.status()).toBe(404);
    await checkPage(page, 'error-404');
    // At the portal, in the kit's own stylesheet; on the QR provider, its page for a sign-in that cannot finish.
    expect((await page.goto(t.url('auth', '/no-such-page')))?.status()).toBe(404);
    await checkPage(page, 'error-404-portal');
    expect((await page.goto(t.url('auth', '/sns/qr-logins/no-such-login/redirection')))?.status()).toBe(404);
    await checkPage(page, 'qr-not-found');
    await context.close();
  });

  it('keeps the portal usable by keyboard with a visible focus and an announced error', async () => {
    const { context, page } = await newPage();
    await page.goto(t.url('auth', '/login'));
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
    await checkPage(page, 'portal-login-error');
    await context.close();
  });

  it('composes the picture of the demo for the README from the screenshots above (test-artifacts/demo.png)', async () => {
    const shots = ['portal-login-390', 'qr-confirm-on-phone-390', 'shop-signed-in-390'].map(
      (name) => `data:image/png;base64,${readFileSync(join(ARTIFACTS_DIR, `${name}.png`)).toString('base64')}`,
    );
    const { context, page } = await newPage();
    await page.setViewportSize({ width: 1260, height: 740 });
    await page.setContent(
      '<body style="margin:0;background:#1f2937;display:flex;gap:30px;padding:30px;box-sizing:border-box">' +
        shots
          .map((src) => `<div style="width:390px;height:680px;overflow:hidden;border-radius:18px;background:#fff"><img src="${src}"></div>`)
          .join('') +
        '</body>',
    );
    await screenshot(page, 'demo');
    await context.close();
  });
});
