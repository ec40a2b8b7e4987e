import request from 'supertest';
import { startDemo, type DemoSite, type RunningDemo } from '../../example-app/demo-server';
import { setCookieValue } from './cookies';
import { testRedisStore } from './redis';

/** The demo on a free port over the machine's Redis under a fresh prefix, with helpers to talk to its sites. */
export interface DemoUnderTest {
  demo: RunningDemo;
  /** A supertest agent-less request to a site: the right Host header on the demo's loopback port. */
  site(site: DemoSite): {
    get(path: string): request.Test;
    post(path: string): request.Test;
    put(path: string): request.Test;
    patch(path: string): request.Test;
    delete(path: string): request.Test;
    options(path: string): request.Test;
    head(path: string): request.Test;
  };
  /** Logs in at the portal as a browser would; resolves to the `sso.sid=…` cookie pair. */
  login(username: string, password: string): Promise<string>;
  close(): Promise<void>;
}

export async function startDemoForTest(domain = 'sso.test'): Promise<DemoUnderTest> {
  const redis = await testRedisStore('demo');
  const demo = await startDemo({ port: 0, domain, store: redis.store, log: () => undefined });
  const base = `http://127.0.0.1:${demo.port}`;
  const site = (name: DemoSite) => {
    const host = new URL(demo.url(name)).host;
    const agent = request(base);
    const wrap = (test: request.Test) => test.set('Host', host);
    return {
      get: (path: string) => wrap(agent.get(path)),
      post: (path: string) => wrap(agent.post(path)),
      put: (path: string) => wrap(agent.put(path)),
      patch: (path: string) => wrap(agent.patch(path)),
      delete: (path: string) => wrap(agent.delete(path)),
      options: (path: string) => wrap(agent.options(path)),
      head: (path: string) => wrap(agent.head(path)),
    };
  };
  return {
    demo,
    site,
    async login(username: string, password: string) {
      const res = await site('auth')
        .post('/login')
        .set('Origin', new URL(demo.url('auth')).origin)
        .type('form')
        .send({ username, password, return_to: demo.url('shop') });
      const cookie = setCookieValue(res, 'sso.sid');
      if (res.status !== 302 || !cookie) throw new Error(`login as ${username} failed with ${res.status}`);
      return cookie;
    },
    async close() {
      await demo.close();
      await redis.cleanup();
    },
  };
}
