import { randomBytes } from 'node:crypto';
import { RedisStore } from '../../lib/store';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { startPrivateRedis, type PrivateRedis } from '../helpers/redis';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';

describe('openidProvider when Redis is down', () => {
  let redis: PrivateRedis;
  let store: RedisStore;
  let portal: ProviderPortal;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    store = new RedisStore(redis.url, { prefix: 'op-outage:' });
    portal = await startProviderPortal({ store, clients: [{ clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] }] });
  });

  afterAll(async () => {
    await portal?.close();
    await store?.close();
    await redis?.stop();
  });

  it('answers the token endpoint 503 temporarily_unavailable, never a token or invalid_grant', async () => {
    await redis.stop();
    try {
      const response = await fetch(`${portal.issuer}/oidc/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`partner:${SECRET}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: 'x'.repeat(43),
          redirect_uri: REDIRECT,
          code_verifier: 'y'.repeat(43),
        }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('5');
      expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' });
    } finally {
      await redis.start();
    }
  });

  it('answers the interaction route 503 as problem+json', async () => {
    const browser = new TestBrowser(portal);
    await browser.signIn('alice');
    const url = new URL(`${portal.issuer}/oidc/auth`);
    url.search = new URLSearchParams({
      client_id: 'partner',
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }).toString();
    const first = await browser.request(url.href);
    expect(first.status).toBe(303);
    await redis.stop();
    try {
      const interaction = await browser.request(new URL(first.headers.get('location')!, portal.issuer).href);
      expect(interaction.status).toBe(503);
      expect(interaction.headers.get('content-type')).toMatch(/problem\+json/);
    } finally {
      await redis.start();
    }
  });
});
