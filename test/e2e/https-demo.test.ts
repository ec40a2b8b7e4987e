import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshot } from '../helpers/browser';
import { startPrivateRedis, type PrivateRedis } from '../helpers/redis';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls';

// The demo in https mode (DEMO_TLS_CERT/DEMO_TLS_KEY), as `npm run demo` starts it: its own TLS with a throw-away CA,
// in a child process whose Node trusts that CA (NODE_EXTRA_CA_CERTS), so the portal's calls to the identity
// provider go over verified https to its public name. Nothing turns certificate checks off in Node.
jest.setTimeout(60_000);

const DOMAIN = 'sso.test';

describe('the demo over https', () => {
  let certs: TestCertificates;
  let redis: PrivateRedis;
  let demo: ChildProcess;
  let port: number;
  let browser: Browser;
  const url = (site: string, path = '/') => `https://${site}.${DOMAIN}:${port}${path}`;

  beforeAll(async () => {
    certs = makeTestCertificates(DOMAIN);
    redis = await startPrivateRedis();
    demo = spawn(process.execPath, [require.resolve('tsx/cli'), 'example-app/demo.ts'], {
      cwd: resolve(__dirname, '../..'),
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        PORT: '0',
        DEMO_DOMAIN: DOMAIN,
        REDIS_URL: redis.url,
        DEMO_TLS_CERT: certs.certPath,
        DEMO_TLS_KEY: certs.keyPath,
        NODE_EXTRA_CA_CERTS: certs.caCertPath,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    port = await new Promise<number>((resolvePort, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /demo on [^:]+:(\d+)/.exec(output);
        if (match) resolvePort(Number(match[1]));
      };
      demo.stdout!.on('data', onData);
      demo.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      demo.once('exit', (code) => reject(new Error(`the demo exited with ${code}:\n${output}`)));
    });
    browser = await launchChromium([DOMAIN]);
  });

  afterAll(async () => {
    await browser?.close();
    if (demo && demo.exitCode === null) {
      await new Promise<void>((done) => {
        demo.once('exit', () => done());
        demo.kill('SIGTERM');
      });
    }
    await redis?.stop();
    certs?.remove();
  });

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    // The browser does not know the test CA; Node (the relying party's calls to the provider) does.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    return { context, page: await context.newPage() };
  }

  it('logs in with a password and gets a Secure, HttpOnly, SameSite=Lax cookie for the parent domain', async () => {
    const { context, page } = await newPage();
    await page.goto(url('shop'));
    await page.waitForURL((target) => target.hostname === `auth.${DOMAIN}`);
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice-password');
    await Promise.all([page.waitForURL(url('shop')), page.getByRole('button', { name: 'Sign in' }).click()]);
    await expect(page.locator('#who').getAttribute('data-method')).resolves.toBe('password');
    const [cookie] = await context.cookies(url('admin'));
    expect(cookie).toMatchObject({ name: '__Secure-sso.sid', domain: `.${DOMAIN}`, secure: true, httpOnly: true, sameSite: 'Lax' });
    await screenshot(page, 'https-shop-signed-in');
    await context.close();
  });

  it('logs in through the OpenID provider, whose token and key endpoints the portal reaches over https', async () => {
    const { context, page } = await newPage();
    await page.goto(url('auth', `/login?return_to=${encodeURIComponent(url('admin'))}`));
    await page.getByRole('link', { name: 'Sign in with the Demo IdP' }).click();
    await page.waitForURL((target) => target.hostname === `idp.${DOMAIN}`);
    await page.getByLabel('Username').fill('bob');
    await page.getByLabel('Password').fill('bob-password');
    await Promise.all([page.waitForURL(url('admin')), page.getByRole('button', { name: /Sign in/ }).click()]);
    // bob has no admin role: the friendly 403 page, reached through a real OpenID Connect login.
    await expect(page.locator('#forbidden').textContent()).resolves.toContain('Bob Example');
    const me = await page.evaluate(async () => (await fetch('/me')).json());
    // The demo links its identity provider's logins to the directory account of the same subject.
    expect(me).toEqual({ id: 'directory:demo|bob', name: 'Bob Example', roles: [], method: 'oidc' });
    await context.close();
  });
});
