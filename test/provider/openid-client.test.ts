import { randomBytes } from 'node:crypto';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';
import { OpenidClientFlows } from '../helpers/openid-client-flows';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';
const CLI_REDIRECT = 'http://127.0.0.1/cli-callback';

let client: typeof OpenidClient;
let flows: OpenidClientFlows;
let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;

beforeAll(async () => {
  client = await import('openid-client');
  redis = await testRedisStore('op-client');
  portal = await startProviderPortal({
    store: redis.store,
    clients: [
      { clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] },
      { clientId: 'cli', redirectUris: [CLI_REDIRECT] },
      { clientId: 'reports-job', clientSecret: SECRET, grantTypes: ['client_credentials'], scopes: ['reports:read'] },
    ],
    provider: { serviceScopes: ['reports:read'] },
  });
  flows = await OpenidClientFlows.load(portal);
});

afterAll(async () => {
  await portal?.close();
  await redis?.cleanup();
});

async function configFor(clientId: string, secret?: string): Promise<OpenidClient.Configuration> {
  return flows.config(clientId, secret);
}

async function signedInBrowser(username = 'alice'): Promise<TestBrowser> {
  const browser = new TestBrowser(portal);
  await browser.signIn(username);
  return browser;
}

async function loginWithCode(config: OpenidClient.Configuration, browser: TestBrowser, redirectUri = REDIRECT) {
  return flows.login(config, browser, redirectUri);
}

describe('openidProvider with openid-client', () => {
  it('signs a portal user in to a confidential client without a password prompt (code + PKCE)', async () => {
    const config = await configFor('partner', SECRET);
    const browser = await signedInBrowser();
    const { tokens } = await loginWithCode(config, browser);
    const claims = tokens.claims()!;
    expect(claims.sub).toBe('directory:local|alice');
    expect(claims.iss).toBe(portal.issuer);
    expect(claims.acr).toBe('1fa');
    expect(claims.amr).toEqual(['pwd']);
    expect(typeof claims.auth_time).toBe('number');
  });

  it('signs ID tokens with the kit key set, published at the jwks endpoint', async () => {
    const config = await configFor('partner', SECRET);
    const { tokens } = await loginWithCode(config, await signedInBrowser());
    const header = JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString()) as { kid: string; alg: string };
    expect(header).toMatchObject({ kid: 'op-1', alg: 'ES256' });
    const jwks = (await (await fetch(config.serverMetadata().jwks_uri!)).json()) as { keys: { kid: string }[] };
    expect(jwks).toEqual(portal.keys.publicJwks());
  });

  it('answers userinfo with the session user', async () => {
    const config = await configFor('partner', SECRET);
    const { tokens } = await loginWithCode(config, await signedInBrowser());
    const info = await client.fetchUserInfo(config, tokens.access_token, 'directory:local|alice');
    expect(info).toMatchObject({ sub: 'directory:local|alice', name: 'Alice', roles: ['editor'] });
  });

  it('rotates refresh tokens, and a reused one revokes the whole family', async () => {
    const config = await configFor('partner', SECRET);
    const { tokens } = await loginWithCode(config, await signedInBrowser());
    const first = tokens.refresh_token!;
    const rotated = await client.refreshTokenGrant(config, first);
    expect(rotated.refresh_token).toBeDefined();
    expect(rotated.refresh_token).not.toBe(first);
    await expect(client.refreshTokenGrant(config, first)).rejects.toMatchObject({ error: 'invalid_grant' });
    // The reuse revoked the grant: the newest refresh token and the access tokens are gone too.
    await expect(client.refreshTokenGrant(config, rotated.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    const introspected = await client.tokenIntrospection(config, rotated.access_token);
    expect(introspected.active).toBe(false);
  });

  it('introspects an access token', async () => {
    const config = await configFor('partner', SECRET);
    const { tokens } = await loginWithCode(config, await signedInBrowser());
    const introspected = await client.tokenIntrospection(config, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, sub: 'directory:local|alice', client_id: 'partner' });
  });

  it('signs a public client in with PKCE', async () => {
    const config = await configFor('cli');
    const { tokens } = await loginWithCode(config, await signedInBrowser('bob'), CLI_REDIRECT);
    expect(tokens.claims()!.sub).toBe('directory:local|bob');
  });

  it('issues client_credentials tokens to a service for its scopes', async () => {
    const config = await configFor('reports-job', SECRET);
    const tokens = await client.clientCredentialsGrant(config, { scope: 'reports:read' });
    expect(tokens.access_token).toEqual(expect.any(String));
    const introspected = await client.tokenIntrospection(config, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, client_id: 'reports-job', scope: 'reports:read' });
  });
});
