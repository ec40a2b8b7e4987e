import { randomBytes } from 'node:crypto';
import { recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { ProofClient } from '../helpers/dpop-proofs';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { clientKey, HandClient, pkcePair, type ClientKey } from '../helpers/provider-level-three';
import { testRedisStore } from '../helpers/redis';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://fapi-app.test/callback';
const PARTNER_REDIRECT = 'https://partner.test/callback';
const NOTES = 'https://notes.example.test/api';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;
let recorder: EventRecorder;
let appKey: ClientKey;
let otherKey: ClientKey;

beforeAll(async () => {
  redis = await testRedisStore('op-level3');
  recorder = recordEvents({ app: 'auth' });
  appKey = await clientKey('ES256');
  otherKey = await clientKey('ES256');
  portal = await startProviderPortal({
    store: redis.store,
    clients: [
      {
        clientId: 'fapi-app',
        jwks: { keys: [appKey.publicJwk] },
        redirectUris: [REDIRECT],
        requirePushedAuthorizationRequests: true,
        dpop: 'required',
        scopes: ['notes:read'],
      },
      { clientId: 'spa', redirectUris: [REDIRECT], dpop: 'required' },
      { clientId: 'other-app', jwks: { keys: [otherKey.publicJwk] }, redirectUris: [REDIRECT] },
      { clientId: 'partner', clientSecret: SECRET, redirectUris: [PARTNER_REDIRECT] },
      { clientId: 'poster', clientSecret: SECRET, redirectUris: [PARTNER_REDIRECT], responseMode: 'form_post' },
      { clientId: 'reports-job', clientSecret: SECRET, grantTypes: ['client_credentials'], scopes: ['reports:read'] },
    ],
    provider: {
      serviceScopes: ['reports:read'],
      resources: [{ indicator: NOTES, scopes: ['notes:read', 'notes:write'] }],
      events: recorder.events,
    },
  });
});
afterEach(() => recorder.clear());
afterAll(async () => {
  await portal?.close();
  await recorder?.events.close();
  await redis?.cleanup();
});

async function signedIn(): Promise<TestBrowser> {
  const browser = new TestBrowser(portal);
  await browser.signIn('alice');
  return browser;
}

async function fapiApp(): Promise<HandClient> {
  return new HandClient(portal, 'fapi-app', appKey, await ProofClient.create('ES256'));
}

function claimsOf(jwt: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [header = '', payload = ''] = jwt.split('.');
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>,
  };
}

/** The OAuth error an authorization request ended with: at the redirect URI, or on the provider's error page. */
async function authorizationError(browser: TestBrowser, url: string, redirectUri: string): Promise<string | null> {
  const { location, response } = await browser.follow(url);
  if (location.startsWith(redirectUri)) return new URL(location).searchParams.get('error');
  const page = await response.text();
  return /invalid_request_uri|invalid_request|invalid_scope|request_uri|pushed authorization/i.exec(page)?.[0] ?? `page ${response.status}`;
}

describe('private_key_jwt, PAR and DPoP together', () => {
  it('signs a user in to a private_key_jwt client through PAR, binding its JWT access token to the DPoP key', async () => {
    const client = await fapiApp();
    const { response, tokens } = await client.login(await signedIn(), REDIRECT, { scope: 'openid notes:read' });
    expect(response.status).toBe(200);
    expect(tokens.token_type).toBe('DPoP');
    const { header, payload } = claimsOf(tokens.access_token!);
    expect(header).toMatchObject({ typ: 'at+jwt', alg: 'ES256', kid: 'op-1' });
    expect(payload).toMatchObject({
      iss: portal.issuer,
      aud: NOTES,
      scope: 'notes:read',
      client_id: 'fapi-app',
      cnf: { jkt: client.dpop!.jkt },
    });
    expect(payload.sub).toBe('directory:local|alice');
  });
});

describe('pushed authorization requests', () => {
  it('refuses a plain authorization request from a client that must push its requests', async () => {
    const pkce = pkcePair();
    const url = `${portal.issuer}/oidc/auth?${new URLSearchParams({
      client_id: 'fapi-app',
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    })}`;
    expect(await authorizationError(await signedIn(), url, REDIRECT)).toMatch(/invalid_request|pushed authorization/i);
  });

  it('refuses a request_uri used a second time', async () => {
    const client = await fapiApp();
    const pushed = await client.push(REDIRECT);
    expect(pushed.response.status).toBe(201);
    const browser = await signedIn();
    const first = await browser.follow(client.authorizeUrl(String(pushed.body.request_uri)));
    expect(new URL(first.location).searchParams.get('code')).toBeTruthy();
    expect(await authorizationError(browser, client.authorizeUrl(String(pushed.body.request_uri)), REDIRECT)).toMatch(
      /invalid_request_uri|request_uri/,
    );
  });

  it("refuses another client's request_uri", async () => {
    const client = await fapiApp();
    const pushed = await client.push(REDIRECT);
    expect(pushed.response.status).toBe(201);
    const other = new HandClient(portal, 'other-app', otherKey);
    expect(await authorizationError(await signedIn(), other.authorizeUrl(String(pushed.body.request_uri)), REDIRECT)).toMatch(
      /invalid_request_uri|request_uri|invalid_request/,
    );
  });

  it('answers a malformed pushed request with 400 and the RFC error, recorded as provider.par.refused', async () => {
    const client = await fapiApp();
    const pushed = await client.push(REDIRECT, { code_challenge_method: 'plain' });
    expect(pushed.response.status).toBe(400);
    expect(pushed.body).toMatchObject({ error: 'invalid_request' });
    expect((await recorder.only('provider.par.refused')).clientId).toBe('fapi-app');
  });
});

describe('client assertions (private_key_jwt)', () => {
  it('refuses a replayed client assertion with 401 invalid_client, recorded as replayed', async () => {
    const client = await fapiApp();
    const assertion = await client.assertion();
    expect((await client.push(REDIRECT, {}, { assertion })).response.status).toBe(201);
    const replay = await client.push(REDIRECT, {}, { assertion });
    expect(replay.response.status).toBe(401);
    expect(replay.body.error).toBe('invalid_client');
    expect(await recorder.only('client_assertion.refused')).toMatchObject({ reason: 'replayed', clientId: 'fapi-app' });
  });

  it('accepts one of five parallel requests carrying the same assertion', async () => {
    const client = await fapiApp();
    const assertion = await client.assertion();
    const statuses = await Promise.all(
      Array.from({ length: 5 }, async () => (await client.push(REDIRECT, {}, { assertion })).response.status),
    );
    expect(statuses.sort()).toEqual([201, 401, 401, 401, 401]);
  });

  it.each([
    ['another server', 'https://elsewhere.example.test'],
    ['the authorization endpoint', 'AUTH'],
  ])('refuses an assertion whose audience is %s, recorded as wrong_audience', async (_label, audience) => {
    const client = await fapiApp();
    const aud = audience === 'AUTH' ? `${portal.issuer}/oidc/auth` : audience;
    const pushed = await client.push(REDIRECT, {}, { assertion: await client.assertion({ aud }) });
    expect(pushed.response.status).toBe(401);
    expect(pushed.body.error).toBe('invalid_client');
    expect((await recorder.only('client_assertion.refused')).reason).toBe('wrong_audience');
  });

  it("refuses an assertion signed with another client's key", async () => {
    const forged = new HandClient(portal, 'fapi-app', otherKey);
    const pushed = await forged.push(REDIRECT);
    expect(pushed.response.status).toBe(401);
    expect(pushed.body.error).toBe('invalid_client');
    expect((await recorder.only('client_assertion.refused')).reason).toMatch(/unknown_key|invalid/);
  });

  it('refuses an expired assertion', async () => {
    const client = await fapiApp();
    const assertion = await client.assertion({ iat: Math.floor(Date.now() / 1000) - 600, exp: Math.floor(Date.now() / 1000) - 300 });
    const pushed = await client.push(REDIRECT, {}, { assertion });
    expect(pushed.response.status).toBe(401);
    expect((await recorder.only('client_assertion.refused')).reason).toBe('expired');
  });
});

describe('DPoP at the token endpoint', () => {
  it('refuses a code exchange without a proof from a client whose tokens must be bound', async () => {
    const client = await fapiApp();
    const { code, verifier } = await client.code(await signedIn(), REDIRECT);
    const response = await client.post(client.tokenEndpoint, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    });
    // oidc-provider answers a missing proof for a client whose tokens must be bound as an invalid grant.
    expect(response.status).toBe(400);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ error: 'invalid_grant' });
    expect(body).not.toHaveProperty('access_token');
  });

  it('refuses a DPoP proof replayed at the token endpoint', async () => {
    const client = await fapiApp();
    const proof = await client.proof(client.tokenEndpoint);
    const first = await client.code(await signedIn(), REDIRECT);
    const ok = await client.post(
      client.tokenEndpoint,
      { grant_type: 'authorization_code', code: first.code, redirect_uri: REDIRECT, code_verifier: first.verifier },
      { dpop: proof },
    );
    expect(ok.status).toBe(200);
    const second = await client.code(await signedIn(), REDIRECT);
    const replay = await client.post(
      client.tokenEndpoint,
      { grant_type: 'authorization_code', code: second.code, redirect_uri: REDIRECT, code_verifier: second.verifier },
      { dpop: proof },
    );
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toMatch(/invalid_grant|invalid_dpop_proof/);
  });

  it("binds a public client's refresh token to its DPoP key: a proof of another key cannot refresh it", async () => {
    const spa = new HandClient(portal, 'spa', undefined, await ProofClient.create('ES256'));
    const { tokens } = await spa.login(await signedIn(), REDIRECT);
    expect(tokens.refresh_token).toBeTruthy();
    const thief = await ProofClient.create('ES256');
    const stolen = await spa.post(
      spa.tokenEndpoint,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
      { dpop: await thief.proof({ htm: 'POST', htu: spa.tokenEndpoint }) },
    );
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toMatchObject({ error: 'invalid_grant' });
    const owner = await spa.post(
      spa.tokenEndpoint,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! },
      { dpop: await spa.proof(spa.tokenEndpoint) },
    );
    expect(owner.status).toBe(200);
  });
});

describe('response modes and scopes per client', () => {
  async function partnerUrl(clientId: string, extra: Record<string, string>): Promise<string> {
    const pkce = pkcePair();
    return `${portal.issuer}/oidc/auth?${new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      redirect_uri: PARTNER_REDIRECT,
      scope: 'openid',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
      ...extra,
    })}`;
  }

  it('refuses a response_mode the client is not registered for', async () => {
    const browser = await signedIn();
    expect(await authorizationError(browser, await partnerUrl('partner', { response_mode: 'form_post' }), PARTNER_REDIRECT)).toBe(
      'invalid_request',
    );
    expect(await authorizationError(browser, await partnerUrl('poster', { response_mode: 'query' }), PARTNER_REDIRECT)).toBe(
      'invalid_request',
    );
  });

  it('answers a form_post client with an auto-submitting form, not a code in the URL', async () => {
    const { response } = await (await signedIn()).follow(await partnerUrl('poster', { response_mode: 'form_post' }));
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain(`action="${PARTNER_REDIRECT}"`);
    expect(page).toMatch(/name="code"/);
  });

  it('refuses a service scope to an interactive client', async () => {
    const error = await authorizationError(
      await signedIn(),
      await partnerUrl('partner', { scope: 'openid reports:read' }),
      PARTNER_REDIRECT,
    );
    expect(error).toBe('invalid_scope');
  });

  it('refuses an API scope the client is not registered for', async () => {
    const browser = await signedIn();
    const url = await partnerUrl('partner', { scope: 'openid notes:read', resource: NOTES });
    expect(await authorizationError(browser, url, PARTNER_REDIRECT)).toBe('invalid_target');
  });

  it('gives a service its own scope, and no other', async () => {
    const token = async (scope: string) =>
      fetch(`${portal.issuer}/oidc/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`reports-job:${SECRET}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
      });
    expect((await token('reports:read')).status).toBe(200);
    const refused = await token('openid');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_scope');
  });
});
