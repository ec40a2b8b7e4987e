import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import express, { type Request } from 'express';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { hashAppSecret } from '../../lib/qr/app-registry';
import { qrLogin, type QrLoginOptions } from '../../lib/qr/qr-login';
import { ssoSession } from '../../lib/session';
import { confirmAndCollect, cookiePair, patchStatus, SHOP_REDIRECT, startProvider, type ProviderHarness } from '../helpers/qr-harness';
import { testRedisStore } from '../helpers/redis';
import { startWeChatFake, type WeChatFake } from '../helpers/wechat-fake';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let idp: ProviderHarness;

beforeAll(async () => {
  redis = await testRedisStore('qr-relying');
  idp = await startProvider(redis.store, { rateLimits: false });
});

afterAll(async () => {
  await idp.close();
  await redis.cleanup();
});

/** The relying app ("shop") on the shared session, with the QR login handlers mounted. */
function relyingApp(options: Partial<QrLoginOptions> & Pick<QrLoginOptions, 'providerUrl' | 'secret'>) {
  const qr = qrLogin({ appid: 'shop', redirectUri: SHOP_REDIRECT, ...options });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(
    ssoSession({
      store: redis.store,
      cookieDomain: 'example.test',
      secret: randomBytes(32).toString('base64'),
      loginUrl: 'https://auth.example.test/login',
    }),
  );
  app.get('/login/qr', qr.login);
  app.get('/callback/qr', qr.callback);
  app.get('/me', (req, res) => {
    // Test-only view: whether provider tokens are in the session, never their values.
    res.json({
      user: req.session.user ?? null,
      hasProviderTokens: Boolean(req.session.qrLogin?.tokens),
      pending: Object.keys(req.session.qrLogin?.pending ?? {}).length,
    });
  });
  app.post('/refresh', async (req: Request, res, next) => {
    try {
      const token = await qr.refresh(req);
      res.json({ renewed: typeof token === 'string' && token.length > 0 });
    } catch (error) {
      next(error);
    }
  });
  app.use(errorHandler({ html: true, log: false }));
  return app;
}

/** A browser of the shop: https as Express sees it (X-Forwarded-Proto from loopback), cookies kept by hand. */
function browser(app: express.Express) {
  let cookie = '';
  const go = (path: string, accept = 'text/html') => {
    const req = request(app).get(path).set('X-Forwarded-Proto', 'https').set('Host', 'auth.example.test').set('Accept', accept);
    return cookie ? req.set('Cookie', cookie) : req;
  };
  return {
    async get(path: string, accept?: string) {
      const res = await go(path, accept);
      const set = cookiePair(res.headers['set-cookie'], '__Secure-sso.sid');
      if (set) cookie = set;
      return res;
    },
    post(path: string) {
      return request(app)
        .post(path)
        .set('X-Forwarded-Proto', 'https')
        .set('Host', 'auth.example.test')
        .set('Cookie', cookie)
        .set('Origin', 'https://auth.example.test');
    },
    get cookie() {
      return cookie;
    },
  };
}

/** Runs the browser through the provider: QR page (HTML), phone confirms, binding browser collects the redirect. */
async function throughProvider(provider: ProviderHarness, qrconnectUrl: string, userId = 'alice'): Promise<URL> {
  const page = await fetch(qrconnectUrl, { headers: { accept: 'text/html', 'user-agent': 'FlowBrowser/1.0' } });
  expect(page.status).toBe(200);
  const html = await page.text();
  const binding = cookiePair(page.headers.get('set-cookie') ?? '', 'qr_binding')!;
  const redirectionUrl = /data-redirection-url="([^"]+)"/.exec(html)![1]!;
  const authCode = /\/sns\/qr-logins\/([^/]+)\/redirection/.exec(redirectionUrl)![1]!;
  expect((await patchStatus(provider.url, authCode, 'scanned', userId)).status).toBe(200);
  expect((await patchStatus(provider.url, authCode, 'confirmed', userId)).status).toBe(200);
  const collected = await fetch(redirectionUrl, { headers: { cookie: binding }, redirect: 'manual' });
  expect(collected.status).toBe(302);
  return new URL(collected.headers.get('location')!);
}

describe('qrLogin options', () => {
  it('refuses a missing or short secret, an http provider outside loopback, unknown options', () => {
    const base = { providerUrl: 'https://idp.example.test', appid: 'shop', secret: 'x'.repeat(32), redirectUri: SHOP_REDIRECT };
    expect(() => qrLogin({ ...base, secret: undefined as never })).toThrow(/secret is required \(the app secret/);
    expect(() => qrLogin({ ...base, secret: 'short' })).toThrow(/at least 32 characters/);
    expect(() => qrLogin({ ...base, providerUrl: 'http://idp.example.test' })).toThrow(/must use https/);
    expect(() => qrLogin({ ...base, exchangeMethod: 'PUT' as never })).toThrow(/exchangeMethod/);
    expect(() => qrLogin({ ...base, retries: 2 } as never)).toThrow(/unknown option "retries"/);
    expect(() => qrLogin({ ...base, providerUrl: 'https://idp.example.test/a|b' })).toThrow(/providerUrl must be .* without "\|"/);
    expect(() => qrLogin(base)).not.toThrow();
  });

  it('detects qrLogin used as a middleware itself', () => {
    const call = qrLogin as unknown as (a: unknown, b: unknown, c: unknown) => unknown;
    expect(() => call({}, {}, () => undefined)).toThrow(/it is a factory/);
  });
});

describe('full QR login: relying app ↔ provider over real HTTP and Redis', () => {
  it('logs the user in on the shared session and returns to the sanitized return_to', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    const start = await user.get(`/login/qr?return_to=${encodeURIComponent('https://shop.example.test/orders')}`);
    expect(start.status).toBe(302);
    const target = new URL(start.headers.location as string);
    expect(`${target.origin}${target.pathname}`).toBe(`${idp.url}/sns/oauth2/qrconnect`);
    expect(Object.fromEntries(target.searchParams)).toEqual({
      appid: 'shop',
      redirect_uri: SHOP_REDIRECT,
      response_type: 'code',
      scope: 'snsapi_login',
      state: expect.any(String),
    });
    expect(Buffer.from(target.searchParams.get('state')!, 'base64url').length).toBeGreaterThanOrEqual(16);
    const before = user.cookie;

    const callback = await throughProvider(idp, target.toString());
    expect(`${callback.origin}${callback.pathname}`).toBe(SHOP_REDIRECT);
    expect(callback.searchParams.get('state')).toBe(target.searchParams.get('state'));

    const done = await user.get(`/callback/qr${callback.search}`);
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe('https://shop.example.test/orders');
    expect(user.cookie).not.toBe(before);
    expect(String(done.headers['set-cookie'])).not.toMatch(/access_token|refresh_token/);

    const me = await user.get('/me', 'application/json');
    // The identity is (provider and app, openid): an openid means nothing outside its app.
    const source = `qr:${idp.url}#shop`;
    expect(me.body.user).toMatchObject({
      source,
      subject: expect.stringMatching(/^[A-Za-z0-9_-]{28}$/),
      name: 'Alice',
      method: 'qr',
      roles: [],
    });
    expect(me.body.user.id).toBe(`${source}|${me.body.user.subject}`);
    expect(me.body.user.attributes).not.toHaveProperty('user_id');
    expect(me.body.hasProviderTokens).toBe(true);
    expect(me.body.pending).toBe(0);

    const renewed = await user.post('/refresh');
    expect(renewed.status).toBe(200);
    expect(renewed.body).toEqual({ renewed: true });
  });

  it("keeps the directory's user id, released by a provider to its own app, in the attributes for linkAccount", async () => {
    const own = await startProvider(
      redis.store,
      {
        rateLimits: false,
        apps: [
          { appid: 'shop', secretHash: hashAppSecret(idp.shopSecret), name: 'Shop', redirectUris: [SHOP_REDIRECT], releaseUserId: true },
        ],
      },
      idp,
    );
    try {
      const user = browser(relyingApp({ providerUrl: own.url, secret: own.shopSecret }));
      const start = await user.get('/login/qr');
      const callback = await throughProvider(own, start.headers.location as string);
      expect((await user.get(`/callback/qr${callback.search}`)).status).toBe(302);
      const me = await user.get('/me', 'application/json');
      // Still the QR identity: only ssoSession's linkAccount may make it the directory's account.
      expect(me.body.user).toMatchObject({ source: `qr:${own.url}#shop`, attributes: { user_id: 'alice' } });
    } finally {
      await own.close();
    }
  });

  it('keeps the identity when mapUser sets the name and roles', async () => {
    const app = relyingApp({
      providerUrl: idp.url,
      secret: idp.shopSecret,
      mapUser: (info) => ({ name: `Customer ${String(info.nickname)}`, roles: ['customer'] }),
    });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const callback = await throughProvider(idp, start.headers.location as string);
    expect((await user.get(`/callback/qr${callback.search}`)).status).toBe(302);
    const signedIn = (await user.get('/me', 'application/json')).body.user;
    expect(signedIn).toMatchObject({ source: `qr:${idp.url}#shop`, name: 'Customer Alice', roles: ['customer'], method: 'qr' });
    expect(signedIn.id).toBe(`qr:${idp.url}#shop|${signedIn.subject}`);
  });

  it('never lets mapUser choose the identity: 500 and no login', async () => {
    const app = relyingApp({
      providerUrl: idp.url,
      secret: idp.shopSecret,
      mapUser: () => ({ id: 'admin', name: 'Admin', roles: ['admin'] }) as never,
    });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const callback = await throughProvider(idp, start.headers.location as string);
    expect((await user.get(`/callback/qr${callback.search}`, 'application/json')).status).toBe(500);
    expect((await user.get('/me', 'application/json')).body.user).toBeNull();
  });

  it('replaces a return_to outside the parent domain with the default', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    const start = await user.get(`/login/qr?return_to=${encodeURIComponent('https://evil.example/steal')}`);
    const callback = await throughProvider(idp, start.headers.location as string);
    const done = await user.get(`/callback/qr${callback.search}`);
    expect(done.status).toBe(302);
    expect(done.headers.location).not.toContain('evil.example');
  });

  it('refuses a callback whose state differs, and does not log in', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const callback = await throughProvider(idp, start.headers.location as string);
    const forged = new URLSearchParams(callback.search);
    forged.set('state', randomBytes(16).toString('base64url'));
    const res = await user.get(`/callback/qr?${forged}`, 'application/json');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('state_mismatch');
    expect((await user.get('/me', 'application/json')).body.user).toBeNull();
  });

  it('accepts a state once: replaying the callback fails', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const callback = await throughProvider(idp, start.headers.location as string);
    expect((await user.get(`/callback/qr${callback.search}`)).status).toBe(302);
    const replay = await user.get(`/callback/qr${callback.search}`, 'application/json');
    expect(replay.status).toBe(400);
    expect(replay.body.code).toBe('state_mismatch');
  });

  it('refuses the callback in another browser (the state is bound to the session that started the login)', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const victim = browser(app);
    const start = await victim.get('/login/qr');
    const callback = await throughProvider(idp, start.headers.location as string);
    const attacker = browser(app);
    const res = await attacker.get(`/callback/qr${callback.search}`, 'application/json');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('state_mismatch');
  });

  it('shows a friendly page when the provider refuses the code (already used: 40163)', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const callback = await throughProvider(idp, start.headers.location as string);
    // Someone redeemed the code first (it leaked); the user's own callback then meets 40163.
    const stolen = await fetch(`${idp.url}/sns/oauth2/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        appid: 'shop',
        secret: idp.shopSecret,
        code: callback.searchParams.get('code')!,
        grant_type: 'authorization_code',
      }),
    });
    expect(stolen.status).toBe(200);
    const res = await user.get(`/callback/qr${callback.search}`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).toContain('Please scan a new QR code');
    expect((await user.get('/me', 'application/json')).body.user).toBeNull();
  });

  it('answers 502 when the provider refuses the app secret (40125)', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: 'z'.repeat(32) });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const callback = await throughProvider(idp, start.headers.location as string);
    const res = await user.get(`/callback/qr${callback.search}`, 'application/json');
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'qr_provider_refused', errcode: 40125 });
    expect(JSON.stringify(res.body)).not.toContain('z'.repeat(32));
  });

  it('answers 503 with Retry-After when the provider does not answer in time, and when it is down', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const silent: Server = createServer(() => undefined);
    silent.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const port = (silent.address() as { port: number }).port;
    try {
      const app = relyingApp({ providerUrl: `http://127.0.0.1:${port}`, secret: idp.shopSecret, timeoutSeconds: 0.3 });
      const user = browser(app);
      const start = await user.get('/login/qr');
      const state = new URL(start.headers.location as string).searchParams.get('state')!;
      const started = Date.now();
      const res = await user.get(`/callback/qr?code=${'c'.repeat(32)}&state=${state}`, 'application/json');
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBeDefined();
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
    const down = relyingApp({ providerUrl: `http://127.0.0.1:${port}`, secret: idp.shopSecret });
    const user = browser(down);
    const start = await user.get('/login/qr');
    const state = new URL(start.headers.location as string).searchParams.get('state')!;
    const res = await user.get(`/callback/qr?code=${'c'.repeat(32)}&state=${state}`, 'application/json');
    expect(res.status).toBe(503);
  });

  it('keeps at most maxPendingLogins states per browser, dropping the oldest', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret, maxPendingLogins: 2 });
    const user = browser(app);
    const states: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const start = await user.get('/login/qr');
      states.push(new URL(start.headers.location as string).searchParams.get('state')!);
    }
    expect((await user.get('/me', 'application/json')).body.pending).toBe(2);
    const dropped = await user.get(`/callback/qr?code=${'c'.repeat(32)}&state=${states[0]}`, 'application/json');
    expect(dropped.body.code).toBe('state_mismatch');
    // A kept state passes the state check and reaches the provider, which refuses the made-up code.
    const kept = await user.get(`/callback/qr?code=${'c'.repeat(32)}&state=${states[2]}`, 'application/json');
    expect(kept.body.code).toBe('qr_code_rejected');
  });

  it('refresh fails with 401 for a session without QR tokens', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    await user.get('/login/qr');
    const res = await user.post('/refresh').set('Accept', 'application/json');
    expect(res.status).toBe(401);
  });
});

describe('against WeChat’s wire format (GET exchange, errcode bodies with HTTP 200)', () => {
  let wechat: WeChatFake;
  beforeAll(async () => {
    wechat = await startWeChatFake();
  });
  afterAll(() => wechat.close());

  function wechatApp() {
    {
      const qr = qrLogin({
        providerUrl: wechat.url,
        appid: wechat.appid,
        secret: wechat.secret,
        redirectUri: SHOP_REDIRECT,
        exchangeMethod: 'GET',
        userinfoTokenIn: 'query',
      });
      const app = express();
      app.set('trust proxy', 'loopback');
      app.use(
        ssoSession({
          store: redis.store,
          cookieDomain: 'example.test',
          secret: randomBytes(32).toString('base64'),
          loginUrl: 'https://auth.example.test/login',
        }),
      );
      app.get('/login/qr', qr.login);
      app.get('/callback/qr', qr.callback);
      app.get('/me', (req, res) => {
        res.json({ user: req.session.user ?? null });
      });
      app.post('/refresh', async (req: Request, res, next) => {
        try {
          await qr.refresh(req);
          res.json({ renewed: true });
        } catch (error) {
          next(error);
        }
      });
      app.use(errorHandler({ html: true, log: false }));
      return app;
    }
  }

  it('logs in with a GET exchange and userinfo with the token in the query', async () => {
    const user = browser(wechatApp());
    const start = await user.get('/login/qr');
    const state = new URL(start.headers.location as string).searchParams.get('state')!;
    expect(start.headers.location).toContain(`${wechat.url}/sns/oauth2/qrconnect?appid=${wechat.appid}`);
    const code = wechat.issueCode('oWeChatUser0000000000000001');
    const done = await user.get(`/callback/qr?code=${code}&state=${state}`);
    expect(done.status).toBe(302);
    const me = await user.get('/me', 'application/json');
    expect(me.body.user).toMatchObject({
      id: `qr:${wechat.url}#${wechat.appid}|oWeChatUser0000000000000001`,
      source: `qr:${wechat.url}#${wechat.appid}`,
      subject: 'oWeChatUser0000000000000001',
      name: 'Nick oWeC',
      method: 'qr',
    });
    expect(wechat.calls.filter((call) => call.path !== '/sns/oauth2/refresh_token').map((call) => `${call.method} ${call.path}`)).toEqual([
      'GET /sns/oauth2/access_token',
      'GET /sns/userinfo',
    ]);
    expect((await user.post('/refresh')).status).toBe(200);
  });

  it('turns an errcode answered with HTTP 200 into a friendly page and no login', async () => {
    const user = browser(wechatApp());
    const start = await user.get('/login/qr');
    const state = new URL(start.headers.location as string).searchParams.get('state')!;
    const res = await user.get(`/callback/qr?code=${'f'.repeat(32)}&state=${state}`);
    expect(res.status).toBe(400);
    expect(res.text).toContain('Please scan a new QR code');
    expect((await user.get('/me', 'application/json')).body.user).toBeNull();
  });

  it('maps WeChat’s busy errcode (-1) to 503', async () => {
    const user = browser(wechatApp());
    const start = await user.get('/login/qr');
    const state = new URL(start.headers.location as string).searchParams.get('state')!;
    const code = wechat.issueCode('oWeChatUser0000000000000002');
    wechat.failWith = -1;
    try {
      const res = await user.get(`/callback/qr?code=${code}&state=${state}`, 'application/json');
      expect(res.status).toBe(503);
      expect(res.body.errcode).toBe(-1);
    } finally {
      wechat.failWith = undefined;
    }
  });
});

describe('deny and reuse as the relying app sees them', () => {
  it('never reaches the callback when the user denies on the phone', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const page = await fetch(start.headers.location as string, { headers: { accept: 'application/json' } });
    const body = (await page.json()) as { qr_url: string; redirection_url: string };
    const binding = cookiePair(page.headers.get('set-cookie') ?? '', 'qr_binding')!;
    const authCode = /qr-logins\/([^/]+)\//.exec(body.qr_url)![1]!;
    await patchStatus(idp.url, authCode, 'scanned', 'alice');
    await patchStatus(idp.url, authCode, 'denied', 'alice');
    const res = await fetch(body.redirection_url, { headers: { cookie: binding }, redirect: 'manual' });
    expect(res.status).toBe(403);
    expect(res.headers.get('location')).toBeNull();
  });

  it('refuses to scan an auth_code again after it was confirmed', async () => {
    const app = relyingApp({ providerUrl: idp.url, secret: idp.shopSecret });
    const user = browser(app);
    const start = await user.get('/login/qr');
    const page = await fetch(start.headers.location as string, { headers: { accept: 'application/json' } });
    const body = (await page.json()) as { qr_url: string; redirection_url: string; status_url: string; events_url: string };
    const binding = cookiePair(page.headers.get('set-cookie') ?? '', 'qr_binding')!;
    const authCode = /qr-logins\/([^/]+)\//.exec(body.qr_url)![1]!;
    const { code } = await confirmAndCollect(idp.url, {
      authCode,
      binding,
      setCookie: '',
      qrUrl: body.qr_url,
      statusUrl: body.status_url,
      eventsUrl: body.events_url,
      redirectionUrl: body.redirection_url,
    });
    expect(code).not.toBe('');
    // The auth_code is spent: scanning the same QR again is refused.
    expect((await patchStatus(idp.url, authCode, 'scanned', 'bob')).status).toBe(409);
  });
});
