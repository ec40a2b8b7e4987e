import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent } from '../helpers/http-user-agent';
import { freePort } from '../helpers/redis';
import { OidcGrantError, refreshTokenGrant, type OidcProvider } from '../../lib/oidc';

const SECRET = 'fake-client-secret-0123456789abcdefghij';

describe('the token endpoint and userinfo calls of the callback', () => {
  let apps: SsoApps;
  let fake: FakeIdp;
  let deadPort: number;
  let provider: OidcProvider;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-token-client');
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    deadPort = await freePort();
    const base = { clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true };
    provider = apps.configure({ ...base, name: 'fake', issuer: fake.issuer, timeoutSeconds: 0.4 });
    apps.configure({ ...base, name: 'userinfo', issuer: fake.issuer, fetchUserinfo: true, rolesClaim: 'roles' });
    // A mapping written for the old model, which chose the user id itself.
    apps.configure({
      ...base,
      name: 'chooses-id',
      issuer: fake.issuer,
      claimsToUser: () => ({ id: 'admin', name: 'Admin', roles: ['admin'] }) as never,
    });
    apps.configure({
      ...base,
      name: 'down',
      issuer: fake.issuer,
      endpoints: { authorization: `${fake.issuer}/authorize`, token: `http://127.0.0.1:${deadPort}/token`, jwks: `${fake.issuer}/jwks` },
    });
  });

  afterAll(async () => {
    await fake.close();
    await apps.close();
  });

  afterEach(() => {
    fake.tokenMode = 'ok';
    fake.userinfo = undefined;
  });

  async function login(name: string) {
    const ua = new TestUserAgent();
    const started = Date.now();
    const chain = await ua.follow(`${apps.auth.origin}/login/${name}`, {
      headers: { Accept: 'application/json' },
      stopAt: (url) => !url.includes(`/callback/${name}`) && !url.includes('/authorize') && !url.includes(`/login/${name}`),
    });
    const last = chain[chain.length - 1]!;
    const elapsed = Date.now() - started;
    const me = await ua.request(`${apps.shop.origin}/me`);
    return {
      last,
      body: last.status >= 400 ? JSON.parse(last.body) : undefined,
      loggedIn: me.status === 200,
      me: JSON.parse(me.body),
      elapsed,
    };
  }

  it('answers 503 with Retry-After within the timeout when the token endpoint never answers', async () => {
    fake.tokenMode = 'slow';
    const { last, body, loggedIn, elapsed } = await login('fake');
    expect(last.status).toBe(503);
    expect(last.headers['retry-after']).toBeDefined();
    expect(body.code).toBe('idp_unavailable');
    expect(elapsed).toBeLessThan(2000);
    expect(loggedIn).toBe(false);
  });

  it('answers 503 when the token endpoint refuses connections', async () => {
    const { last, body, loggedIn } = await login('down');
    expect(last.status).toBe(503);
    expect(body.code).toBe('idp_unavailable');
    expect(loggedIn).toBe(false);
  });

  it('answers 502 when the token endpoint fails with a 5xx', async () => {
    fake.tokenMode = 'status500';
    const { last, body, loggedIn } = await login('fake');
    expect(last.status).toBe(502);
    expect(body.code).toBe('idp_bad_response');
    expect(loggedIn).toBe(false);
  });

  it('answers 502 when the token endpoint answers something other than JSON', async () => {
    fake.tokenMode = 'html';
    const { last, loggedIn } = await login('fake');
    expect(last.status).toBe(502);
    expect(loggedIn).toBe(false);
  });

  it('renders the 502 as an HTML page for a browser navigation', async () => {
    fake.tokenMode = 'status500';
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/fake`);
    const last = chain[chain.length - 1]!;
    expect(last.status).toBe(502);
    expect(last.headers['content-type']).toMatch(/text\/html/);
  });

  it("reports a refused grant with the provider's status as providerStatus, never as status (which is ours)", async () => {
    fake.tokenMode = 'invalid_grant';
    const refused = await refreshTokenGrant(provider, 'rt-unknown').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OidcGrantError);
    expect(refused).toMatchObject({ code: 'oidc_grant_refused', error: 'invalid_grant', providerStatus: 400 });
    expect(refused).not.toHaveProperty('status');
    expect(refused).not.toHaveProperty('statusCode');
  });

  it('answers 400 invalid_grant when the provider refuses the code', async () => {
    fake.tokenMode = 'invalid_grant';
    const { last, body, loggedIn } = await login('fake');
    expect(last.status).toBe(400);
    expect(body.code).toBe('invalid_grant');
    expect(loggedIn).toBe(false);
  });

  it('uses userinfo claims when fetchUserinfo is on', async () => {
    fake.userinfo = { sub: fake.sub, name: 'From Userinfo', roles: ['auditor'] };
    const { loggedIn, me } = await login('userinfo');
    expect(loggedIn).toBe(true);
    expect(me.user).toMatchObject({
      id: `oidc:${fake.issuer}|${fake.sub}`,
      source: `oidc:${fake.issuer}`,
      subject: fake.sub,
      name: 'From Userinfo',
      roles: ['auditor'],
    });
  });

  it('never lets a claims mapping choose the user id: 500, no session', async () => {
    const { last, loggedIn } = await login('chooses-id');
    expect(last.status).toBe(500);
    expect(loggedIn).toBe(false);
  });

  it('refuses a userinfo answer about another subject: 502, no session', async () => {
    fake.userinfo = { sub: 'someone-else', name: 'Mallory' };
    const { last, body, loggedIn } = await login('userinfo');
    expect(last.status).toBe(502);
    expect(body.detail).toMatch(/userinfo sub/);
    expect(loggedIn).toBe(false);
  });
});
