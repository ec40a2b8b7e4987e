import { randomBytes } from 'node:crypto';
import { format } from 'node:util';
import createDebug from 'debug';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent } from '../helpers/http-user-agent';
import { loadJose } from '../helpers/jose-tokens';

const SECRET = 'debug-client-secret-0123456789abcdef';

describe('the oidc debug channel says why, never with a token, code or state', () => {
  let apps: SsoApps;
  let fake: FakeIdp;
  const lines: string[] = [];
  const log = createDebug.log;
  const enabled = createDebug.disable();

  beforeAll(async () => {
    createDebug.log = (...args: unknown[]) => lines.push(format(...args));
    createDebug.enable('express-sso-kit:oidc');
    apps = await startSsoApps('oidc-debug');
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    fake.refreshToken = `rt-${randomBytes(12).toString('hex')}`;
    apps.configure({ name: 'fake', issuer: fake.issuer, clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true });
  });
  afterAll(async () => {
    createDebug.log = log;
    createDebug.enable(enabled);
    await fake.close();
    await apps.close();
  });
  beforeEach(() => {
    lines.length = 0;
    fake.idToken = (ctx) => ctx.sign(ctx.claims);
    fake.tokenMode = 'ok';
  });

  const logged = (): string => lines.join('\n');

  /** Follows the login up to the callback URL, which carries the code and the state. */
  async function callbackUrl(ua: TestUserAgent): Promise<URL> {
    const chain = await ua.follow(`${apps.auth.origin}/login/fake`, { stopAt: (url) => url.includes('/callback/fake') });
    return new URL(chain[chain.length - 1]!.location!);
  }

  it('explains a refused state', async () => {
    const ua = new TestUserAgent();
    const url = await callbackUrl(ua);
    const state = url.searchParams.get('state')!;
    const code = url.searchParams.get('code')!;
    url.searchParams.set('state', `${state}x`);
    expect((await ua.request(url.href)).status).toBe(400);
    expect(logged()).toMatch(/callback of provider "fake" refused \(invalid_state\): no login transaction of this browser has this state/);
    expect(logged()).not.toContain(state);
    expect(logged()).not.toContain(code);
  });

  it('explains a refused ID token', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, nonce: 'another-nonce', roles: ['admin'] });
    const ua = new TestUserAgent();
    const url = await callbackUrl(ua);
    expect((await ua.request(url.href)).status).toBe(400);
    expect(logged()).toMatch(/refused \(invalid_id_token\): nonce does not match/);
    expect(logged()).not.toContain(url.searchParams.get('code')!);
    expect(logged()).not.toContain(url.searchParams.get('state')!);
  });

  it('explains that roles of a provider not trusted for them were ignored', async () => {
    fake.idToken = (ctx) => ctx.sign({ ...ctx.claims, roles: ['admin'] });
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/fake`);
    expect(JSON.parse((await ua.request(`${apps.shop.origin}/me`)).body).user.roles).toEqual([]);
    expect(logged()).toMatch(/provider "fake": roles claim ignored, the provider is not trusted for roles/);
  });

  it('explains a refused refresh without the refresh token', async () => {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/fake`);
    fake.tokenMode = 'invalid_grant';
    expect(
      (
        await ua.request(`${apps.shop.origin}/refresh`, {
          method: 'POST',
          headers: { Accept: 'application/json', Origin: apps.shop.origin },
        })
      ).status,
    ).toBe(401);
    expect(logged()).toMatch(/refresh through provider "fake" refused: the token endpoint answered invalid_grant/);
    expect(logged()).not.toContain(fake.refreshToken!);
  });

  it('explains a refused logout token without the token', async () => {
    const jose = await loadJose();
    const key = fake.keys[0]!;
    const now = Math.floor(Date.now() / 1000);
    const token = await new jose.SignJWT({ iss: fake.issuer, aud: 'someone-else', iat: now, exp: now + 60, jti: 'j1', sub: 'u' })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid! })
      .sign(key.privateKey);
    const answer = await new TestUserAgent().request(apps.backchannelUri('fake'), { form: { logout_token: token } });
    expect(answer.status).toBe(400);
    expect(logged()).toMatch(/back-channel logout of provider "fake" refused: /);
    expect(logged()).not.toContain(token);
    expect(logged()).not.toContain(token.split('.')[2]!);
  });
});
