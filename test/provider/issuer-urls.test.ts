import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { startProviderPortal, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

// The provider publishes and redirects to URLs of its issuer only: a forged Host or X-Forwarded-Host (which a
// client sends at will, and a proxy may pass on) never becomes a token endpoint, a JWKS URL or a redirect target.
const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';
const FORGED = { Host: 'evil.test', 'X-Forwarded-Host': 'evil.test', 'X-Forwarded-Proto': 'https' };

describe('the provider URLs follow the issuer, not the request', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let portal: ProviderPortal;

  beforeAll(async () => {
    redis = await testRedisStore('op-issuer-urls');
    portal = await startProviderPortal({
      store: redis.store,
      clients: [{ clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] }],
    });
  });

  afterAll(async () => {
    await portal?.close();
    await redis?.cleanup();
  });

  const send = (path: string) => request(`http://127.0.0.1:${portal.port}`).get(path);

  it('publishes every endpoint of discovery under the issuer whatever Host and X-Forwarded-Host say', async () => {
    for (const headers of [FORGED, { 'X-Forwarded-Host': 'evil.test' }, { Host: `evil.test:${portal.port}` }]) {
      const res = await send('/.well-known/openid-configuration').set(headers);
      expect(res.status).toBe(200);
      const document = res.body as Record<string, unknown>;
      expect(document.issuer).toBe(portal.issuer);
      const urls = Object.entries(document).filter(([name, value]) => /_endpoint$|_uri$/.test(name) && typeof value === 'string');
      expect(urls.length).toBeGreaterThan(4);
      for (const [name, url] of urls) expect({ name, url }).toEqual({ name, url: expect.stringMatching(new RegExp(`^${portal.issuer}/`)) });
    }
  });

  it('sends the browser to its interaction page on the issuer, not on the forged host', async () => {
    const query = new URLSearchParams({
      client_id: 'partner',
      response_type: 'code',
      scope: 'openid',
      redirect_uri: REDIRECT,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'state-1',
    });
    const res = await send(`/oidc/auth?${query}`).set(FORGED);
    expect(res.status).toBe(303);
    expect(new URL(res.headers.location!, portal.issuer).origin).toBe(portal.issuer);
    expect(res.headers.location).not.toContain('evil.test');
  });

  it('answers a garbled Host or X-Forwarded-Host as the issuer instead of failing with 500', async () => {
    for (const headers of [{ Host: 'a b:c' }, { 'X-Forwarded-Host': '%%%:x' }, { Host: 'evil.test:99999' }]) {
      const discovery = await send('/.well-known/openid-configuration').set(headers);
      expect({ headers, status: discovery.status }).toEqual({ headers, status: 200 });
      expect((discovery.body as { token_endpoint: string }).token_endpoint).toBe(`${portal.issuer}/oidc/token`);
      const endSession = await send('/oidc/session/end').set(headers);
      expect({ headers, status: endSession.status < 500 }).toEqual({ headers, status: true });
    }
  });
});
