import { origin } from '../../example-app/common/config';
import { MemoryStore, type KeyValueStore } from '../../lib/store';
import { startInProcessDemo, type InProcessDemo } from '../helpers/demo-sites';
import { TestUserAgent } from '../helpers/http-user-agent';
import { testRedisStore } from '../helpers/redis';

// The partner app's sign-on through the portal's OpenID Provider, every site wired as the demo wires it, over the
// two stores the demo runs on: Redis (every site its own process) and the in-memory store (the one-process
// fallback without Redis), where the provider keeps its codes, tokens and sessions in memory.
jest.setTimeout(60_000);

describe.each([
  ['Redis', async () => testRedisStore('partner-sign-in')],
  [
    'the in-memory store',
    async () => {
      const store = new MemoryStore();
      return { store, cleanup: async () => store.close() };
    },
  ],
] as Array<[string, () => Promise<{ store: KeyValueStore; cleanup: () => Promise<void> }>]>)(
  'the partner app over %s',
  (_name, makeStore) => {
    let demo: InProcessDemo;
    let cleanup: () => Promise<void>;
    const url = (site: 'auth' | 'shop' | 'partner', path = '/') => `${origin(demo.config, site)}${path}`;

    beforeAll(async () => {
      const made = await makeStore();
      cleanup = made.cleanup;
      demo = await startInProcessDemo(made.store);
    });

    afterAll(async () => {
      await demo?.close();
      await cleanup?.();
    });

    async function partnerMe(agent: TestUserAgent): Promise<number> {
      return (await agent.request(url('partner', '/me'), { headers: { Accept: 'application/json' } })).status;
    }

    it('signs a portal user in without a password, in a session of its own, and signs her out when the portal session ends', async () => {
      const agent = new TestUserAgent('localhost');
      const login = await agent.request(url('auth', '/login'), { form: { username: 'alice', password: 'alice-password', return_to: '' } });
      expect(login.status).toBe(302);

      const chain = await agent.follow(url('partner'));
      const last = chain.at(-1)!;
      expect(chain.map((answer) => new URL(answer.url).host)).toContain(new URL(url('auth')).host);
      expect(chain.some((answer) => answer.url.startsWith(url('auth', '/login')))).toBe(false);
      expect(last.status).toBe(200);
      expect(last.body).toContain(`data-user-id="oidc:${new URL(url('auth')).origin}|directory:demo|alice"`);
      // Its own cookie on its own domain; the portal's cookie is not sent to it.
      expect(agent.cookiesFor(url('partner')).map((cookie) => `${cookie.name} ${cookie.domain}`)).toEqual([
        `partner.sid ${demo.config.partnerDomain}`,
      ]);
      expect(await partnerMe(agent)).toBe(200);

      const signedOut = await agent.request(url('shop', '/logout'), { method: 'POST' });
      expect(signedOut.status).toBe(303);
      // The provider tells the partner by back-channel after the shop has answered; wait for that outcome.
      const deadline = Date.now() + 20_000;
      let status = await partnerMe(agent);
      while (status !== 401 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = await partnerMe(agent);
      }
      expect(status).toBe(401);
    });

    // As the demo wires it (front door and provider); test/provider/issuer-urls.test.ts holds the provider to it alone.
    it("publishes the portal provider's URLs under its issuer, whatever X-Forwarded-Host the request carries", async () => {
      const agent = new TestUserAgent('localhost');
      const discovery = await agent.request(url('auth', '/.well-known/openid-configuration'), {
        headers: { Accept: 'application/json', 'X-Forwarded-Host': 'evil.test' },
      });
      expect(discovery.status).toBe(200);
      const document = JSON.parse(discovery.body) as Record<string, string>;
      const issuer = new URL(url('auth')).origin;
      expect(document.issuer).toBe(issuer);
      for (const name of ['authorization_endpoint', 'token_endpoint', 'jwks_uri', 'userinfo_endpoint', 'end_session_endpoint']) {
        expect({ name, url: document[name] }).toEqual({ name, url: expect.stringMatching(new RegExp(`^${issuer}/oidc/`)) });
      }
    });

    it('refuses a partner callback that did not start at the partner (no transaction), changing nothing', async () => {
      const agent = new TestUserAgent('localhost');
      const callback = await agent.request(url('partner', '/callback/portal?code=forged&state=forged'));
      expect(callback.status).toBeGreaterThanOrEqual(400);
      expect(callback.status).toBeLessThan(500);
      expect(agent.cookiesFor(url('partner')).filter((cookie) => cookie.name === 'partner.sid')).toEqual([]);
      expect(await partnerMe(agent)).toBe(401);
    });
  },
);
