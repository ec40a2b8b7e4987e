import { randomBytes } from 'node:crypto';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import { OpenidClientFlows } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;
let flows: OpenidClientFlows;
let config: OpenidClient.Configuration;

beforeAll(async () => {
  redis = await testRedisStore('op-edges');
  portal = await startProviderPortal({
    store: redis.store,
    clients: [
      { clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] },
      { clientId: 'saas', clientSecret: SECRET, redirectUris: [REDIRECT], thirdParty: true, name: 'SaaS Tool' },
      // A third-party public client (token_endpoint_auth_method none): anyone can send its id.
      { clientId: 'saas-app', redirectUris: [REDIRECT], thirdParty: true, name: 'SaaS App' },
    ],
  });
  flows = await OpenidClientFlows.load(portal);
  config = await flows.config('partner', SECRET);
});

afterAll(async () => {
  await portal?.close();
  await redis?.cleanup();
});

async function signedIn(username = 'alice'): Promise<TestBrowser> {
  const browser = new TestBrowser(portal);
  await browser.signIn(username);
  return browser;
}

function tokenRequest(body: Record<string, string>, secret = SECRET): Promise<Response> {
  return fetch(`${portal.issuer}/oidc/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`partner:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(body).toString(),
  });
}

describe('what discovery publishes is what the provider does', () => {
  it('publishes the code flow only and client_secret_basic, private_key_jwt (or none) only', async () => {
    const discovery = (await (await fetch(`${portal.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(discovery.response_types_supported).toEqual(['code']);
    expect(discovery.token_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'private_key_jwt', 'none']);
    // Introspection and revocation authenticate clients the same way (oidc-provider publishes one list for all three).
    expect(discovery).not.toHaveProperty('introspection_endpoint_auth_methods_supported');
  });

  it.each(['code id_token', 'id_token', 'token', 'code token', 'none'])(
    'refuses response_type=%s (unsupported_response_type, or invalid_request for its fragment response mode), issuing nothing',
    async (responseType) => {
      const started = await flows.start(config, REDIRECT, { response_type: responseType });
      const { location, response } = await (await signedIn()).follow(started.url.href);
      // oidc-provider answers on its error page or at the redirect URI (in the query or, for a hybrid type, the fragment).
      const answer = location.startsWith(REDIRECT) ? new URL(location) : undefined;
      const params = new URLSearchParams(answer ? `${answer.search.slice(1)}&${answer.hash.slice(1)}` : '');
      const error = answer
        ? params.get('error')
        : /unsupported_response_type|response_mode is not allowed/
            .exec(await response.text())?.[0]
            .replace(/^response.*/, 'invalid_request');
      // A hybrid or implicit type defaults to the fragment response mode, which the client may not use: that refusal
      // (invalid_request) comes first.
      expect(['unsupported_response_type', 'invalid_request']).toContain(error);
      for (const issued of ['code', 'id_token', 'access_token']) expect(params.get(issued)).toBeNull();
    },
  );

  it('refuses a client secret sent in the form body (client_secret_post) with 401 invalid_client, at every endpoint', async () => {
    const started = await flows.start(config, REDIRECT);
    const callback = await flows.authorize(await signedIn(), started, REDIRECT);
    const post = (path: string, body: Record<string, string>) =>
      fetch(`${portal.issuer}/oidc/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...body, client_id: 'partner', client_secret: SECRET }).toString(),
      });
    const code = callback.searchParams.get('code')!;
    const grant = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: started.verifier };
    for (const [path, body] of [
      ['token', grant],
      ['token/introspection', { token: 'any' }],
      ['token/revocation', { token: 'any' }],
    ] as const) {
      const response = await post(path, body);
      expect({ path, status: response.status, body: await response.json() }).toMatchObject({
        path,
        status: 401,
        body: { error: 'invalid_client' },
      });
    }
    // The same code, with the same secret in the Basic header, is still good: the refusal changed nothing.
    const tokens = await flows.exchange(config, callback, started);
    expect(tokens.access_token).toEqual(expect.any(String));
  });
});

describe('authorization request checks', () => {
  it('refuses a redirect URI that is not registered exactly, without redirecting', async () => {
    const started = await flows.start(config, `${REDIRECT}/other`);
    const { location, response } = await (await signedIn()).follow(started.url.href);
    expect(location.startsWith(REDIRECT)).toBe(false);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('redirect_uri');
  });

  it('refuses an authorization request without a PKCE challenge', async () => {
    const started = await flows.start(config, REDIRECT);
    started.url.searchParams.delete('code_challenge');
    started.url.searchParams.delete('code_challenge_method');
    const { location } = await (await signedIn()).follow(started.url.href);
    expect(new URL(location).searchParams.get('error')).toBe('invalid_request');
  });

  it('answers prompt=none without a portal session with login_required', async () => {
    const started = await flows.start(config, REDIRECT, { prompt: 'none' });
    const { location } = await new TestBrowser(portal).follow(started.url.href);
    expect(location.startsWith(REDIRECT)).toBe(true);
    expect(new URL(location).searchParams.get('error')).toBe('login_required');
  });

  it('sends a browser without a portal session to the portal login, and back to the interaction', async () => {
    const started = await flows.start(config, REDIRECT);
    const browser = new TestBrowser(portal);
    const { location } = await browser.follow(started.url.href);
    const login = new URL(location);
    expect(`${login.origin}${login.pathname}`).toBe('https://auth.example.test/login');
    const back = login.searchParams.get('return_to')!;
    expect(back).toMatch(new RegExp(`^${portal.issuer}/oidc/interaction/`));
    await browser.signIn('alice');
    const done = await browser.follow(back);
    expect(new URL(done.location).searchParams.get('code')).toEqual(expect.any(String));
  });
});

describe('one session, not two', () => {
  it('follows the portal session: after the portal user changes, the provider signs in the new user', async () => {
    const browser = await signedIn('alice');
    const first = await flows.login(config, browser, REDIRECT);
    expect(first.tokens.claims()!.sub).toBe('directory:local|alice');
    const logout = await browser.request(`${portal.issuer}/logout`, { method: 'POST' });
    expect(logout.status).toBe(303);
    await browser.signIn('bob');
    const second = await flows.login(config, browser, REDIRECT);
    expect(second.tokens.claims()!.sub).toBe('directory:local|bob');
  });

  it('answers prompt=none with login_required once the portal session has ended', async () => {
    const browser = await signedIn('alice');
    await flows.login(config, browser, REDIRECT);
    await browser.request(`${portal.issuer}/logout`, { method: 'POST' });
    const started = await flows.start(config, REDIRECT, { prompt: 'none' });
    const { location } = await browser.follow(started.url.href);
    expect(new URL(location).searchParams.get('error')).toBe('login_required');
  });

  it('sends prompt=login to the step-up page and completes after a fresh sign-in', async () => {
    const browser = await signedIn('alice');
    const started = await flows.start(config, REDIRECT, { prompt: 'login' });
    const { location } = await browser.follow(started.url.href);
    const stepUp = new URL(location);
    expect(`${stepUp.origin}${stepUp.pathname}`).toBe('https://auth.example.test/login');
    expect(stepUp.searchParams.get('prompt')).toBe('login');
    // The portal shows its form although the session is live, instead of bouncing straight back.
    const page = await browser.request(`${portal.issuer}/login?prompt=login&return_to=${encodeURIComponent('https://auth.example.test/')}`);
    expect(page.status).toBe(200);
    await browser.signIn('alice');
    const done = await browser.follow(stepUp.searchParams.get('return_to')!);
    const callback = new URL(done.location);
    expect(callback.searchParams.get('code')).toEqual(expect.any(String));
    const tokens = await flows.exchange(config, callback, started);
    expect(tokens.claims()!.auth_time).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 5);
  });

  it('sends acr_values the session does not meet to the step-up page with the asked level', async () => {
    const started = await flows.start(config, REDIRECT, { acr_values: '2fa' });
    const { location } = await (await signedIn()).follow(started.url.href);
    const stepUp = new URL(location);
    expect(stepUp.searchParams.get('prompt')).toBe('login');
    expect(stepUp.searchParams.get('acr_values')).toBe('2fa');
    // The kit's own step-up page reads the weakest kit level asked, and the max age.
    expect(stepUp.searchParams.get('acr')).toBe('2fa');
    expect(stepUp.searchParams.get('max_age')).toBeNull();
  });
});

describe('token endpoint checks', () => {
  /** A fresh code of alice's for partner, and the body of its proper exchange. */
  async function freshCode() {
    const started = await flows.start(config, REDIRECT);
    const callback = await flows.authorize(await signedIn(), started, REDIRECT);
    const code = callback.searchParams.get('code')!;
    const body: Record<string, string> = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: started.verifier,
    };
    return { started, callback, code, body };
  }

  async function expectTokenError(response: Response, status: number, error: string): Promise<void> {
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({ error });
  }

  it('refuses a code exchanged with a different PKCE verifier', async () => {
    const { body } = await freshCode();
    await expectTokenError(await tokenRequest({ ...body, code_verifier: flows.client.randomPKCECodeVerifier() }), 400, 'invalid_grant');
  });

  it('refuses a code exchanged without a PKCE verifier', async () => {
    const { body } = await freshCode();
    delete body.code_verifier;
    await expectTokenError(await tokenRequest(body), 400, 'invalid_grant');
  });

  it('refuses a wrong client secret with invalid_client', async () => {
    const { body } = await freshCode();
    await expectTokenError(await tokenRequest(body, `${SECRET}x`), 401, 'invalid_client');
  });

  it('refuses a replayed code and revokes the tokens it gave', async () => {
    const { started, callback, body } = await freshCode();
    const tokens = await flows.exchange(config, callback, started);
    await expectTokenError(await tokenRequest(body), 400, 'invalid_grant');
    expect((await flows.client.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
    await expect(flows.client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('lets exactly one of five concurrent redemptions of a code succeed', async () => {
    const { body } = await freshCode();
    const answers = await Promise.all(Array.from({ length: 5 }, () => tokenRequest(body)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
  });

  it('refuses an expired code', async () => {
    const { code, body } = await freshCode();
    // Time passes for the stored code: its expiry is moved into the past (the record itself is still there).
    const key = `op:AuthorizationCode:{${code}}`;
    const record = JSON.parse((await redis.store.get(key))!) as { exp: number; iat: number };
    await redis.store.set(key, JSON.stringify({ ...record, iat: record.iat - 120, exp: Math.floor(Date.now() / 1000) - 60 }), 60);
    await expectTokenError(await tokenRequest(body), 400, 'invalid_grant');
  });
});

describe('consent', () => {
  it('asks a user to consent to a third-party client once, then remembers it per scope', async () => {
    const saas = await flows.config('saas', SECRET);
    const browser = await signedIn('alice');
    const started = await flows.start(saas, REDIRECT);
    const { location, response } = await browser.follow(started.url.href);
    expect(location).toMatch(/\/oidc\/interaction\//);
    const page = await response.text();
    expect(page).toContain('Allow SaaS Tool?');
    expect(page).not.toMatch(/<script>|style=/);
    const allowed = await browser.follow(`${location}/consent`, { method: 'POST', form: {} });
    const tokens = await flows.exchange(saas, new URL(allowed.location), started);
    expect(tokens.claims()!.sub).toBe('directory:local|alice');

    const again = await signedIn('alice');
    const second = await flows.login(saas, again, REDIRECT);
    expect(second.tokens.claims()!.sub).toBe('directory:local|alice');
  });

  it('remembers the consent to a confidential third-party client within the same browser session too', async () => {
    const saas = await flows.config('saas', SECRET);
    const browser = await signedIn('alice');
    const first = await flows.start(saas, REDIRECT);
    const { location } = await browser.follow(first.url.href);
    // Alice consented in the test above, if it ran.
    const callback = location.startsWith(REDIRECT)
      ? location
      : (await browser.follow(`${location}/consent`, { method: 'POST', form: {} })).location;
    await flows.exchange(saas, new URL(callback), first);
    const second = await flows.login(saas, browser, REDIRECT);
    expect(second.tokens.claims()!.sub).toBe('directory:local|alice');
  });

  it('asks the user to consent to a third-party public client at every authorization request, remembering nothing', async () => {
    const app = await flows.config('saas-app');
    const browser = await signedIn('bob');
    for (let round = 0; round < 2; round += 1) {
      const started = await flows.start(app, REDIRECT);
      const { location, response } = await browser.follow(started.url.href);
      expect(location).toMatch(/\/oidc\/interaction\//);
      const page = await response.text();
      expect(page).toContain('Allow SaaS App?');
      expect(page).toContain('You are asked each time');
      expect(page).not.toContain('remembered for');
      const allowed = await browser.follow(`${location}/consent`, { method: 'POST', form: {} });
      const tokens = await flows.exchange(app, new URL(allowed.location), started);
      expect(tokens.claims()!.sub).toBe('directory:local|bob');
    }
    // Another browser of the same user is asked too: the consent was not kept for the user either.
    const started = await flows.start(app, REDIRECT);
    const { location } = await (await signedIn('bob')).follow(started.url.href);
    expect(location).toMatch(/\/oidc\/interaction\//);
  });

  it('answers access_denied when the user denies', async () => {
    const saas = await flows.config('saas', SECRET);
    const browser = await signedIn('bob');
    const started = await flows.start(saas, REDIRECT);
    const { location } = await browser.follow(started.url.href);
    const denied = await browser.follow(`${location}/abort`, { method: 'POST', form: {} });
    expect(new URL(denied.location).searchParams.get('error')).toBe('access_denied');
  });

  it('refuses a consent posted by a browser whose portal user is not the one signing in', async () => {
    const saas = await flows.config('saas', SECRET);
    const browser = await signedIn('bob');
    const started = await flows.start(saas, REDIRECT);
    const { location } = await browser.follow(started.url.href);
    await browser.request(`${portal.issuer}/logout`, { method: 'POST' });
    await browser.signIn('alice');
    const answer = await browser.request(`${location}/consent`, { method: 'POST', form: {} });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ code: 'consent_not_expected' });
  });

  it('skips consent for first-party clients', async () => {
    const started = await flows.start(config, REDIRECT);
    const { location } = await (await signedIn('bob')).follow(started.url.href);
    expect(location.startsWith(REDIRECT)).toBe(true);
  });
});
