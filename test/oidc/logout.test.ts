import express, { Router } from 'express';
import request from 'supertest';
import { logoutEverywhere } from '../../lib/session';
import { randomBytes } from 'node:crypto';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { TestUserAgent } from '../helpers/http-user-agent';
import { loadJose } from '../helpers/jose-tokens';
import { BACKCHANNEL_LOGOUT_EVENT, oidcLogout, oidcProvider, upstreamLogoutUrl } from '../../lib/oidc';

const SECRET = 'logout-client-secret-0123456789abcdef';

/** The two apps and a real provider whose client `shop` comes back to the shop's `/bye` after a logout. */
async function appsWithProvider(label: string, backchannel: boolean): Promise<{ apps: SsoApps; idp: TestIdp }> {
  const apps = await startSsoApps(label);
  const idp = await startTestIdp({
    clients: [
      {
        clientId: 'shop',
        clientSecret: SECRET,
        redirectUris: [apps.redirectUri('corp')],
        postLogoutRedirectUris: [`${apps.shop.origin}/bye`],
        ...(backchannel ? { backchannelLogoutUri: apps.backchannelUri('corp') } : {}),
      },
    ],
  });
  apps.configure({
    issuer: idp.issuer,
    clientId: 'shop',
    clientSecret: SECRET,
    allowInsecureLocalDevelopment: true,
    postLogoutRedirectUri: `${apps.shop.origin}/bye`,
  });
  return { apps, idp };
}

describe('logout with a real provider', () => {
  let apps: SsoApps;
  let idp: TestIdp;

  beforeAll(async () => {
    ({ apps, idp } = await appsWithProvider('oidc-logout', true));
  });
  afterAll(async () => {
    await idp.close();
    await apps.close();
  });

  async function loggedInAgent(): Promise<TestUserAgent> {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/corp`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
    expect((await ua.request(`${apps.auth.origin}/me`)).status).toBe(200);
    return ua;
  }

  async function loggedOutEverywhere(ua: TestUserAgent): Promise<boolean> {
    const statuses = await Promise.all([ua.request(`${apps.shop.origin}/me`), ua.request(`${apps.auth.origin}/me`)]);
    return statuses.every((answer) => answer.status === 401);
  }

  describe('oidcLogout (RP-initiated)', () => {
    it('ends the local session, then redirects to end_session_endpoint with id_token_hint, client_id and post_logout_redirect_uri', async () => {
      const ua = await loggedInAgent();
      const answer = await ua.request(`${apps.auth.origin}/logout/corp`, { method: 'POST', headers: { Origin: apps.auth.origin } });
      expect(answer.status).toBe(303);
      const target = new URL(answer.location!);
      expect(`${target.origin}${target.pathname}`).toBe(`${idp.issuer}/session/end`);
      expect(target.searchParams.get('client_id')).toBe('shop');
      expect(target.searchParams.get('post_logout_redirect_uri')).toBe(`${apps.shop.origin}/bye`);
      const hint = target.searchParams.get('id_token_hint')!;
      const jose = await loadJose();
      expect(jose.decodeJwt(hint)).toMatchObject({ iss: idp.issuer, aud: 'shop', sub: 'alice' });
      expect(ua.cookies.find((cookie) => cookie.name === '__Secure-sso.sid')).toBeUndefined();
      expect(await loggedOutEverywhere(ua)).toBe(true);
    });

    // The documented behaviour (docs/oidc.md, "Logout"): ssoSession refuses cookie-authenticated unsafe requests from
    // other origins.
    it('does not log the user out on a POST from a sibling subdomain (ssoSession refuses it: 403 csrf_origin)', async () => {
      const ua = await loggedInAgent();
      // Sibling subdomains are same-site: SameSite=Lax sends the session cookie with their form posts.
      const forged = await ua.request(`${apps.auth.origin}/logout/corp`, {
        method: 'POST',
        headers: { Origin: 'https://evil.example.test', 'Sec-Fetch-Site': 'same-site', Accept: 'application/json' },
      });
      expect(forged.status).toBe(403);
      expect(JSON.parse(forged.body).code).toBe('csrf_origin');
      expect(forged.location).toBeUndefined();
      expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
      expect((await ua.request(`${apps.auth.origin}/me`)).status).toBe(200);
    });

    it('is accepted by the provider, which sends the browser back to the post-logout page', async () => {
      const ua = await loggedInAgent();
      const answer = await ua.request(`${apps.auth.origin}/logout/corp`, { method: 'POST', headers: { Origin: apps.auth.origin } });
      const confirm = await ua.request(answer.location!);
      expect(confirm.status).toBe(200);
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
      expect(xsrf).toBeDefined();
      const done = await ua.request(`${idp.issuer}/session/end/confirm`, { form: { xsrf: xsrf!, logout: 'yes' } });
      expect(done.location).toBe(`${apps.shop.origin}/bye`);
    });
  });

  describe('backchannelLogout', () => {
    it('ends the shared session on both apps when the provider sends a logout token', async () => {
      const ua = await loggedInAgent();
      const other = await loggedInAgent();
      // The user logs out at the provider itself (not through our app): only the back channel tells us.
      const confirm = await ua.request(`${idp.issuer}/session/end`);
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
      const done = await ua.request(`${idp.issuer}/session/end/confirm`, { form: { xsrf: xsrf!, logout: 'yes' } });
      expect(done.status).toBeLessThan(400);
      expect(await loggedOutEverywhere(ua)).toBe(true);
      // Another browser's login (another provider session, another sid) is untouched.
      expect((await other.request(`${apps.shop.origin}/me`)).status).toBe(200);
    });

    async function mint(claims: Record<string, unknown>): Promise<string> {
      const jose = await loadJose();
      const key = await jose.importJWK(idp.signingKey, 'RS256');
      return new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: idp.signingKey.kid, typ: 'logout+jwt' }).sign(key);
    }

    function goodClaims(extra: Record<string, unknown> = {}): Record<string, unknown> {
      const now = Math.floor(Date.now() / 1000);
      return {
        iss: idp.issuer,
        aud: 'shop',
        iat: now,
        exp: now + 120,
        jti: randomBytes(12).toString('hex'),
        sub: 'alice',
        events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
        ...extra,
      };
    }

    const post = (token: string) =>
      new TestUserAgent().request(apps.backchannelUri('corp'), { form: { logout_token: token }, headers: { Accept: 'application/json' } });

    it('answers 200 with Cache-Control: no-store and ends every session of the sub when the token has no sid', async () => {
      idp.loginAs('bob');
      const ua = new TestUserAgent();
      await ua.follow(`${apps.auth.origin}/login/corp`);
      idp.loginAs('alice');
      expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
      const answer = await post(await mint(goodClaims({ sub: 'bob' })));
      expect(answer.status).toBe(200);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(await loggedOutEverywhere(ua)).toBe(true);
    });

    it.each<[string, (claims: Record<string, unknown>) => Record<string, unknown>]>([
      ['carries a nonce', (claims) => ({ ...claims, nonce: 'n-1' })],
      ['lacks the events claim', ({ events: _events, ...claims }) => claims],
      ['has events without the back-channel logout member', (claims) => ({ ...claims, events: { 'http://example.test/other': {} } })],
      ['is for another audience', (claims) => ({ ...claims, aud: 'another-client' })],
      ['is from another issuer', (claims) => ({ ...claims, iss: 'https://evil.example.net' })],
      ['has neither sub nor sid', ({ sub: _sub, ...claims }) => claims],
      ['has expired', (claims) => ({ ...claims, iat: Number(claims.iat) - 600, exp: Number(claims.iat) - 300 })],
    ])('refuses a logout token that %s: 400 invalid_request, sessions untouched', async (_label, change) => {
      const ua = await loggedInAgent();
      const answer = await post(await mint(change(goodClaims())));
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_request' });
      expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
    });

    it('refuses a logout token signed with a key the provider does not publish', async () => {
      const jose = await loadJose();
      const { privateKey } = await jose.generateKeyPair('RS256');
      const token = await new jose.SignJWT(goodClaims()).setProtectedHeader({ alg: 'RS256', kid: idp.signingKey.kid }).sign(privateKey);
      const answer = await post(token);
      expect(answer.status).toBe(400);
    });

    it('refuses a replayed logout token (same jti)', async () => {
      const token = await mint(goodClaims({ sub: 'nobody-logged-in' }));
      expect((await post(token)).status).toBe(200);
      const replay = await post(token);
      expect(replay.status).toBe(400);
      expect(JSON.parse(replay.body).error_description).toMatch(/already used/);
    });

    it('refuses a request without logout_token', async () => {
      const answer = await new TestUserAgent().request(apps.backchannelUri('corp'), {
        form: { token: 'x' },
        headers: { Accept: 'application/json' },
      });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body).error).toBe('invalid_request');
    });
  });
});

describe('oidcLogout with a provider without end_session_endpoint', () => {
  let apps: SsoApps;
  let fake: FakeIdp;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-logout-fake');
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    const base = { issuer: fake.issuer, clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true };
    apps.configure({ ...base, name: 'fake', postLogoutRedirectUri: `${apps.shop.origin}/bye` });
    apps.configure({ ...base, name: 'plain' });
    apps.configure({ ...base, name: 'foreign', postLogoutRedirectUri: 'https://evil.example.net/bye' });
  });
  afterAll(async () => {
    await fake.close();
    await apps.close();
  });

  async function loggedIn(name: string): Promise<TestUserAgent> {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/${name}`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
    return ua;
  }

  it('ends the local session and goes to the post-logout page', async () => {
    const ua = await loggedIn('fake');
    const answer = await ua.request(`${apps.auth.origin}/logout/fake`, { method: 'POST', headers: { Origin: apps.auth.origin } });
    expect(answer.status).toBe(303);
    expect(answer.location).toBe(`${apps.shop.origin}/bye`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(401);
  });

  it("goes to the redirect policy's default page without a post-logout URI", async () => {
    const ua = await loggedIn('plain');
    const answer = await ua.request(`${apps.auth.origin}/logout/plain`, { method: 'POST', headers: { Origin: apps.auth.origin } });
    expect(answer.location).toBe(`${apps.auth.origin}/`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(401);
  });

  it('refuses a post-logout URI outside the parent domain (configuration error, 500) without redirecting there', async () => {
    const ua = await loggedIn('foreign');
    const answer = await ua.request(`${apps.auth.origin}/logout/foreign`, {
      method: 'POST',
      headers: { Accept: 'application/json', Origin: apps.auth.origin },
    });
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.body).code).toBe('oidc_misconfigured');
    expect(answer.location).toBeUndefined();
  });
});

describe('oidcLogout sends the ID token hint only to the issuer that issued it', () => {
  let apps: SsoApps;
  let loggedInAt: FakeIdp;
  let namesake: FakeIdp;

  const endpointsOf = (fake: FakeIdp) => ({
    authorization: `${fake.issuer}/authorize`,
    token: `${fake.issuer}/token`,
    jwks: `${fake.issuer}/jwks`,
    endSession: `${fake.issuer}/session/end`,
  });

  beforeAll(async () => {
    apps = await startSsoApps('oidc-logout-issuer');
    loggedInAt = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    namesake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    const options = { name: 'corp', clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true };
    apps.configure({ ...options, issuer: loggedInAt.issuer, endpoints: endpointsOf(loggedInAt) });
    // shop gives the name "corp" to a provider at another issuer.
    const shopRoutes = Router();
    const other = oidcProvider({
      ...options,
      issuer: namesake.issuer,
      endpoints: endpointsOf(namesake),
      redirectUri: apps.redirectUri('corp'),
      store: apps.store,
    });
    shopRoutes.post('/logout/corp', oidcLogout(other));
    apps.shop.mount(shopRoutes);
  });
  afterAll(async () => {
    await loggedInAt.close();
    await namesake.close();
    await apps.close();
  });

  async function logoutAt(origin: string): Promise<URL> {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/corp`);
    const answer = await ua.request(`${origin}/logout/corp`, { method: 'POST', headers: { Origin: origin } });
    expect(answer.status).toBe(303);
    return new URL(answer.location!);
  }

  it('hints the provider the session logged in through', async () => {
    const target = await logoutAt(apps.auth.origin);
    expect(`${target.origin}${target.pathname}`).toBe(`${loggedInAt.issuer}/session/end`);
    expect(target.searchParams.get('id_token_hint')).toMatch(/^ey/);
  });

  it('sends no ID token to a provider of the same name at another issuer', async () => {
    const target = await logoutAt(apps.shop.origin);
    expect(`${target.origin}${target.pathname}`).toBe(`${namesake.issuer}/session/end`);
    expect(target.searchParams.has('id_token_hint')).toBe(false);
  });
});

describe('upstreamLogoutUrl: any app of the domain ends the provider session on sign-out', () => {
  let apps: SsoApps;
  let idp: TestIdp;

  beforeAll(async () => {
    ({ apps, idp } = await appsWithProvider('oidc-upstream-logout', false));
    // The shop never ran the login: it reads what the login kept in the shared session.
    const shop = Router();
    shop.get('/me', (req, res) => void res.status(req.user ? 200 : 401).json({ user: req.user ?? null }));
    shop.post('/sign-out', async (req, res, next) => {
      try {
        const upstream = upstreamLogoutUrl(req);
        await logoutEverywhere(req);
        res.redirect(303, upstream ?? '/');
      } catch (error) {
        next(error);
      }
    });
    apps.shop.mount(shop);
  });
  afterAll(async () => {
    await idp.close();
    await apps.close();
  });

  /** Signs in through the provider; true when the provider had to ask (an interaction), false when it passed silently. */
  async function signIn(ua: TestUserAgent): Promise<boolean> {
    const chain = await ua.follow(`${apps.auth.origin}/login/corp`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
    return chain.some((answer) => new URL(answer.url).pathname.startsWith('/interaction/'));
  }

  it('sends the browser to the end-session endpoint with the hint, and the next sign-in asks again', async () => {
    const ua = new TestUserAgent();
    expect(await signIn(ua)).toBe(true);
    // While the provider's session lives, a second sign-in passes without asking: what signing out must end.
    expect(await signIn(ua)).toBe(false);

    const out = await ua.request(`${apps.shop.origin}/sign-out`, { method: 'POST', headers: { Origin: apps.shop.origin } });
    expect(out.status).toBe(303);
    const target = new URL(out.location!);
    expect(`${target.origin}${target.pathname}`).toBe(`${idp.issuer}/session/end`);
    expect(target.searchParams.get('client_id')).toBe('shop');
    expect(target.searchParams.get('post_logout_redirect_uri')).toBe(`${apps.shop.origin}/bye`);
    expect((await loadJose()).decodeJwt(target.searchParams.get('id_token_hint')!)).toMatchObject({ iss: idp.issuer, sub: 'alice' });
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(401);

    const confirm = await ua.request(out.location!);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)![1]!;
    const done = await ua.request(`${idp.issuer}/session/end/confirm`, { form: { xsrf, logout: 'yes' } });
    expect(done.location).toBe(`${apps.shop.origin}/bye`);
    expect(await signIn(ua)).toBe(true);
  });

  it('is undefined without a signed-in session', async () => {
    const shop = Router();
    shop.get('/upstream', (req, res) => void res.json({ upstream: upstreamLogoutUrl(req) ?? null }));
    const app = express();
    app.use(apps.shop.sessions);
    app.use(shop);
    const res = await request(app).get('/upstream').set('Host', 'shop.example.test');
    expect(res.body).toEqual({ upstream: null });
  });
});
