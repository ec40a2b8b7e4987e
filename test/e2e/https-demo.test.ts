import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../helpers/browser';
import { startDemoProcesses, type DemoProcesses } from '../helpers/demo';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls';

// `npm run demo` in https mode (DEMO_TLS_CERT/DEMO_TLS_KEY): the front door speaks TLS with a throw-away CA's
// certificate, the sites see X-Forwarded-Proto: https, and their Node trusts that CA (NODE_EXTRA_CA_CERTS), so the
// portal's calls to the identity provider go over verified https to its public name. Nothing turns certificate
// checks off in Node.
jest.setTimeout(90_000);

const DOMAIN = 'sso.test';

describe('the demo over https', () => {
  let certs: TestCertificates;
  let demo: DemoProcesses;
  let browser: Browser;

  beforeAll(async () => {
    certs = makeTestCertificates(DOMAIN);
    demo = await startDemoProcesses({
      domain: DOMAIN,
      https: true,
      env: { DEMO_TLS_CERT: certs.certPath, DEMO_TLS_KEY: certs.keyPath, NODE_EXTRA_CA_CERTS: certs.caCertPath },
    });
    browser = await launchChromium([DOMAIN]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
    certs?.remove();
  });

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    // The browser does not know the test CA; Node (the relying party's calls to the provider) does.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    return { context, page: await context.newPage() };
  }

  it('logs in with a password and gets a Secure, HttpOnly, SameSite=Lax cookie for the parent domain', async () => {
    const { context, page } = await newPage();
    await page.goto(demo.url('shop'));
    await page.waitForURL((target) => target.hostname === `auth.${DOMAIN}`);
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice-password');
    await Promise.all([page.waitForURL(demo.url('shop')), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    await expect(page.locator('#who').getAttribute('data-method')).resolves.toBe('password');
    const [cookie] = await context.cookies(demo.url('admin'));
    expect(cookie).toMatchObject({ name: '__Secure-sso.sid', domain: `.${DOMAIN}`, secure: true, httpOnly: true, sameSite: 'Lax' });
    await screenshot(page, 'https-shop-signed-in');
    await context.close();
  });

  it('logs in through the OpenID provider, whose discovery, token and key endpoints the portal reaches over https', async () => {
    const { context, page } = await newPage();
    await page.goto(demo.url('auth', `/login?return_to=${encodeURIComponent(demo.url('admin'))}`));
    await page.getByRole('link', { name: 'Sign in with the Demo IdP' }).click();
    await page.waitForURL((target) => target.hostname === `idp.${DOMAIN}`);
    await page.getByLabel('Username').fill('bob');
    await page.getByLabel('Password').fill('bob-password');
    // Admin is for users with the admin role: bob, who lacks it, is told so right after the OpenID Connect login,
    // before any second factor is asked (no second factor would give him the role).
    const [response] = await Promise.all([
      page.waitForResponse((res) => res.url() === demo.url('admin') && res.request().isNavigationRequest() && !res.headers().location),
      page.getByRole('button', { name: /Sign in/ }).click(),
    ]);
    // bob has no admin role: the friendly 403 page, reached through a real OpenID Connect login.
    expect(response.status()).toBe(403);
    await expect(page.locator('#forbidden').textContent()).resolves.toContain('Bob Example');
    await page.goto(demo.url('shop'));
    const me = await page.evaluate(async () => (await fetch('/me')).json());
    // The demo links its identity provider's logins to the directory account of the same subject.
    expect(me).toEqual({ id: 'directory:demo|bob', name: 'Bob Example', roles: [], method: 'oidc' });
    await context.close();
  });

  it('offers QR login, since its URLs are https', async () => {
    const res = await demo.site('auth').get('/login');
    expect(res.text).toContain('Scan a QR code');
  });
});
