import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent, type UserAgentResponse } from '../helpers/http-user-agent';

const SECRET = 'fake-client-secret-0123456789abcdefghij';

/**
 * ID-token validation (OIDC Core §3.1.3.7) through the whole login: a fake provider mints the ID token each case
 * needs with jose, and every refusal must leave the browser without a logged-in session.
 */
describe('validateIdToken (through oidcCallback with a provider whose tokens the test mints)', () => {
  let apps: SsoApps;
  let fake: FakeIdp;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-idtoken');
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    // Trusted for its acr and amr (a provider not trusted for roles is not, by default): the session records them.
    apps.configure({
      name: 'fake',
      issuer: fake.issuer,
      clientId: 'shop',
      clientSecret: SECRET,
      allowInsecureLocalDevelopment: true,
      trustAuthenticationClaims: true,
    });
    apps.configure({ name: 'fresh', issuer: fake.issuer, clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true });
    apps.configure({
      name: 'unknown-kid',
      issuer: fake.issuer,
      clientId: 'shop',
      clientSecret: SECRET,
      allowInsecureLocalDevelopment: true,
    });
  });

  afterAll(async () => {
    await fake.close();
    await apps.close();
  });

  afterEach(() => {
    fake.idToken = (ctx) => ctx.sign(ctx.claims);
    fake.publishedKeys = undefined;
    fake.keys.splice(1);
  });

  async function login(query = '', name = 'fake'): Promise<{ ua: TestUserAgent; last: UserAgentResponse; loggedIn: boolean }> {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/${name}${query}`, {
      headers: { Accept: 'application/json' },
      stopAt: (url) => !url.includes(`/callback/${name}`) && !url.includes('/authorize') && !url.includes(`/login/${name}`),
    });
    const last = chain[chain.length - 1]!;
    const me = await ua.request(`${apps.shop.origin}/me`);
    return { ua, last, loggedIn: me.status === 200 };
  }

  async function expectRefused(expectedReason: RegExp): Promise<void> {
    const { last, loggedIn } = await login();
    expect(last.status).toBe(400);
    const body = JSON.parse(last.body);
    expect(body.code).toBe('invalid_id_token');
    expect(body.detail).toMatch(expectedReason);
    expect(loggedIn).toBe(false);
  }

  it('accepts a well-formed token signed with the published key (control case)', async () => {
    const { last, loggedIn } = await login();
    expect(last.status).toBe(302);
    expect(loggedIn).toBe(true);
  });

  it('accepts a large ID token (10 KB of group claims)', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, groups: Array.from({ length: 400 }, (_, i) => `group-${i}-abcdefghijklm`) });
    expect((await login()).loggedIn).toBe(true);
  });

  it('rejects an ID token whose signature does not verify', async () => {
    const stranger = fake.newKey('fake-1');
    fake.idToken = (ctx) => ctx.sign(ctx.claims, { key: stranger });
    await expectRefused(/signature/);
  });

  it('rejects an ID token from another issuer', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, iss: 'https://evil.example.net' });
    await expectRefused(/issuer/);
  });

  it('rejects an ID token for another audience', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, aud: 'another-client' });
    await expectRefused(/audience/);
  });

  it('rejects an ID token without sub', async () => {
    fake.idToken = (ctx) => {
      const { sub: _sub, ...claims } = ctx.claims;
      return ctx.sign(claims);
    };
    await expectRefused(/sub/);
  });

  it('rejects an ID token without iat', async () => {
    fake.idToken = (ctx) => {
      const { iat: _iat, ...claims } = ctx.claims;
      return ctx.sign(claims);
    };
    await expectRefused(/iat/);
  });

  it('rejects an expired ID token (beyond the clock tolerance)', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, iat: ctx.now - 3600, exp: ctx.now - 31 });
    await expectRefused(/expired/);
  });

  it('rejects an ID token whose nonce differs', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, nonce: `${ctx.nonce}x` });
    await expectRefused(/nonce/);
  });

  it('rejects an unsigned ID token (alg none), with or without a signature part', async () => {
    fake.idToken = (ctx) => ctx.sign(ctx.claims, { alg: 'none' });
    await expectRefused(/well-formed|algorithm/);
    fake.idToken = async (ctx) => {
      const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      return `${part({ alg: 'none', typ: 'JWT' })}.${part(ctx.claims)}.${part({ fake: 'signature' })}`;
    };
    await expectRefused(/algorithm/);
  });

  it('rejects an ID token signed HS256 with the client secret when RS256 is expected', async () => {
    fake.idToken = (ctx) => ctx.sign(ctx.claims, { alg: 'HS256' });
    await expectRefused(/algorithm/);
  });

  it('rejects an ID token without kid when the provider publishes several keys', async () => {
    const second = fake.newKey('fake-2');
    fake.keys.push(second);
    // A login signed by the new key makes the relying party fetch the JWKS with both keys.
    fake.idToken = (ctx) => ctx.sign(ctx.claims, { key: second });
    expect((await login()).loggedIn).toBe(true);
    fake.idToken = (ctx) => ctx.sign(ctx.claims, { kid: null });
    await expectRefused(/no key/);
  });

  it('accepts an ID token without kid when the provider publishes a single key of the alg', async () => {
    fake.idToken = (ctx) => ctx.sign(ctx.claims, { kid: null });
    // A provider configuration of its own, so its key cache holds only what the provider publishes now.
    const { last, loggedIn } = await login('', 'fresh');
    expect(last.status).toBe(302);
    expect(loggedIn).toBe(true);
  });

  it('rejects a token signed by a kid the provider does not publish, after exactly one JWKS refetch', async () => {
    expect((await login('', 'unknown-kid')).loggedIn).toBe(true);
    const before = fake.hits.jwks;
    const unpublished = fake.newKey('never-published');
    fake.idToken = (ctx) => ctx.sign(ctx.claims, { key: unpublished });
    let result = await login('', 'unknown-kid');
    expect(JSON.parse(result.last.body).detail).toMatch(/no key/);
    expect(result.loggedIn).toBe(false);
    expect(fake.hits.jwks).toBe(before + 1);
    // Within the cooldown a second unknown kid is refused without hammering the JWKS endpoint.
    result = await login('', 'unknown-kid');
    expect(result.last.status).toBe(400);
    expect(fake.hits.jwks).toBe(before + 1);
  });

  it('requires azp equal to client_id when the token has several audiences', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, aud: ['shop', 'other'] });
    await expectRefused(/azp/);
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, aud: ['shop', 'other'], azp: 'other' });
    await expectRefused(/azp/);
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, aud: ['shop', 'other'], azp: 'shop' });
    expect((await login()).loggedIn).toBe(true);
  });

  it('requires a fresh auth_time when max_age was sent', async () => {
    fake.idToken = (ctx) => ctx.sign(ctx.claims);
    let result = await login('?max_age=60');
    expect(JSON.parse(result.last.body).detail).toMatch(/auth_time/);
    expect(result.loggedIn).toBe(false);
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, auth_time: ctx.now - 600 });
    result = await login('?max_age=60');
    expect(JSON.parse(result.last.body).detail).toMatch(/max_age/);
    expect(result.loggedIn).toBe(false);
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, auth_time: ctx.now - 10 });
    result = await login('?max_age=60');
    expect(result.loggedIn).toBe(true);
  });

  it('requires the acr to be one of the acr_values sent, and refuses a token without acr', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, acr: '1fa' });
    let result = await login(`?acr_values=${encodeURIComponent('2fa phr')}`);
    expect(JSON.parse(result.last.body).detail).toMatch(/acr/);
    expect(result.loggedIn).toBe(false);
    fake.idToken = (ctx) => ctx.sign(ctx.claims);
    result = await login('?acr_values=2fa');
    expect(result.loggedIn).toBe(false);
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, acr: 'phr' });
    result = await login(`?acr_values=${encodeURIComponent('2fa phr')}`);
    expect(result.loggedIn).toBe(true);
    result = await login('?acr_values=bad%00value');
    expect(result.last.status).toBe(400);
  });

  it('records the provider’s acr, amr and auth_time in the session’s authentication', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, acr: '2fa', amr: ['pwd', 'otp', 7], auth_time: ctx.now - 30 });
    const { ua, loggedIn } = await login();
    expect(loggedIn).toBe(true);
    const me = JSON.parse((await ua.request(`${apps.shop.origin}/me`)).body) as { user: { authentication: Record<string, unknown> } };
    expect(me.user.authentication).toMatchObject({ acr: '2fa', amr: ['pwd', 'otp'] });
    const authTime = me.user.authentication.authTime as number;
    expect(Math.abs(authTime - (Math.floor(Date.now() / 1000) - 30))).toBeLessThan(5);
  });
});
