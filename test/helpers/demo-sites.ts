import request from 'supertest';
import type { KeyValueStore } from '../../lib/store';
import { readDemoConfig, origin, type DemoConfig, type SiteName } from '../../example-app/common/config';
import { startSite, type RunningSite, type SiteFactory } from '../../example-app/common/run-site';
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
