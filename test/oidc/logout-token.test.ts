import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { errorHandler } from '../../lib/http';
import { RedisStore } from '../../lib/store';
import { ssoSession } from '../../lib/session';
import {
  backchannelLogout,
  BACKCHANNEL_LOGOUT_EVENT,
  oidcProvider,
  validateLogoutToken,
  LogoutTokenRejectedError,
  type OidcProviderOptions,
} from '../../lib/oidc';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { loadJose } from '../helpers/jose-tokens';
import { startPrivateRedis, testRedisStore, type PrivateRedis } from '../helpers/redis';

const SECRET = 'logout-token-secret-0123456789abcdefgh';

describe('validateLogoutToken', () => {
  let fake: FakeIdp;
  let redis: Awaited<ReturnType<typeof testRedisStore>>;

  beforeAll(async () => {
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    redis = await testRedisStore('oidc-logout-token');
  });
  afterAll(async () => {
    await fake.close();
    await redis.cleanup();
  });

  const provider = (extra: Partial<OidcProviderOptions> = {}) =>
    oidcProvider({
      issuer: fake.issuer,
      clientId: 'shop',
      clientSecret: SECRET,
      redirectUri: 'https://auth.example.test/cb',
      allowInsecureLocalDevelopment: true,
      ...extra,
    });

  async function mint(claims: Record<string, unknown>, alg = 'RS256', typ: string | null = 'logout+jwt'): Promise<string> {
    const jose = await loadJose();
    const key = fake.keys[0]!;
    return new jose.SignJWT(claims).setProtectedHeader({ alg, kid: key.kid!, ...(typ === null ? {} : { typ }) }).sign(key.privateKey);
  }

  describe('typ and age (Back-Channel Logout 1.0 §2.4, ASVS 10.5.5)', () => {
    it('refuses a logout token without typ logout+jwt, or typed as an access token', async () => {
      await expect(validateLogoutToken(provider(), redis.store, await mint(claims(), 'RS256', null))).rejects.toThrow(/typ/);
      await expect(validateLogoutToken(provider(), redis.store, await mint(claims(), 'RS256', 'JWT'))).rejects.toThrow(/typ/);
      await expect(validateLogoutToken(provider(), redis.store, await mint(claims(), 'RS256', 'at+jwt'))).rejects.toThrow(/typ/);
    });

    it('accepts the typ as RFC 7515 compares it (application/ prefix, any case)', async () => {
      await expect(
        validateLogoutToken(provider(), redis.store, await mint(claims(), 'RS256', 'application/Logout+JWT')),
      ).resolves.toMatchObject({
        sid: 'sid-1',
      });
    });

    it('with allowUntypedLogoutTokens accepts an untyped token or JWT, still not another type', async () => {
      const lenient = provider({ allowUntypedLogoutTokens: true });
      await expect(validateLogoutToken(lenient, redis.store, await mint(claims(), 'RS256', null))).resolves.toMatchObject({ sid: 'sid-1' });
      await expect(validateLogoutToken(lenient, redis.store, await mint(claims(), 'RS256', 'JWT'))).resolves.toMatchObject({
        sid: 'sid-1',
      });
      await expect(validateLogoutToken(lenient, redis.store, await mint(claims(), 'RS256', 'at+jwt'))).rejects.toThrow(/typ/);
    });

    it('refuses a logout token issued longer ago than logoutTokenMaxAgeSeconds (default 120), though not expired', async () => {
      const now = Math.floor(Date.now() / 1000);
      const old = await mint(claims({ iat: now - 180, exp: now + 600 }));
      await expect(validateLogoutToken(provider(), redis.store, old)).rejects.toBeInstanceOf(LogoutTokenRejectedError);
      const recent = await mint(claims({ iat: now - 60, exp: now + 600 }));
      await expect(validateLogoutToken(provider(), redis.store, recent)).resolves.toMatchObject({ sid: 'sid-1' });
      const strict = provider({ logoutTokenMaxAgeSeconds: 30 });
      await expect(validateLogoutToken(strict, redis.store, await mint(claims({ iat: now - 60, exp: now + 600 })))).rejects.toThrow();
    });
  });

  function claims(extra: Record<string, unknown> = {}): Record<string, unknown> {
    const now = Math.floor(Date.now() / 1000);
    return {
      iss: fake.issuer,
      aud: 'shop',
      iat: now,
      exp: now + 60,
      jti: randomBytes(8).toString('hex'),
      sid: 'sid-1',
      events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
      ...extra,
    };
  }

  it('returns issuer, sid and sub of a valid token', async () => {
    const request = await validateLogoutToken(provider(), redis.store, await mint(claims({ sub: 'u1' })));
    expect(request).toMatchObject({ issuer: fake.issuer, sid: 'sid-1', sub: 'u1' });
  });

  it('refuses a token without jti', async () => {
    const { jti: _jti, ...rest } = claims();
    await expect(validateLogoutToken(provider(), redis.store, await mint(rest))).rejects.toBeInstanceOf(LogoutTokenRejectedError);
    await expect(validateLogoutToken(provider(), redis.store, await mint(rest))).rejects.toMatchObject({ code: 'invalid_logout_token' });
  });

  it('refuses an ID token replayed as a logout token (it carries a nonce and no events)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const idToken = await mint({ iss: fake.issuer, aud: 'shop', iat: now, exp: now + 60, sub: 'u1', nonce: 'n', jti: 'j-id' });
    await expect(validateLogoutToken(provider(), redis.store, idToken)).rejects.toThrow(/events|nonce/);
  });

  it('refuses an unsigned logout token and one signed HS256 with the client secret', async () => {
    const jose = await loadJose();
    const unsigned = new jose.UnsecuredJWT(claims()).encode();
    await expect(validateLogoutToken(provider(), redis.store, unsigned)).rejects.toBeInstanceOf(LogoutTokenRejectedError);
    const hmac = await new jose.SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SECRET));
    await expect(validateLogoutToken(provider(), redis.store, hmac)).rejects.toThrow(/algorithm/);
  });

  it('refuses the second use of a jti, also across provider instances sharing the store', async () => {
    const token = await mint(claims());
    await validateLogoutToken(provider(), redis.store, token);
    await expect(validateLogoutToken(provider(), redis.store, token)).rejects.toThrow(/already used/);
  });

  it('does not burn the jti of a token refused for another reason', async () => {
    const jti = randomBytes(8).toString('hex');
    await expect(validateLogoutToken(provider(), redis.store, await mint(claims({ jti, aud: 'other' })))).rejects.toThrow(/audience/);
    await expect(validateLogoutToken(provider(), redis.store, await mint(claims({ jti })))).resolves.toMatchObject({ jti });
  });
});

describe('backchannelLogout when the store is down', () => {
  let fake: FakeIdp;
  let privateRedis: PrivateRedis;
  let store: RedisStore;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    privateRedis = await startPrivateRedis();
    store = new RedisStore(privateRedis.url, { prefix: 'bcl:' });
    const corp = oidcProvider({
      issuer: fake.issuer,
      clientId: 'shop',
      clientSecret: SECRET,
      redirectUri: 'https://auth.example.test/cb',
      allowInsecureLocalDevelopment: true,
      store,
    });
    const app = express();
    app.use(
      ssoSession({
        store,
        cookieDomain: 'example.test',
        secret: randomBytes(32).toString('hex'),
        loginUrl: 'https://auth.example.test/login',
      }),
    );
    app.post('/backchannel-logout', backchannelLogout(corp));
    app.use(errorHandler({ log: false }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/backchannel-logout`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await store.close();
    await privateRedis.stop();
    await fake.close();
  });

  it('answers 503 with Retry-After, never 200, when Redis is unreachable', async () => {
    const jose = await loadJose();
    const key = fake.keys[0]!;
    const now = Math.floor(Date.now() / 1000);
    const token = await new jose.SignJWT({
      iss: fake.issuer,
      aud: 'shop',
      iat: now,
      exp: now + 60,
      jti: 'j-down',
      sid: 's',
      events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid!, typ: 'logout+jwt' })
      .sign(key.privateKey);
    await privateRedis.stop();
    const started = Date.now();
    const answer = await fetch(url, { method: 'POST', body: new URLSearchParams({ logout_token: token }) });
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).not.toBeNull();
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
