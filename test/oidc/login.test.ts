import express from 'express';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent } from '../helpers/http-user-agent';
import { freePort } from '../helpers/redis';
import { oidcLogin, oidcProvider } from '../../lib/oidc';

const SECRET = 'login-client-secret-0123456789abcdefgh';

describe('oidcLogin options', () => {
  const corp = oidcProvider({
    issuer: 'https://idp.example.test',
    clientId: 'c',
    clientSecret: SECRET,
    redirectUri: 'https://auth.example.test/cb',
  });

  it('detects app.get(path, oidcLogin) written for app.get(path, oidcLogin(provider))', () => {
    expect(() => oidcLogin({ method: 'GET', headers: {} } as never)).toThrow(/it is a factory/);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['an unknown prompt', { prompt: 'always' }, /prompt must be one of/],
    ['a fractional maxAgeSeconds', { maxAgeSeconds: 1.5 }, /maxAgeSeconds must be a whole number of seconds/],
    ['a login hint with spaces', { loginHint: 'a b' }, /loginHint/],
    ['an unknown query parameter', { queryParameters: ['claims'] }, /queryParameters/],
    ['acr values with spaces', { acrValues: ['two factors'] }, /acrValues/],
  ])('throws a TypeError for %s', (_label, options, message) => {
    expect(() => oidcLogin(corp, options as never)).toThrow(message);
  });

  it('answers 500 naming ssoSession when no session is mounted', async () => {
    const app = express();
    app.get('/login', oidcLogin(corp));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as { port: number };
    try {
      const errors: unknown[] = [];
      app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        errors.push(error);
        res.status(500).end();
      });
      const answer = await fetch(`http://127.0.0.1:${port}/login`, { redirect: 'manual' });
      expect(answer.status).toBe(500);
      expect(String(errors[0])).toMatch(/mount ssoSession\(\) before oidcLogin/);
    } finally {
      server.close();
    }
  });
});

describe('oidcLogin redirect', () => {
  let apps: SsoApps;
  let fake: FakeIdp;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-login');
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    apps.configure({
      name: 'fake',
      issuer: fake.issuer,
      clientId: 'shop',
      clientSecret: SECRET,
      allowInsecureLocalDevelopment: true,
      scopes: ['openid', 'email'],
    });
  });
  afterAll(async () => {
    await fake.close();
    await apps.close();
  });

  it('redirects (302) to the authorization endpoint with code flow, state, nonce and PKCE S256', async () => {
    const ua = new TestUserAgent();
    const answer = await ua.request(`${apps.auth.origin}/login/fake`);
    expect(answer.status).toBe(302);
    expect(answer.headers['cache-control']).toBe('no-store');
    const url = new URL(answer.location!);
    expect(`${url.origin}${url.pathname}`).toBe(`${fake.issuer}/authorize`);
    const params = Object.fromEntries(url.searchParams);
    expect(params).toMatchObject({
      response_type: 'code',
      client_id: 'shop',
      redirect_uri: apps.redirectUri('fake'),
      scope: 'openid email',
      code_challenge_method: 'S256',
    });
    // 32 random bytes each: well above the 128 bits required.
    expect(params.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.nonce).not.toBe(params.state);
    expect(params).not.toHaveProperty('prompt');
  });

  it('uses fresh state and nonce for every login', async () => {
    const ua = new TestUserAgent();
    const first = new URL((await ua.request(`${apps.auth.origin}/login/fake`)).location!).searchParams;
    const second = new URL((await ua.request(`${apps.auth.origin}/login/fake`)).location!).searchParams;
    expect(second.get('state')).not.toBe(first.get('state'));
    expect(second.get('nonce')).not.toBe(first.get('nonce'));
    expect(second.get('code_challenge')).not.toBe(first.get('code_challenge'));
  });

  it('passes vetted prompt, max_age and login_hint from the query', async () => {
    const ua = new TestUserAgent();
    const answer = await ua.request(`${apps.auth.origin}/login/fake?prompt=login&max_age=300&login_hint=alice%40example.test`);
    const params = new URL(answer.location!).searchParams;
    expect(params.get('prompt')).toBe('login');
    expect(params.get('max_age')).toBe('300');
    expect(params.get('login_hint')).toBe('alice@example.test');
  });

  it.each([['prompt=always'], ['max_age=-1'], ['max_age=1e3'], ['login_hint=a%20b'], ['prompt=login&prompt=none']])(
    'answers 400 for a malformed pass-through parameter (%s) and stores nothing',
    async (query) => {
      const ua = new TestUserAgent();
      const answer = await ua.request(`${apps.auth.origin}/login/fake?${query}`, { headers: { Accept: 'application/json' } });
      expect(answer.status).toBe(400);
      expect(ua.cookies.find((cookie) => cookie.name === '__Secure-sso.sid')).toBeUndefined();
    },
  );

  it('returns to a sanitized return_to: a foreign target is replaced by the default page', async () => {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/fake?return_to=${encodeURIComponent('https://evil.example.net/steal')}`, {
      stopAt: (url) => !url.includes('/callback/') && !url.includes('/authorize') && !url.includes('/login/'),
    });
    expect(chain[chain.length - 1]!.location).toBe(`${apps.auth.origin}/`);
  });

  it('returns to a return_to on another subdomain of the parent domain', async () => {
    const ua = new TestUserAgent();
    const target = `${apps.shop.origin}/orders?page=2`;
    const chain = await ua.follow(`${apps.auth.origin}/login/fake?return_to=${encodeURIComponent(target)}`, {
      stopAt: (url) => url.startsWith(apps.shop.origin),
    });
    expect(chain[chain.length - 1]!.location).toBe(target);
  });

  it('keeps at most 5 logins in flight per browser; the oldest is dropped', async () => {
    const ua = new TestUserAgent();
    const starts = [];
    for (let i = 0; i < 6; i += 1) starts.push(new URL((await ua.request(`${apps.auth.origin}/login/fake`)).location!));
    const finish = async (authorize: URL) => {
      const back = await ua.request(authorize.href);
      return ua.request(back.location!, { headers: { Accept: 'application/json' } });
    };
    expect((await finish(starts[0]!)).status).toBe(400);
    expect((await finish(starts[5]!)).status).toBe(302);
  });

  it('refuses to start a login over plain http when the session cookie is Secure (it would be dropped)', async () => {
    const ua = new TestUserAgent();
    const answer = await ua.request(`${apps.auth.origin.replace('https:', 'http:')}/login/fake`, {
      headers: { Accept: 'application/json' },
    });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body).code).toBe('https_required');
    expect(answer.location).toBeUndefined();
  });

  it('answers 503 when the provider cannot be discovered, storing no transaction', async () => {
    const down = await startSsoApps('oidc-login-down');
    try {
      down.configure({
        name: 'gone',
        issuer: `http://127.0.0.1:${await freePort()}`,
        clientId: 'shop',
        clientSecret: SECRET,
        allowInsecureLocalDevelopment: true,
        timeoutSeconds: 0.5,
      });
      const ua = new TestUserAgent();
      const answer = await ua.request(`${down.auth.origin}/login/gone`, { headers: { Accept: 'application/json' } });
      expect(answer.status).toBe(503);
      expect(answer.headers['retry-after']).toBeDefined();
    } finally {
      await down.close();
    }
  });
});
