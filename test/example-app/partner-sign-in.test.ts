import { createHash, randomBytes } from 'node:crypto';
import { apiTokenSettings } from '../../example-app/api/api';
import { notesResource, origin, partnerOidcClient } from '../../example-app/common/config';
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
    const url = (site: 'auth' | 'shop' | 'partner' | 'api', path = '/') => `${origin(demo.config, site)}${path}`;

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

    // Alice's own note, written with the auth site's HS256 token: the same owner (issuer, sub) as the provider's tokens.
    async function writeNote(title: string): Promise<void> {
      const { key, issuer, audience } = apiTokenSettings(demo.config);
      const { SignJWT } = await import('jose');
      const token = await new SignJWT({ roles: [] })
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
        .setSubject('directory:demo|alice')
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(key));
      const created = await fetch(url('api', '/notes'), {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ title, body: '' }),
      });
      expect(created.status).toBe(201);
    }

    // The partner client's code flow, run by the test itself, to hold the provider's tokens the partner gets.
    async function partnerTokens(agent: TestUserAgent): Promise<{ access_token: string; id_token: string }> {
      const verifier = randomBytes(32).toString('base64url');
      const query = new URLSearchParams({
        client_id: 'partner',
        response_type: 'code',
        scope: 'openid profile notes:read',
        redirect_uri: url('partner', '/callback/portal'),
        state: randomBytes(8).toString('hex'),
        nonce: randomBytes(8).toString('hex'),
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      });
      let next = url('auth', `/oidc/auth?${query}`);
      for (let hop = 0; hop < 10 && !next.startsWith(url('partner', '/callback/portal')); hop++) {
        const answer = await agent.request(next);
        expect([302, 303]).toContain(answer.status);
        next = answer.location!;
      }
      const code = new URL(next).searchParams.get('code')!;
      const { clientId, clientSecret } = partnerOidcClient(demo.config);
      // Server to server, as the partner redeems it (no browser Origin).
      const answer = await fetch(url('auth', '/oidc/token'), {
        method: 'POST',
        headers: { Authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`, Accept: 'application/json' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: url('partner', '/callback/portal'),
          code_verifier: verifier,
        }),
      });
      expect(answer.status).toBe(200);
      return (await answer.json()) as { access_token: string; id_token: string };
    }

    it("reads the user's notes at the Notes API with the provider's access token, which is for the Notes API only", async () => {
      const agent = new TestUserAgent('localhost');
      await agent.request(url('auth', '/login'), { form: { username: 'alice', password: 'alice-password', return_to: '' } });
      expect((await agent.follow(url('partner'))).at(-1)!.status).toBe(200);
      await writeNote('Call the partner back');

      // "Read my notes": the partner calls the Notes API server-side with the user's access token.
      const notes = await agent.request(url('partner', '/notes'));
      expect(notes.status).toBe(200);
      expect(notes.body).toContain('data-status="200" data-count="1"');
      expect(notes.body).toContain('Call the partner back');

      const tokens = await partnerTokens(agent);
      const { decodeJwt, decodeProtectedHeader } = await import('jose');
      expect(decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');
      expect(decodeJwt(tokens.access_token)).toMatchObject({ aud: notesResource(demo.config).indicator, scope: 'notes:read' });
      const read = (token: string) =>
        agent.request(url('api', '/notes'), { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } });
      const accepted = await read(tokens.access_token);
      expect(accepted.status).toBe(200);
      expect((JSON.parse(accepted.body) as Array<{ title: string }>).map((note) => note.title)).toEqual(['Call the partner back']);
      // The provider's ID token (same issuer, same key) is no key to the Notes API: its audience is the partner and its
      // typ is not at+jwt. Each of the two rules alone is held by test/example-app/notes-api.test.ts (audience) and
      // test/tokens/require-bearer.test.ts (typ).
      expect(decodeJwt(tokens.id_token).aud).toBe('partner');
      const refused = await read(tokens.id_token);
      expect(refused.status).toBe(401);
      expect(String(refused.headers['www-authenticate'])).toContain('invalid_token');
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
