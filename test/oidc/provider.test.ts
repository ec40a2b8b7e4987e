import { oidcProvider, type OidcProviderOptions } from '../../lib/oidc';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent } from '../helpers/http-user-agent';

const SECRET = 'provider-client-secret-0123456789abcdef';
const valid: OidcProviderOptions = {
  issuer: 'https://idp.example.test',
  clientId: 'shop',
  clientSecret: SECRET,
  redirectUri: 'https://auth.example.test/callback/corp',
  scopes: ['openid', 'profile', 'email'],
};

describe('oidcProvider options', () => {
  it('accepts the documented configuration', () => {
    const corp = oidcProvider({ ...valid, name: 'corp' });
    expect(corp).toMatchObject({
      name: 'corp',
      issuer: valid.issuer,
      scope: 'openid profile email',
      idTokenSigningAlg: 'RS256',
      timeoutSeconds: 5,
    });
  });

  it.each<[string, Partial<OidcProviderOptions> & Record<string, unknown>, RegExp]>([
    ['scopes without openid', { scopes: ['profile'] }, /scopes must include "openid"/],
    ['an http issuer', { issuer: 'http://idp.example.test' }, /issuer must use https/],
    ['a relative redirectUri', { redirectUri: '/callback' }, /redirectUri must be an absolute URL/],
    ['a missing client secret', { clientSecret: undefined as unknown as string }, /clientSecret is required \(a non-empty string/],
    ['alg none', { idTokenSigningAlg: 'none' }, /idTokenSigningAlg must be one of/],
    ['HS256', { idTokenSigningAlg: 'HS256' }, /idTokenSigningAlg must be one of/],
    ['an unknown auth method', { tokenEndpointAuthMethod: 'private_key_jwt' as never }, /tokenEndpointAuthMethod/],
    ['a negative timeout', { timeoutSeconds: -1 }, /timeoutSeconds must be above 0/],
    ['a huge clock tolerance', { clockToleranceSeconds: 3600 }, /clockToleranceSeconds/],
    ['an upper-case name', { name: 'Corp' }, /name must be lowercase/],
    [
      'an issuer with "|", which could not name its identity source',
      { issuer: 'https://idp.example.test/a|b' },
      /issuer must be .* without spaces or "\|"/,
    ],
    ['an issuer with a space', { issuer: 'https://idp.example.test/a b' }, /issuer must be .* without spaces or "\|"/],
    ['an unknown option', { issuerUrl: 'x' }, /unknown option "issuerUrl"/],
    ['a non-function claims mapping', { claimsToUser: 'sub' as never }, /claimsToUser must be a function/],
    [
      'fetchUserinfo with explicit endpoints lacking userinfo',
      { fetchUserinfo: true, endpoints: { authorization: 'https://i/a', token: 'https://i/t', jwks: 'https://i/j' } },
      /fetchUserinfo needs endpoints.userinfo/,
    ],
  ])('throws a TypeError naming the fix for %s', (_label, change, message) => {
    expect(() => oidcProvider({ ...valid, ...change } as OidcProviderOptions)).toThrow(TypeError);
    expect(() => oidcProvider({ ...valid, ...change } as OidcProviderOptions)).toThrow(message);
  });

  it('accepts http issuers only with allowInsecureLocalDevelopment', () => {
    expect(() => oidcProvider({ ...valid, issuer: 'http://127.0.0.1:1', allowInsecureLocalDevelopment: true })).not.toThrow();
  });

  it('accepts http token, jwks and userinfo endpoints on a loopback host only (a back channel), never for the browser', () => {
    const endpoints = {
      authorization: 'https://idp.example.test/auth',
      token: 'http://127.0.0.1:9000/token',
      jwks: 'http://127.0.0.1:9000/jwks',
      userinfo: 'http://[::1]:9000/me',
    };
    expect(() => oidcProvider({ ...valid, endpoints })).not.toThrow();
    expect(() => oidcProvider({ ...valid, endpoints: { ...endpoints, token: 'http://10.0.0.5/token' } })).toThrow(
      /endpoints.token must use https/,
    );
    expect(() => oidcProvider({ ...valid, endpoints: { ...endpoints, authorization: 'http://127.0.0.1:9000/auth' } })).toThrow(
      /endpoints.authorization must use https/,
    );
    expect(() => oidcProvider({ ...valid, endpoints: { ...endpoints, token: 'https://user:pw@idp.example.test/token' } })).toThrow(
      /credentials/,
    );
  });

  it("does not change the caller's options object", () => {
    const options = { ...valid, scopes: ['openid', 'openid', 'email'] };
    const frozen = JSON.stringify(options);
    oidcProvider(options);
    expect(JSON.stringify(options)).toBe(frozen);
  });

  it('never shows the client secret when the provider object is logged', async () => {
    const { inspect } = await import('node:util');
    const corp = oidcProvider({ ...valid, tokenEndpointAuthMethod: 'client_secret_post' });
    expect(inspect(corp, { depth: 5 })).not.toContain(SECRET);
    expect(JSON.stringify(corp)).not.toContain(SECRET);
  });
});

describe('oidcProvider roles: only from a provider trusted for them', () => {
  const claims = { sub: 'alice', name: 'Alice', roles: ['admin'], realm_access: { roles: ['auditor'] } };

  it('takes no role from the claims by default', () => {
    expect(oidcProvider(valid).claimsToUser(claims).roles).toEqual([]);
  });

  it('takes roles from the configured claim or path once trusted', () => {
    expect(oidcProvider({ ...valid, rolesClaim: 'roles' }).claimsToUser(claims).roles).toEqual(['admin']);
    expect(oidcProvider({ ...valid, rolesClaim: ['realm_access', 'roles'] }).claimsToUser(claims).roles).toEqual(['auditor']);
  });

  it("leaves roles to the app's own claimsToUser", () => {
    const corp = oidcProvider({ ...valid, claimsToUser: (c) => ({ name: String(c.name), roles: c.sub === 'alice' ? ['editor'] : [] }) });
    expect(corp.claimsToUser(claims).roles).toEqual(['editor']);
  });
});

describe('oidcProvider discovery', () => {
  let fake: FakeIdp;

  beforeAll(async () => {
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
  });
  afterAll(() => fake.close());
  afterEach(() => {
    fake.discovery = {};
  });

  it('fetches the discovery document once and shares it between concurrent callers', async () => {
    const corp = oidcProvider({ ...valid, issuer: fake.issuer, allowInsecureLocalDevelopment: true });
    const before = fake.hits.discovery;
    const [a, b] = await Promise.all([corp.metadata(), corp.metadata()]);
    await corp.metadata();
    expect(a).toBe(b);
    expect(a).toMatchObject({ issuer: fake.issuer, tokenEndpoint: `${fake.issuer}/token`, issParameterSupported: true });
    expect(fake.hits.discovery).toBe(before + 1);
  });

  it('refuses a discovery document whose issuer differs from the configured one (502)', async () => {
    fake.discovery = { issuer: `${fake.issuer}/` };
    const corp = oidcProvider({ ...valid, issuer: fake.issuer, allowInsecureLocalDevelopment: true });
    await expect(corp.metadata()).rejects.toMatchObject({ status: 502, code: 'idp_bad_response' });
  });

  it('accepts discovered http endpoints when insecure http is allowed for testing', async () => {
    fake.discovery = { token_endpoint: 'http://idp.example.test/token' };
    const corp = oidcProvider({ ...valid, issuer: fake.issuer, allowInsecureLocalDevelopment: true });
    await expect(corp.metadata()).resolves.toBeDefined();
  });

  it('refuses a discovery answer larger than 1 MiB without reading it all (502)', async () => {
    fake.discovery = { padding: 'x'.repeat(1024 * 1024 + 10) };
    const corp = oidcProvider({ ...valid, issuer: fake.issuer, allowInsecureLocalDevelopment: true });
    await expect(corp.metadata()).rejects.toMatchObject({ status: 502, detail: expect.stringMatching(/more than/) });
  });

  it('does not cache a failed discovery', async () => {
    fake.discovery = { issuer: 'https://other.example.test' };
    const corp = oidcProvider({ ...valid, issuer: fake.issuer, allowInsecureLocalDevelopment: true });
    await expect(corp.metadata()).rejects.toMatchObject({ status: 502 });
    fake.discovery = {};
    await expect(corp.metadata()).resolves.toMatchObject({ issuer: fake.issuer });
  });

  it('shows the discovery issuer mismatch as a 502 page at the login route', async () => {
    const apps = await startSsoApps('oidc-provider-mismatch');
    try {
      fake.discovery = { issuer: 'https://evil.example.net' };
      apps.configure({
        name: 'mismatch',
        issuer: fake.issuer,
        clientId: 'shop',
        clientSecret: SECRET,
        allowInsecureLocalDevelopment: true,
      });
      const ua = new TestUserAgent();
      const answer = await ua.request(`${apps.auth.origin}/login/mismatch`);
      expect(answer.status).toBe(502);
      expect(answer.headers['content-type']).toMatch(/text\/html/);
    } finally {
      await apps.close();
    }
  });
});

describe('client authentication at a real provider', () => {
  let apps: SsoApps;
  let idp: TestIdp;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-provider-auth');
    idp = await startTestIdp({
      clients: [
        { clientId: 'basic-client', clientSecret: SECRET, redirectUris: [apps.redirectUri('basic')] },
        {
          clientId: 'post-client',
          clientSecret: SECRET,
          redirectUris: [apps.redirectUri('post')],
          tokenEndpointAuthMethod: 'client_secret_post',
        },
      ],
    });
    apps.configure({
      name: 'basic',
      issuer: idp.issuer,
      clientId: 'basic-client',
      clientSecret: SECRET,
      allowInsecureLocalDevelopment: true,
    });
    apps.configure({
      name: 'post',
      issuer: idp.issuer,
      clientId: 'post-client',
      clientSecret: SECRET,
      tokenEndpointAuthMethod: 'client_secret_post',
      allowInsecureLocalDevelopment: true,
    });
  });
  afterAll(async () => {
    await idp.close();
    await apps.close();
  });

  it.each(['basic', 'post'])('logs in with client_secret_%s', async (name) => {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/${name}`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
  });
});
