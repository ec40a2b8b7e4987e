import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { FA_DOMAIN, docsConfig, startCaddy, startEchoUpstream, startNginx, startPortal, type Started } from '../helpers/forward-auth-stack';
import { freePort } from '../helpers/redis';

type Ports = { proxy: number; portal: number; upstream: number };

/** The docs config plus the shop, served by the portal app on its own host. */
const FRONT_DOORS: Record<string, (ports: Ports) => Promise<Started>> = {
  Caddy: (ports) =>
    startCaddy(
      `${docsConfig('caddyfile Caddyfile', ports)}\nhttp://shop.${FA_DOMAIN}:${ports.proxy} {\n\treverse_proxy 127.0.0.1:${ports.portal}\n}\n`,
      ports.proxy,
    ),
  nginx: (ports) =>
    startNginx(
      `${docsConfig('nginx nginx.conf', ports)}\nserver {\n listen ${ports.proxy};\n server_name shop.${FA_DOMAIN};\n` +
        ` location / { proxy_pass http://127.0.0.1:${ports.portal}; proxy_set_header Host $http_host; }\n}\n`,
      ports.proxy,
    ),
};

describe.each(Object.keys(FRONT_DOORS))('forward-auth journeys in Chromium through %s', (door) => {
  let browser: Browser;
  let portal: Awaited<ReturnType<typeof startPortal>>;
  let upstream: Started;
  let proxy: Started;
  let docs: string;
  let shop: string;

  beforeAll(async () => {
    const proxyPort = await freePort();
    portal = await startPortal(proxyPort);
    upstream = await startEchoUpstream();
    proxy = await FRONT_DOORS[door]!({ proxy: proxyPort, portal: portal.port, upstream: upstream.port });
    docs = `http://docs.${FA_DOMAIN}:${proxyPort}`;
    shop = `http://shop.${FA_DOMAIN}:${proxyPort}`;
    browser = await launchChromium([FA_DOMAIN]);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await proxy?.stop();
    await upstream?.stop();
    await portal?.cleanup();
  });

  it('signs in through the portal, steps up for a two_factor path, and loses access once signed out on shop', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const seen = async () => JSON.parse((await page.locator('body').innerText()) || '{}') as { path: string; headers: [string, string][] };
    const remoteUser = async () => (await seen()).headers.find(([name]) => name.toLowerCase() === 'remote-user')?.[1];

    // Signed out → the portal's login page → back on the static site, signed in.
    await page.goto(`${docs}/guide?page=2`);
    expect(new URL(page.url()).host).toBe(`auth.${FA_DOMAIN}:${proxy.port}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${docs}/guide?page=2`);
    expect(await remoteUser()).toBe('directory:staff|alice');

    // A two_factor path: the step-up page, then back.
    await page.goto(`${docs}/admin/report`);
    expect(new URL(page.url()).pathname).toBe('/step-up');
    await page.getByRole('button', { name: 'Confirm with a code' }).click();
    await page.waitForURL(`${docs}/admin/report`);
    expect((await seen()).path).toBe('/admin/report');

    // Sign out on shop: the static site asks for a login at the next request.
    await page.goto(`${shop}/account`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login/);
    await page.goto(`${docs}/guide`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await context.close();
  });
});
