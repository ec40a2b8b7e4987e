import request from 'supertest';
import type { KeyValueStore } from '../../lib/store';
import { readDemoConfig, origin, type DemoConfig, type SiteName } from '../../example-app/common/config';
import { startSite, type RunningSite, type SiteFactory } from '../../example-app/common/run-site';
import { resolveDemoDomain } from '../../example-app/common/demo-dns';
import { startFrontDoor } from '../../example-app/launcher/front-door';
import { createAdmin } from '../../example-app/admin/admin';
import { createApi } from '../../example-app/api/api';
import { createAuth } from '../../example-app/auth/auth';
import { createIdp } from '../../example-app/idp/idp';
import { createShop } from '../../example-app/shop/shop';
import { createPartner } from '../../example-app/partner/partner';
import { setCookieValue } from './cookies';

/** The demo secret the in-process sites of a test share. */
export const TEST_DEMO_SECRET = 'demo-sites-test-secret-0123456789abcdef';

/** A site of the demo built in this process, and requests to it as the front door would forward them. */
export interface InProcessSite {
  running: RunningSite;
  /** `shop.sso.test:8080`: the Host every request carries. */
  host: string;
  get(path: string): request.Test;
  post(path: string): request.Test;
  put(path: string): request.Test;
  patch(path: string): request.Test;
  delete(path: string): request.Test;
  options(path: string): request.Test;
  head(path: string): request.Test;
}

/**
 * The demo's configuration for in-process tests: domain `sso.test`, public port 8080, plain http, the test secret.
 *
 * @example
 * const config = testDemoConfig();
 */
export function testDemoConfig(env: NodeJS.ProcessEnv = {}): DemoConfig {
  return readDemoConfig({ DEMO_DOMAIN: 'sso.test', DEMO_PUBLIC_PORT: '8080', DEMO_SECRET: TEST_DEMO_SECRET, ...env });
}

/**
 * Starts one site of the demo in this process over `store` (a test store with its own prefix), on a free port.
 *
 * @example
 * const api = await startInProcessSite('api', createApi, store);
 * await api.get('/notes').set('Authorization', `Bearer ${token}`);
 */
export async function startInProcessSite(
  site: SiteName,
  factory: SiteFactory,
  store: KeyValueStore,
  config = testDemoConfig(),
): Promise<InProcessSite> {
  const running = await startSite(site, factory, { config, store, port: 0 });
  const host = new URL(origin(config, site)).host;
  const wrap = (test: request.Test) => test.set('Host', host);
  const agent = request(running.server);
  return {
    running,
    host,
    get: (path) => wrap(agent.get(path)),
    post: (path) => wrap(agent.post(path)),
    put: (path) => wrap(agent.put(path)),
    patch: (path) => wrap(agent.patch(path)),
    delete: (path) => wrap(agent.delete(path)),
    options: (path) => wrap(agent.options(path)),
    head: (path) => wrap(agent.head(path)),
  };
}

/**
 * Logs in at an in-process auth site as a browser would (the form, from the portal's origin); resolves to the
 * `sso.sid=…` cookie pair every site of the domain accepts.
 *
 * @example
 * const cookie = await portalLogin(auth, 'alice', 'alice-password');
 */
export async function portalLogin(auth: InProcessSite, username: string, password: string): Promise<string> {
  const res = await auth.post('/login').set('Origin', `http://${auth.host}`).type('form').send({ username, password, return_to: '' });
  const cookie = setCookieValue(res, 'sso.sid');
  if (res.status !== 302 || !cookie) throw new Error(`login as ${username} failed with ${res.status}`);
  return cookie;
}

/** Every site of the demo in this process, behind a front door, as `npm run demo` runs them without Redis. */
export interface InProcessDemo {
  config: DemoConfig;
  sites: Record<SiteName, InProcessSite>;
  close(): Promise<void>;
}

/**
 * Starts every site in this process over `store`, behind a front door on a free port that is the port of the
 * public URLs, with the demo domain resolved to it (so the portal reaches the identity provider by its public
 * name, as in the demo).
 *
 * @example
 * const demo = await startInProcessDemo(redis.store);
 * await demo.sites.shop.get('/me');
 */
export async function startInProcessDemo(store: KeyValueStore, domain = 'sso.localhost'): Promise<InProcessDemo> {
  const door = await startFrontDoor({ port: 0, host: '127.0.0.1', domain });
  const config = testDemoConfig({ DEMO_DOMAIN: domain, DEMO_PUBLIC_PORT: String(door.port) });
  const undoDns = [resolveDemoDomain(domain, '127.0.0.1'), resolveDemoDomain(config.partnerDomain, '127.0.0.1')];
  const factories: Record<SiteName, SiteFactory> = {
    idp: createIdp,
    auth: createAuth,
    shop: createShop,
    admin: createAdmin,
    api: createApi,
    partner: createPartner,
  };
  const sites = {} as Record<SiteName, InProcessSite>;
  for (const [site, factory] of Object.entries(factories) as Array<[SiteName, SiteFactory]>) {
    sites[site] = await startInProcessSite(site, factory, store, config);
    door.routeHost(new URL(origin(config, site)).hostname, sites[site].running.port);
  }
  return {
    config,
    sites,
    async close() {
      for (const site of Object.values(sites)) await site.running.close();
      await door.close();
      for (const undo of undoDns.reverse()) undo();
    },
  };
}
