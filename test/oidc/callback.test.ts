import type { Request, Response } from 'express';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent } from '../helpers/http-user-agent';
import type { OidcProvider } from '../../lib/oidc';
import { providerKeys } from '../../lib/oidc/id-token';
import { errorHandler } from '../../lib/http';
import { requireSession } from '../../lib/session';

const CLIENT_SECRET = 'corp-client-secret-0123456789abcdef';

describe('oidcCallback against a real OpenID provider', () => {
  let apps: SsoApps;
  let idp: TestIdp;
  let corp: OidcProvider;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-callback');
    idp = await startTestIdp({
      clients: [
        {
          clientId: 'shop',
          clientSecret: CLIENT_SECRET,
          redirectUris: [apps.redirectUri('corp')],
          postLogoutRedirectUris: [`${apps.shop.origin}/bye`],
          backchannelLogoutUri: apps.backchannelUri('corp'),
        },
      ],
    });
    corp = apps.configure({
      issuer: idp.issuer,
      clientId: 'shop',
      clientSecret: CLIENT_SECRET,
      allowInsecureLocalDevelopment: true,
      postLogoutRedirectUri: `${apps.shop.origin}/bye`,
      // This provider is trusted for roles.
      rolesClaim: 'roles',
    });
  });

  afterAll(async () => {
    await idp.close();
    await apps.close();
  });

  it('logs in at auth and is authenticated on shop (one shared session)', async () => {
    const ua = new TestUserAgent();
    idp.loginAs('alice');
    const returnTo = `${apps.shop.origin}/cart`;
    const chain = await ua.follow(`${apps.auth.origin}/login/corp?return_to=${encodeURIComponent(returnTo)}`, {
      stopAt: (url) => url.startsWith(apps.shop.origin),
    });
    const last = chain[chain.length - 1]!;
    expect(last.status).toBe(302);
    expect(last.location).toBe(returnTo);
    expect(last.url.startsWith(`${apps.auth.origin}/callback/corp?`)).toBe(true);

    const cookie = ua.cookies.find((c) => c.name === '__Secure-sso.sid');
    expect(cookie).toMatchObject({ domain: 'example.test', hostOnly: false, httpOnly: true, secure: true, sameSite: 'lax' });

    const onShop = await ua.request(`${apps.shop.origin}/me`);
    expect(onShop.status).toBe(200);
    expect(JSON.parse(onShop.body).user).toMatchObject({
      id: `oidc:${idp.issuer}|alice`,
      source: `oidc:${idp.issuer}`,
      subject: 'alice',
      name: 'Alice Example',
      roles: ['admin', 'editor'],
      method: 'oidc',
      attributes: { provider: 'corp', issuer: idp.issuer, email: 'alice@example.test' },
    });
    const onAuth = await ua.request(`${apps.auth.origin}/me`);
    expect(JSON.parse(onAuth.body).user.id).toBe(`oidc:${idp.issuer}|alice`);
  });

  it('regenerates the session id at login (no fixation)', async () => {
    const ua = new TestUserAgent();
    const start = await ua.request(`${apps.auth.origin}/login/corp`);
    expect(start.status).toBe(302);
    const before = ua.cookies.find((c) => c.name === '__Secure-sso.sid')?.value;
    expect(before).toBeDefined();
    await ua.follow(start.location!);
    const after = ua.cookies.find((c) => c.name === '__Secure-sso.sid')?.value;
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
  });

  it('keeps the tokens server-side: no token in any cookie or in the final redirect', async () => {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/corp`, {
      stopAt: (url) => !url.includes('/callback/') && url.startsWith(apps.auth.origin) && !url.includes('/login/'),
    });
    const tokenAnswer = await ua.request(`${apps.auth.origin}/token`);
    const accessToken = JSON.parse(tokenAnswer.body).accessToken as string;
    expect(typeof accessToken).toBe('string');
    for (const cookie of ua.cookies) expect(cookie.value).not.toContain(accessToken);
    const final = chain[chain.length - 1]!;
    expect(final.location ?? '').not.toContain(accessToken);
    expect(final.location ?? '').not.toContain('code=');
  });

  it('refuses a replayed callback and leaves the browser logged out', async () => {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/corp`, { stopAt: (url) => url.includes('/callback/corp') });
    const callbackUrl = chain[chain.length - 1]!.location!;
    // An attacker's browser replaying the callback (with its own, anonymous session) gets nowhere.
    const attacker = new TestUserAgent();
    await attacker.request(`${apps.auth.origin}/login/corp`);
    const replayElsewhere = await attacker.request(callbackUrl);
    expect(replayElsewhere.status).toBe(400);
    expect(replayElsewhere.body).toContain('/login/corp');
    expect((await attacker.request(`${apps.shop.origin}/me`)).status).toBe(401);

    const first = await ua.request(callbackUrl);
    expect(first.status).toBe(302);
    const second = await ua.request(callbackUrl, { headers: { Accept: 'application/json' } });
    expect(second.status).toBe(400);
    expect(JSON.parse(second.body)).toMatchObject({ status: 400, code: 'invalid_state', loginUrl: '/login/corp' });
  });

  it("refuses a replayed authorization code injected into another browser's transaction: 400, no session", async () => {
    const victim = new TestUserAgent();
    const chain = await victim.follow(`${apps.auth.origin}/login/corp`, { stopAt: (url) => url.includes('/callback/corp') });
    const used = new URL(chain[chain.length - 1]!.location!);
    expect((await victim.request(used.href)).status).toBe(302);
    // The attacker replays the (already redeemed) code under the state of a login of their own.
    const attacker = new TestUserAgent();
    const start = await attacker.request(`${apps.auth.origin}/login/corp`);
    const forged = new URL(used.href);
    forged.searchParams.set('state', new URL(start.location!).searchParams.get('state')!);
    const answer = await attacker.request(forged.href, { headers: { Accept: 'application/json' } });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body).code).toBe('invalid_grant');
    expect((await attacker.request(`${apps.shop.origin}/me`)).status).toBe(401);
  });

  it('refuses a callback for a transaction older than 10 minutes', async () => {
    const ua = new TestUserAgent();
    const start = await ua.request(`${apps.auth.origin}/login/corp`);
    const state = new URL(start.location!).searchParams.get('state')!;
    const raw = decodeURIComponent(ua.cookies.find((cookie) => cookie.name === '__Secure-sso.sid')!.value);
    const sessionKey = `sess:${raw.slice(2, raw.lastIndexOf('.'))}`;
    const session = JSON.parse((await apps.store.get(sessionKey))!);
    const transaction = JSON.parse(session.oidcTransactions[state]);
    transaction.createdAt -= 10 * 60 * 1000 + 1;
    session.oidcTransactions[state] = JSON.stringify(transaction);
    await apps.store.set(sessionKey, JSON.stringify(session), 600);
    const chain = await ua.follow(start.location!, { headers: { Accept: 'application/json' } });
    const last = chain[chain.length - 1]!;
    expect(JSON.parse(last.body)).toMatchObject({ status: 400, code: 'login_expired' });
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(401);
  });

  it('refuses a callback whose state differs from the transaction: 400, no session', async () => {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/corp`, { stopAt: (url) => url.includes('/callback/corp') });
    const tampered = new URL(chain[chain.length - 1]!.location!);
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
    const answer = await ua.request(tampered.href);
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toMatch(/text\/html/);
    expect(answer.body).toContain('href="/login/corp"');
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(401);
  });

  it('refuses an authorization response whose iss is another issuer (RFC 9207)', async () => {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/corp`, { stopAt: (url) => url.includes('/callback/corp') });
    const mixed = new URL(chain[chain.length - 1]!.location!);
    expect(mixed.searchParams.get('iss')).toBe(idp.issuer);
    mixed.searchParams.set('iss', 'https://evil.example.net');
    const answer = await ua.request(mixed.href, { headers: { Accept: 'application/json' } });
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, code: 'invalid_issuer' });
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(401);
  });

  it('consumes the transaction on a refused callback: the genuine response cannot be used afterwards', async () => {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/corp`, { stopAt: (url) => url.includes('/callback/corp') });
    const genuine = chain[chain.length - 1]!.location!;
    const forged = new URL(genuine);
    forged.searchParams.set('iss', 'https://evil.example.net');
    expect((await ua.request(forged.href)).status).toBe(400);
    const retry = await ua.request(genuine, { headers: { Accept: 'application/json' } });
    expect(JSON.parse(retry.body)).toMatchObject({ status: 400, code: 'invalid_state' });
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(401);
  });

  it('requires iss when discovery says authorization_response_iss_parameter_supported', async () => {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/corp`, { stopAt: (url) => url.includes('/callback/corp') });
    const stripped = new URL(chain[chain.length - 1]!.location!);
    stripped.searchParams.delete('iss');
    const answer = await ua.request(stripped.href, { headers: { Accept: 'application/json' } });
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, code: 'invalid_issuer' });
  });

  it('turns a provider error response into a friendly 4xx page with a link back to the login', async () => {
    const ua = new TestUserAgent();
    const start = await ua.request(`${apps.auth.origin}/login/corp`);
    const state = new URL(start.location!).searchParams.get('state')!;
    const page = await ua.request(`${apps.auth.origin}/callback/corp?error=access_denied&error_description=%3Cscript%3E&state=${state}`);
    expect(page.status).toBe(403);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('href="/login/corp"');
    expect(page.body).not.toContain('<script>');
    const api = await ua.request(`${apps.auth.origin}/callback/corp?error=temporarily_unavailable&state=${state}`, {
      headers: { Accept: 'application/json' },
    });
    expect(api.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(JSON.parse(api.body)).toMatchObject({ status: 400, code: 'oidc_temporarily_unavailable', loginUrl: '/login/corp' });
  });

  describe('the strength of an upstream login', () => {
    beforeAll(() => {
      apps.shop.app.get(
        '/two-factor-area',
        requireSession({ acr: '2fa' }),
        (req: Request, res: Response) => {
          res.json({ acr: req.user!.authentication?.acr });
        },
        errorHandler({ log: false }),
      );
    });
    afterAll(() => idp.loginAs('alice'));

    /** Logs in through the provider; answers the browser, the ID token's claims and the session's authentication. */
    async function upstreamLogin(): Promise<{ ua: TestUserAgent; claims: Record<string, unknown>; authentication: unknown }> {
      const ua = new TestUserAgent();
      await ua.follow(`${apps.auth.origin}/login/corp`, { stopAt: (url) => url.startsWith(apps.shop.origin) });
      const cookie = ua.cookies.find((c) => c.name === '__Secure-sso.sid')!;
      const signed = decodeURIComponent(cookie.value);
      const session = JSON.parse((await apps.store.get(`sess:${signed.slice(2, signed.lastIndexOf('.'))}`))!);
      const claims = JSON.parse(Buffer.from((session.oidc.idToken as string).split('.')[1]!, 'base64url').toString()) as Record<
        string,
        unknown
      >;
      const me = JSON.parse((await ua.request(`${apps.shop.origin}/me`)).body);
      return { ua, claims, authentication: me.user.authentication };
    }

    it('counts a login whose ID token says nothing of how the user authenticated (no acr, no amr) as one factor, which a two-factor route refuses', async () => {
      idp.loginAs('bob');
      const { ua, claims, authentication } = await upstreamLogin();
      expect(claims.acr).toBeUndefined();
      expect(claims.amr).toBeUndefined();
      expect(authentication).toMatchObject({ acr: '1fa', amr: ['ext'] });
      const refused = await ua.request(`${apps.shop.origin}/two-factor-area`, { headers: { Accept: 'application/json' } });
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'insufficient_user_authentication', acr_values: '2fa' });
    });

    it('takes the level from the methods the provider reports: a password and a one-time code are two factors', async () => {
      idp.loginAs('bob', { amr: ['pwd', 'otp'] });
      const { ua, claims, authentication } = await upstreamLogin();
      expect(claims.amr).toEqual(['pwd', 'otp']);
      expect(authentication).toMatchObject({ acr: '2fa', amr: ['pwd', 'otp'] });
      const allowed = await ua.request(`${apps.shop.origin}/two-factor-area`, { headers: { Accept: 'application/json' } });
      expect(JSON.parse(allowed.body)).toEqual({ acr: '2fa' });
    });
  });

  it('accepts ID tokens after the provider rotated its signing key (new kid fetched)', async () => {
    const first = new TestUserAgent();
    await first.follow(`${apps.auth.origin}/login/corp`);
    expect((await first.request(`${apps.shop.origin}/me`)).status).toBe(200);
    const { jwks } = await providerKeys(corp);
    const fetchesBefore = jwks.fetches;
    await idp.rotateSigningKey();
    const second = new TestUserAgent();
    await second.follow(`${apps.auth.origin}/login/corp`);
    expect((await second.request(`${apps.shop.origin}/me`)).status).toBe(200);
    expect(jwks.fetches).toBe(fetchesBefore + 1);
  });
});
