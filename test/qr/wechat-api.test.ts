import express from 'express';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { hashAppSecret } from '../../lib/qr/app-registry';
import { RedisStore } from '../../lib/store';
import { requireBearer } from '../../lib/tokens/require-bearer';
import { burst } from '../helpers/parallel-http';
import { expectProblem } from '../helpers/problem';
import {
  confirmAndCollect,
  createLogin,
  exchange,
  loadJose,
  ADMIN_REDIRECT,
  qrconnectQuery,
  SHOP_REDIRECT,
  startProvider,
  USERS,
  type ProviderHarness,
} from '../helpers/qr-harness';
import { startPrivateRedis, testRedisStore } from '../helpers/redis';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let idp: ProviderHarness;

beforeAll(async () => {
  redis = await testRedisStore('qr-wechat');
  idp = await startProvider(redis.store, { rateLimits: false });
});

afterAll(async () => {
  await idp.close();
  await redis.cleanup();
});

async function freshCode(harness = idp, appid = 'shop', userId = 'alice'): Promise<string> {
  const overrides: Record<string, string> = appid === 'admin' ? { appid, redirect_uri: 'https://admin.example.test/callback/qr' } : {};
  const login = await createLogin(harness.url, overrides);
  return (await confirmAndCollect(harness.url, login, userId)).code;
}

async function userinfo(accessToken: string, openid: string, harness = idp) {
  return request(harness.url).get('/sns/userinfo').query({ access_token: accessToken, openid });
}

describe('POST /sns/oauth2/access_token', () => {
  it('exchanges a code for a JWT access token (aud = appid), a refresh token and the openid', async () => {
    const code = await freshCode();
    const res = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      access_token: expect.any(String),
      expires_in: 7200,
      refresh_token: expect.any(String),
      openid: expect.stringMatching(/^[A-Za-z0-9_-]{28}$/),
      scope: 'snsapi_login',
      unionid: expect.stringMatching(/^[A-Za-z0-9_-]{28}$/),
    });
    const jose = await loadJose();
    const { payload, protectedHeader } = await jose.jwtVerify(
      res.body.access_token as string,
      jose.createLocalJWKSet(idp.keys.publicJwks() as never),
      {
        audience: 'shop',
        issuer: 'https://idp.example.test',
        algorithms: ['ES256'],
      },
    );
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload.sub).toBe(res.body.openid);
    expect(payload.exp! - payload.iat!).toBe(7200);
    expect(JSON.stringify(payload)).not.toContain('alice');
  });

  it('is accepted by requireBearer configured with the provider keys and aud = appid', async () => {
    const code = await freshCode();
    const { body } = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code });
    const api = express();
    api.get(
      '/me',
      requireBearer({ keys: idp.keys, algorithms: ['ES256'], issuer: 'https://idp.example.test', audience: 'shop' }),
      (req, res) => {
        res.json({ sub: req.auth?.payload.sub });
      },
    );
    api.use(errorHandler({ log: false }));
    const ok = await request(api).get('/me').set('Authorization', `Bearer ${body.access_token}`);
    expect(ok.body).toEqual({ sub: body.openid });
    const other = express();
    other.get(
      '/me',
      requireBearer({ keys: idp.keys, algorithms: ['ES256'], issuer: 'https://idp.example.test', audience: 'admin' }),
      (_req, res) => {
        res.sendStatus(204);
      },
    );
    other.use(errorHandler({ log: false }));
    expect((await request(other).get('/me').set('Authorization', `Bearer ${body.access_token}`)).status).toBe(401);
  });

  it('accepts a JSON body and, for WeChat clients, GET with a query', async () => {
    const json = await request(idp.url)
      .post('/sns/oauth2/access_token')
      .send({ appid: 'shop', secret: idp.shopSecret, code: await freshCode(), grant_type: 'authorization_code' });
    expect(json.status).toBe(200);
    const get = await request(idp.url)
      .get('/sns/oauth2/access_token')
      .query({ appid: 'shop', secret: idp.shopSecret, code: await freshCode(), grant_type: 'authorization_code' });
    expect(get.status).toBe(200);
    expect(get.headers['cache-control']).toBe('no-store');
  });

  it('answers HEAD on the GET token endpoints with 405, so a HEAD neither redeems a code nor rotates a refresh token', async () => {
    const code = await freshCode();
    const query = { appid: 'shop', secret: idp.shopSecret, code, grant_type: 'authorization_code' };
    const head = await request(idp.url).head('/sns/oauth2/access_token').query(query);
    expect(head.status).toBe(405);
    expect(head.headers.allow).toBe('GET, POST, OPTIONS');
    const tokens = await request(idp.url).get('/sns/oauth2/access_token').query(query);
    expect(tokens.status).toBe(200);
    const refresh = {
      appid: 'shop',
      secret: idp.shopSecret,
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token as string,
    };
    expect((await request(idp.url).head('/sns/oauth2/refresh_token').query(refresh)).status).toBe(405);
    expect((await request(idp.url).get('/sns/oauth2/refresh_token').query(refresh)).status).toBe(200);
  });

  it.each([
    ['a wrong secret', { secret: 'x'.repeat(32) }, 401, 40125],
    ['an unknown appid', { appid: 'nope' }, 401, 40013],
    ['a missing appid', { appid: '' }, 400, 41002],
    ['a missing secret', { secret: '' }, 400, 41004],
    ['a missing code', { code: '' }, 400, 41008],
    ['an unknown code', { code: 'A'.repeat(32) }, 400, 40029],
    ['another grant_type', { grant_type: 'password' }, 400, 40002],
  ])('refuses %s with errcode and changes nothing', async (_name, overrides, status, errcode) => {
    const code = await freshCode();
    const res = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code, ...overrides });
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ errcode, errmsg: expect.any(String) });
    // The code was not spent by the refused attempt.
    expect((await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code })).status).toBe(200);
  });

  it('refuses a code issued to another app (40029)', async () => {
    const code = await freshCode(idp, 'shop');
    const res = await exchange(idp.url, { appid: 'admin', secret: idp.adminSecret, code });
    expect(res.body.errcode).toBe(40029);
  });

  it('refuses a code presented twice (40163) and revokes the tokens issued from it', async () => {
    const code = await freshCode();
    const first = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code });
    expect(first.status).toBe(200);
    expect((await userinfo(first.body.access_token as string, first.body.openid as string)).status).toBe(200);
    const second = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code });
    expect(second).toEqual({ status: 400, body: { errcode: 40163, errmsg: 'code been used' } });
    const info = await userinfo(first.body.access_token as string, first.body.openid as string);
    expect(info.status).toBe(401);
    expect(info.body.errcode).toBe(40014);
    const refreshed = await request(idp.url)
      .post('/sns/oauth2/refresh_token')
      .type('form')
      .send({ appid: 'shop', secret: idp.shopSecret, grant_type: 'refresh_token', refresh_token: first.body.refresh_token as string });
    expect(refreshed.body.errcode).toBe(40030);
  });

  it('has exactly one winner among 100 parallel redemptions of one code', async () => {
    const code = await freshCode();
    // Over 100 open connections at once, so the handlers really interleave (each reads the unused code first).
    const answers = await burst(100, `${idp.url}/sns/qr-login/qr-login.js`, {
      url: `${idp.url}/sns/oauth2/access_token`,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ appid: 'shop', secret: idp.shopSecret, code, grant_type: 'authorization_code' }).toString(),
    });
    const results = answers.map((answer) => ({ status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> }));
    expect(results.filter((res) => res.status === 200)).toHaveLength(1);
    expect(results.filter((res) => res.body.errcode === 40163)).toHaveLength(99);
    // The replays revoked the winner's grant: its access token no longer reads user info.
    const winner = results.find((res) => res.status === 200)!;
    expect((await userinfo(winner.body.access_token as string, winner.body.openid as string)).status).toBe(401);
  });

  it('gives one user a stable openid per app and different openids in different apps', async () => {
    const shop1 = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code: await freshCode(idp, 'shop') });
    const shop2 = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code: await freshCode(idp, 'shop') });
    const admin = await exchange(idp.url, { appid: 'admin', secret: idp.adminSecret, code: await freshCode(idp, 'admin') });
    const bob = await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code: await freshCode(idp, 'shop', 'bob') });
    expect(shop1.body.openid).toBe(shop2.body.openid);
    expect(admin.body.openid).not.toBe(shop1.body.openid);
    expect(bob.body.openid).not.toBe(shop1.body.openid);
    expect(admin.body.unionid).toBe(shop1.body.unionid);
  });
});

describe('GET /sns/userinfo', () => {
  let tokens: { access_token: string; openid: string; refresh_token: string };
  beforeAll(async () => {
    tokens = (await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code: await freshCode() })).body as typeof tokens;
  });

  it('answers the user profile for the token’s openid', async () => {
    const res = await userinfo(tokens.access_token, tokens.openid);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      openid: tokens.openid,
      nickname: 'Alice',
      sex: 2,
      province: 'Zhejiang',
      city: 'Hangzhou',
      country: 'CN',
      headimgurl: USERS.alice!.headimgurl,
      privilege: [],
      unionid: expect.any(String),
    });
  });

  it("releases the directory's user id to an app registered as the provider's own, and to no other", async () => {
    const apps = [
      { appid: 'shop', secretHash: hashAppSecret(idp.shopSecret), name: 'Shop', redirectUris: [SHOP_REDIRECT] },
      {
        appid: 'admin',
        secretHash: hashAppSecret(idp.adminSecret),
        name: 'Admin',
        redirectUris: [ADMIN_REDIRECT],
        releaseUserId: true,
      },
    ];
    const own = await startProvider(redis.store, { rateLimits: false, apps }, idp);
    try {
      const admin = await exchange(own.url, { appid: 'admin', secret: own.adminSecret, code: await freshCode(own, 'admin') });
      const shop = await exchange(own.url, { appid: 'shop', secret: own.shopSecret, code: await freshCode(own, 'shop') });
      expect((await userinfo(admin.body.access_token as string, admin.body.openid as string, own)).body).toMatchObject({
        openid: admin.body.openid,
        user_id: 'alice',
      });
      const other = await userinfo(shop.body.access_token as string, shop.body.openid as string, own);
      expect(other.status).toBe(200);
      expect(other.body).not.toHaveProperty('user_id');
      expect(JSON.stringify(other.body)).not.toContain('alice');
    } finally {
      await own.close();
    }
  });

  it('accepts the token in the Authorization header', async () => {
    const res = await request(idp.url)
      .get('/sns/userinfo')
      .query({ openid: tokens.openid })
      .set('Authorization', `Bearer ${tokens.access_token}`);
    expect(res.status).toBe(200);
  });

  it('refuses an openid that is not the token’s (40003)', async () => {
    const res = await userinfo(tokens.access_token, 'o'.repeat(28));
    expect(res.body).toEqual({ errcode: 40003, errmsg: 'invalid openid' });
  });

  it('refuses a missing token (41001, 401 with a Bearer challenge) and a missing openid (41009)', async () => {
    const missing = await request(idp.url).get('/sns/userinfo').query({ openid: tokens.openid });
    expect(missing.status).toBe(401);
    expect(missing.body.errcode).toBe(41001);
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await request(idp.url).get('/sns/userinfo').query({ access_token: tokens.access_token })).body.errcode).toBe(41009);
  });

  it('accepts the same token in the header and the query, as grant’s wechat provider sends it', async () => {
    const both = await request(idp.url)
      .get('/sns/userinfo')
      .query({ access_token: tokens.access_token, openid: tokens.openid })
      .set('Authorization', `Bearer ${tokens.access_token}`);
    expect(both.status).toBe(200);
    expect(both.body.openid).toBe(tokens.openid);
  });

  it('refuses two different tokens in the header and the query (40014), even when both are valid', async () => {
    const other = (await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code: await freshCode() })).body;
    expect(other.openid).toBe(tokens.openid);
    const res = await request(idp.url)
      .get('/sns/userinfo')
      .query({ access_token: other.access_token as string, openid: tokens.openid })
      .set('Authorization', `Bearer ${tokens.access_token}`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ errcode: 40014, errmsg: 'invalid access_token' });
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('refuses the access_token query parameter given twice (40014)', async () => {
    const res = await request(idp.url).get(
      `/sns/userinfo?${new URLSearchParams([
        ['access_token', tokens.access_token],
        ['access_token', tokens.access_token],
        ['openid', tokens.openid],
      ])}`,
    );
    expect(res.status).toBe(401);
    expect(res.body.errcode).toBe(40014);
  });

  it('refuses an expired token with 42001 and a forged one with 40014', async () => {
    const jose = await loadJose();
    const now = Math.floor(Date.now() / 1000);
    const { kid, key } = idp.keys.signingKey;
    const expired = await new jose.SignJWT({ jti: 'expired-1' })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .setIssuer('https://idp.example.test')
      .setAudience('shop')
      .setSubject(tokens.openid)
      .setIssuedAt(now - 7300)
      .setExpirationTime(now - 100)
      .sign(key);
    const res = await userinfo(expired, tokens.openid);
    expect(res.status).toBe(401);
    expect(res.body.errcode).toBe(42001);
    const { privateKey } = await jose.generateKeyPair('ES256');
    const forged = await new jose.SignJWT({ jti: 'forged-1' })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .setIssuer('https://idp.example.test')
      .setAudience('shop')
      .setSubject(tokens.openid)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    expect((await userinfo(forged, tokens.openid)).body.errcode).toBe(40014);
    const none = `${Buffer.from('{"alg":"none","typ":"at+jwt"}').toString('base64url')}.${Buffer.from(JSON.stringify({ aud: 'shop', sub: tokens.openid, iss: 'https://idp.example.test', exp: now + 600 })).toString('base64url')}.`;
    expect((await userinfo(none, tokens.openid)).body.errcode).toBe(40014);
  });
});

describe('POST /sns/oauth2/refresh_token', () => {
  it('rotates the refresh token and issues a new access token; the old refresh token is then refused', async () => {
    const first = (await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code: await freshCode() })).body;
    const rotate = (refreshToken: string) =>
      request(idp.url)
        .post('/sns/oauth2/refresh_token')
        .type('form')
        .send({ appid: 'shop', secret: idp.shopSecret, grant_type: 'refresh_token', refresh_token: refreshToken });
    const res = await rotate(first.refresh_token as string);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      access_token: expect.any(String),
      expires_in: 7200,
      refresh_token: expect.any(String),
      openid: first.openid,
      scope: 'snsapi_login',
    });
    expect(res.body.refresh_token).not.toBe(first.refresh_token);
    expect((await userinfo(res.body.access_token, first.openid as string)).status).toBe(200);
    const replay = await rotate(first.refresh_token as string);
    expect(replay.status).toBe(400);
    expect(replay.body.errcode).toBe(40030);
  });

  it('requires the app secret by default, and refuses another app’s refresh token', async () => {
    const first = (await exchange(idp.url, { appid: 'shop', secret: idp.shopSecret, code: await freshCode() })).body;
    const noSecret = await request(idp.url)
      .post('/sns/oauth2/refresh_token')
      .type('form')
      .send({ appid: 'shop', grant_type: 'refresh_token', refresh_token: first.refresh_token as string });
    expect(noSecret.body.errcode).toBe(41004);
    const otherApp = await request(idp.url)
      .post('/sns/oauth2/refresh_token')
      .type('form')
      .send({ appid: 'admin', secret: idp.adminSecret, grant_type: 'refresh_token', refresh_token: first.refresh_token as string });
    expect(otherApp.body.errcode).toBe(40030);
  });
});

describe('options of the WeChat API', () => {
  it('wechatCompatibleStatus answers errcode bodies with HTTP 200', async () => {
    const compat = await startProvider(redis.store, { rateLimits: false, wechatCompatibleStatus: true });
    try {
      const res = await exchange(compat.url, { appid: 'shop', secret: 'y'.repeat(32), code: 'A'.repeat(32) });
      expect(res).toEqual({ status: 200, body: { errcode: 40125, errmsg: 'invalid appsecret' } });
    } finally {
      await compat.close();
    }
  });

  it('requireSecretOnRefresh: false accepts WeChat-style refreshes without the secret', async () => {
    const lax = await startProvider(redis.store, { rateLimits: false, requireSecretOnRefresh: false });
    try {
      const first = (await exchange(lax.url, { appid: 'shop', secret: lax.shopSecret, code: await freshCode(lax) })).body;
      const res = await request(lax.url)
        .get('/sns/oauth2/refresh_token')
        .query({ appid: 'shop', grant_type: 'refresh_token', refresh_token: first.refresh_token as string });
      expect(res.status).toBe(200);
    } finally {
      await lax.close();
    }
  });

  it('rate-limits the token endpoint per appid (45011, 429) and qrconnect per IP (429 problem)', async () => {
    const limited = await startProvider(redis.store, { rateLimits: { tokenPerMinute: 2, qrconnectPerMinute: 2 } });
    try {
      const attempt = () => exchange(limited.url, { appid: 'admin', secret: limited.adminSecret, code: 'A'.repeat(32) });
      expect((await attempt()).body.errcode).toBe(40029);
      expect((await attempt()).body.errcode).toBe(40029);
      const third = await request(limited.url)
        .post('/sns/oauth2/access_token')
        .type('form')
        .send({ appid: 'admin', secret: limited.adminSecret, code: 'A'.repeat(32), grant_type: 'authorization_code' });
      expect(third.status).toBe(429);
      expect(third.body.errcode).toBe(45011);
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      for (let i = 0; i < 2; i += 1) expect((await request(limited.url).get(`/sns/oauth2/qrconnect?${qrconnectQuery()}`)).status).toBe(201);
      expectProblem(await request(limited.url).get(`/sns/oauth2/qrconnect?${qrconnectQuery()}`), 429, 'too_many_requests');
    } finally {
      await limited.close();
    }
  });
});

describe('a Redis outage', () => {
  it('fails closed: qrconnect 503 problem+json, the token endpoint 503 errcode -1, both with Retry-After', async () => {
    const privateRedis = await startPrivateRedis();
    const store = new RedisStore(privateRedis.url, { prefix: 'qr-outage:' });
    // Rate limits on: the limiter's counters are in the same store and must fail closed too.
    const harness = await startProvider(store);
    try {
      const code = await freshCode(harness);
      await privateRedis.stop();
      const page = await request(harness.url).get(`/sns/oauth2/qrconnect?${qrconnectQuery()}`);
      expectProblem(page, 503);
      expect(page.headers['retry-after']).toBeDefined();
      const res = await request(harness.url)
        .post('/sns/oauth2/access_token')
        .type('form')
        .send({ appid: 'shop', secret: harness.shopSecret, code, grant_type: 'authorization_code' });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ errcode: -1, errmsg: expect.any(String) });
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      await harness.close();
      await store.close();
      await privateRedis.stop();
    }
  });
});
