import { Router } from 'express';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent } from '../helpers/http-user-agent';
import { loadJose } from '../helpers/jose-tokens';
import { oidc, type OidcOptions, type OidcRouter } from '../../lib/oidc';
import { MemoryStore } from '../../lib/store';
import { OptionsError } from '../../lib/util/options';

const SECRET = 'router-client-secret-0123456789abcdef';

describe('oidc(): one router against a real provider, end to end', () => {
  let apps: SsoApps;
  let idp: TestIdp;
  let corp: OidcRouter;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-router');
    idp = await startTestIdp({
      clients: [
        {
          clientId: 'shop',
          clientSecret: SECRET,
          redirectUris: [`${apps.auth.origin}/callback/corp`, `${apps.auth.origin}/sso/callback/corp`],
          postLogoutRedirectUris: [`${apps.shop.origin}/bye`],
          backchannelLogoutUri: apps.backchannelUri('corp'),
        },
      ],
    });
    const options = {
      name: 'corp',
      issuer: idp.issuer,
      clientId: 'shop',
      clientSecret: SECRET,
      rolesClaim: 'roles',
      postLogoutRedirectUri: `${apps.shop.origin}/bye`,
      store: apps.store,
      allowInsecureLocalDevelopment: true,
    };
    // As the docs show: ssoSession (in the test apps), then one statement per provider.
    corp = oidc({ ...options, baseUrl: apps.auth.origin });
    const auth = Router();
    auth.use(corp);
    auth.use('/sso', oidc({ ...options, baseUrl: `${apps.auth.origin}/sso` }));
    auth.get('/token', async (req, res, next) => {
      try {
        res.json({ accessToken: (await req.oidc?.accessToken()) ?? null });
      } catch (error) {
        next(error);
      }
    });
    const shop = Router();
    shop.get('/me', (req, res) => (req.user ? res.json({ user: req.user }) : res.status(401).json({ user: null })));
    auth.get('/me', (req, res) => (req.user ? res.json({ user: req.user }) : res.status(401).json({ user: null })));
    apps.auth.mount(auth);
    apps.shop.mount(shop);
  });
  afterAll(async () => {
    await idp.close();
    await apps.close();
  });

  const status = async (ua: TestUserAgent, url: string): Promise<number> => (await ua.request(url)).status;

  async function loggedIn(login = `${apps.auth.origin}/login/corp`): Promise<TestUserAgent> {
    const ua = new TestUserAgent();
    idp.loginAs('alice');
    const cart = `${apps.shop.origin}/cart`;
    const chain = await ua.follow(`${login}?return_to=${encodeURIComponent(cart)}`, { stopAt: (url) => url.startsWith(apps.shop.origin) });
    expect(chain[chain.length - 1]!.location).toBe(cart);
    return ua;
  }

  it('mounts login, callback, logout and back-channel logout under the provider name', () => {
    expect(corp.routes).toEqual({
      login: '/login/corp',
      callback: '/callback/corp',
      logout: '/logout/corp',
      backchannelLogout: '/backchannel-logout/corp',
    });
    expect(corp.provider.redirectUri).toBe(`${apps.auth.origin}/callback/corp`);
  });

  it('logs in (login → provider → callback) into the shared session seen by the other app', async () => {
    const ua = await loggedIn();
    const me = JSON.parse((await ua.request(`${apps.shop.origin}/me`)).body).user;
    expect(me).toMatchObject({
      id: `oidc:${idp.issuer}|alice`,
      source: `oidc:${idp.issuer}`,
      subject: 'alice',
      roles: ['admin', 'editor'],
      method: 'oidc',
    });
  });

  it('installs req.oidc for the routes after it', async () => {
    const ua = await loggedIn();
    const { accessToken } = JSON.parse((await ua.request(`${apps.auth.origin}/token`)).body);
    expect(typeof accessToken).toBe('string');
  });

  it('logs out (POST) locally and at the provider, with the ID token hint', async () => {
    const ua = await loggedIn();
    const answer = await ua.request(`${apps.auth.origin}/logout/corp`, { method: 'POST', headers: { Origin: apps.auth.origin } });
    expect(answer.status).toBe(303);
    const target = new URL(answer.location!);
    expect(`${target.origin}${target.pathname}`).toBe(`${idp.issuer}/session/end`);
    const jose = await loadJose();
    expect(jose.decodeJwt(target.searchParams.get('id_token_hint')!)).toMatchObject({ iss: idp.issuer, sub: 'alice' });
    expect(target.searchParams.get('post_logout_redirect_uri')).toBe(`${apps.shop.origin}/bye`);
    expect(await status(ua, `${apps.shop.origin}/me`)).toBe(401);
    expect(await status(ua, `${apps.auth.origin}/me`)).toBe(401);
  });

  it('ends the session when the provider sends a back-channel logout, and only that one', async () => {
    const ua = await loggedIn();
    const other = await loggedIn();
    // The user logs out at the provider itself: only the back channel tells the apps.
    const confirm = await ua.request(`${idp.issuer}/session/end`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
    const done = await ua.request(`${idp.issuer}/session/end/confirm`, { form: { xsrf: xsrf!, logout: 'yes' } });
    expect(done.status).toBeLessThan(400);
    expect(await status(ua, `${apps.shop.origin}/me`)).toBe(401);
    expect(await status(ua, `${apps.auth.origin}/me`)).toBe(401);
    expect(await status(other, `${apps.shop.origin}/me`)).toBe(200);
  });

  it('works under a mount path given in baseUrl, and links its errors to the login under that path', async () => {
    const ua = await loggedIn(`${apps.auth.origin}/sso/login/corp`);
    expect(await status(ua, `${apps.shop.origin}/me`)).toBe(200);
    const replay = await new TestUserAgent().request(`${apps.auth.origin}/sso/callback/corp?code=x&state=y`, {
      headers: { Accept: 'application/json' },
    });
    expect(JSON.parse(replay.body)).toMatchObject({ status: 400, code: 'invalid_state', loginUrl: '/sso/login/corp' });
  });

  it('answers only POST on the logout route: a GET (a link, an image) logs nobody out', async () => {
    const ua = await loggedIn();
    expect(await status(ua, `${apps.auth.origin}/logout/corp`)).toBe(404);
    expect(await status(ua, `${apps.shop.origin}/me`)).toBe(200);
  });
});

describe('oidc() placement of its routes', () => {
  const store = new MemoryStore();
  const router: OidcOptions = {
    name: 'corp',
    issuer: 'https://idp.example.test',
    clientId: 'shop',
    clientSecret: SECRET,
    baseUrl: 'https://auth.example.test',
    store,
  };
  afterAll(() => store.close());

  function thrown(run: () => unknown): OptionsError {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(OptionsError);
      return error as OptionsError;
    }
    throw new Error('expected an OptionsError');
  }

  it('derives the redirect URI from baseUrl and mounts the default routes', () => {
    const mounted = oidc(router);
    expect(mounted.provider.redirectUri).toBe('https://auth.example.test/callback/corp');
    expect(mounted.routes).toEqual({
      login: '/login/corp',
      callback: '/callback/corp',
      logout: '/logout/corp',
      backchannelLogout: '/backchannel-logout/corp',
    });
    expect(mounted.name).toBe('oidcRouter');
  });

  it('names its routes after the default provider name "oidc"', () => {
    const { name: _name, ...unnamed } = router;
    expect(oidc(unnamed).routes.login).toBe('/login/oidc');
  });

  it('keeps the mount path of baseUrl in the redirect URI', () => {
    expect(oidc({ ...router, baseUrl: 'https://auth.example.test/sso/' }).provider.redirectUri).toBe(
      'https://auth.example.test/sso/callback/corp',
    );
  });

  it('takes the callback route from redirectUri', () => {
    const mounted = oidc({ ...router, baseUrl: undefined, redirectUri: 'https://auth.example.test/oauth/return' });
    expect(mounted.routes.callback).toBe('/oauth/return');
    expect(mounted.provider.redirectUri).toBe('https://auth.example.test/oauth/return');
  });

  it('refuses a callback route the redirect URI does not end with', () => {
    expect(
      thrown(() =>
        oidc({ ...router, baseUrl: undefined, redirectUri: 'https://auth.example.test/oauth/return', routes: { callback: '/cb' } }),
      ).message,
    ).toBe('oidc: the path of redirectUri ("/oauth/return") must end with routes.callback ("/cb")');
  });

  it('leaves out a route set to false', () => {
    expect(oidc({ ...router, routes: { backchannelLogout: false, logout: false } }).routes).toEqual({
      login: '/login/corp',
      callback: '/callback/corp',
    });
  });

  it.each<[string, Partial<OidcOptions>, RegExp]>([
    ['neither baseUrl nor redirectUri', { baseUrl: undefined }, /^oidc: give one of baseUrl, redirectUri$/],
    [
      'both baseUrl and redirectUri',
      { redirectUri: 'https://auth.example.test/callback/corp' },
      /baseUrl and redirectUri cannot be used together/,
    ],
    ['no store', { store: undefined as never }, /^oidc: store is required/],
    ['a route that is not a path', { routes: { login: 'login' } }, /routes: login must be a path like/],
    ['two routes on one path', { routes: { login: '/x', logout: '/x' } }, /routes must differ from each other/],
    ['an http baseUrl', { baseUrl: 'http://auth.example.test' }, /baseUrl must use https:/],
    ['a baseUrl with a query', { baseUrl: 'https://auth.example.test/?a=1' }, /baseUrl must not carry a query/],
  ])('refuses %s', (_label, change, message) => {
    expect(thrown(() => oidc({ ...router, ...change })).message).toMatch(message);
  });

  it("does not change the caller's options", () => {
    const { store: _store, ...plain } = router;
    const options = { ...plain, routes: { login: '/in' }, login: { prompt: 'login' as const }, scopes: ['openid', 'openid'] };
    const before = structuredClone(options);
    oidc({ ...options, store });
    expect(options).toEqual(before);
  });
});
