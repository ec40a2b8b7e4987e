import type { Server } from 'node:http';
import express from 'express';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { jwksHandler, KeySet, requireBearer, TokenError, TokenService } from '../../lib/tokens';
import { loadJose, nowSeconds } from '../helpers/jose-tokens';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

const issuer = 'https://auth.example.test';

describe('TokenService.issueAccessToken', () => {
  const keys = KeySet.generate('ES256', 'at-1');
  const service = new TokenService({ keys, issuer });

  it('signs an at+jwt that jose verifies, with iss, sub, aud, exp, iat, jti, scope, roles, client_id and gid', async () => {
    const jose = await loadJose();
    const issued = service.issueAccessToken({
      subject: 'alice',
      audience: 'shop-api',
      scope: ['orders:read', 'orders:write'],
      roles: ['admin'],
      clientId: 'shop',
      grantId: 'g-1',
    });
    const jwks = jose.createLocalJWKSet(keys.publicJwks() as never);
    const { payload, protectedHeader } = await jose.jwtVerify(issued.token, jwks, {
      issuer,
      audience: 'shop-api',
      typ: 'at+jwt',
      algorithms: ['ES256'],
    });
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: 'at-1', typ: 'at+jwt' });
    expect(payload).toMatchObject({
      sub: 'alice',
      scope: 'orders:read orders:write',
      roles: ['admin'],
      client_id: 'shop',
      gid: 'g-1',
      jti: issued.jti,
    });
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(issued.expiresIn).toBe(3600);
    expect(Math.abs(payload.iat! - nowSeconds())).toBeLessThanOrEqual(1);
  });

  it('honours expiresInSeconds (QR login passes 7200)', async () => {
    const jose = await loadJose();
    const { token, expiresIn } = service.issueAccessToken({ subject: 'alice', audience: 'shop-api', expiresInSeconds: 7200 });
    const claims = jose.decodeJwt(token);
    expect([expiresIn, claims.exp! - claims.iat!]).toEqual([7200, 7200]);
  });

  it('gives every token its own jti', () => {
    const jtis = new Set(Array.from({ length: 20 }, () => service.issueAccessToken({ subject: 'a', audience: 'b' }).jti));
    expect(jtis.size).toBe(20);
  });

  it('verifies its own access tokens and refuses an ID token presented as one', async () => {
    const { token } = service.issueAccessToken({ subject: 'alice', audience: 'shop-api' });
    await expect(service.verifyAccessToken(token, { audience: 'shop-api' })).resolves.toMatchObject({ claims: { sub: 'alice' } });
    const idToken = service.issueIdToken({ subject: 'alice', audience: 'shop-api' }).token;
    await expect(service.verifyAccessToken(idToken, { audience: 'shop-api' })).rejects.toMatchObject({ reason: 'wrong_typ' });
    await expect(service.verifyAccessToken(token, { audience: 'admin-api' })).rejects.toMatchObject({ reason: 'wrong_audience' });
  });

  it('signs with the active key after a rotation, while tokens of the old key still verify', async () => {
    const oldKeys = KeySet.generate('RS256', 'old');
    const old = new TokenService({ keys: oldKeys, issuer });
    const oldToken = old.issueAccessToken({ subject: 'alice', audience: 'api' }).token;
    const fresh = KeySet.generate('RS256', 'new');
    const rotated = new KeySet(
      [
        { kid: 'new', alg: 'RS256', privateKey: fresh.signingKey.key },
        { kid: 'old', alg: 'RS256', publicKey: oldKeys.find('old', 'RS256') },
      ],
      { activeKid: 'new' },
    );
    const service2 = new TokenService({ keys: rotated, issuer });
    const jose = await loadJose();
    expect(jose.decodeProtectedHeader(service2.issueAccessToken({ subject: 'alice', audience: 'api' }).token).kid).toBe('new');
    await expect(service2.verifyAccessToken(oldToken, { audience: 'api' })).resolves.toBeDefined();
  });

  it.each([
    ['no subject', { audience: 'a' }, /subject/],
    ['no audience', { subject: 'a' }, /audience/],
    ['a lifetime over a day', { subject: 'a', audience: 'b', expiresInSeconds: 90_000 }, /expiresInSeconds/],
    ['roles that are not strings', { subject: 'a', audience: 'b', roles: [1] }, /roles/],
  ])('refuses %s', (_name, input, message) => {
    expect(() => service.issueAccessToken(input as never)).toThrow(message);
  });
});

describe('TokenService.issueIdToken', () => {
  const keys = KeySet.generate('RS256', 'id-1');
  const service = new TokenService({ keys, issuer });

  it('signs an ID token with iss, sub, aud, exp, iat, name and nonce, living 300 s by default', async () => {
    const jose = await loadJose();
    const { token, expiresIn } = service.issueIdToken({
      subject: 'alice',
      audience: 'shop',
      name: 'Alice',
      nonce: 'n-1',
      authTime: 1,
      sessionId: 'sid-1',
      claims: { email: 'a@example.test' },
    });
    const { payload, protectedHeader } = await jose.jwtVerify(token, jose.createLocalJWKSet(keys.publicJwks() as never), {
      issuer,
      audience: 'shop',
      algorithms: ['RS256'],
    });
    expect(protectedHeader).toMatchObject({ alg: 'RS256', kid: 'id-1', typ: 'JWT' });
    expect(payload).toMatchObject({ sub: 'alice', name: 'Alice', nonce: 'n-1', auth_time: 1, sid: 'sid-1', email: 'a@example.test' });
    expect([expiresIn, payload.exp! - payload.iat!]).toEqual([300, 300]);
  });

  it('refuses extra claims that would override registered ones', () => {
    expect(() => service.issueIdToken({ subject: 'alice', audience: 'shop', claims: { sub: 'admin' } })).toThrow(/registered claim "sub"/);
  });

  it('refuses an ID-token lifetime over an hour (spec §2.8)', () => {
    expect(() => new TokenService({ keys, issuer, idTokenTtlSeconds: 7200 })).toThrow(/idTokenTtlSeconds/);
  });
});

describe('TokenService options', () => {
  it('refuses a key set without a signing key, a missing issuer and a missing KeySet', () => {
    const publicOnly = new KeySet([{ kid: 'p', alg: 'ES256', publicKey: KeySet.generate('ES256').publicJwks().keys[0] as never }]);
    expect(() => new TokenService({ keys: publicOnly, issuer })).toThrow(/no signing key/);
    expect(() => new TokenService({ keys: KeySet.generate('ES256'), issuer: '' })).toThrow(/issuer/);
    expect(() => new TokenService({ keys: {} as never, issuer })).toThrow(/keys must be a KeySet/);
  });

  it('refuses revocation calls without a store', () => {
    const service = new TokenService({ keys: KeySet.generate('ES256'), issuer });
    expect(() => service.isRevoked({ gid: 'g' })).toThrow(/store/);
  });
});

describe('TokenService with a store: revocation end to end', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let server: Server;
  let service: TokenService;

  beforeAll(async () => {
    redis = await testRedisStore('token-service');
    const keys = KeySet.generate('ES256', 'k1');
    service = new TokenService({ keys, issuer, store: redis.store, accessTokenTtlSeconds: 120 });
    const app = express();
    app.get('/.well-known/jwks.json', jwksHandler(keys));
    app.get(
      '/api',
      requireBearer({
        keys,
        algorithms: ['ES256'],
        issuer,
        audience: 'api',
        typ: 'at+jwt',
        isRevoked: (claims) => service.isRevoked(claims),
      }),
      (req, res) => {
        res.json({ sub: req.auth?.claims.sub });
      },
    );
    app.use(errorHandler({ log: false }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await redis.cleanup();
  });

  it('revokeGrant makes requireBearer refuse the access tokens of that grant, even cached ones', async () => {
    const grantId = 'grant-e2e';
    const { token } = service.issueAccessToken({ subject: 'alice', audience: 'api', grantId });
    const unrelated = service.issueAccessToken({ subject: 'bob', audience: 'api', grantId: 'other' }).token;
    const { token: refreshToken } = await service.refreshTokens!.issue({ clientId: 'shop', subject: 'alice', grantId });
    await request(server).get('/api').set('Authorization', `Bearer ${token}`).expect(200);
    await service.revokeGrant(grantId);
    expectProblem(await request(server).get('/api').set('Authorization', `Bearer ${token}`), 401, 'invalid_token');
    await request(server).get('/api').set('Authorization', `Bearer ${unrelated}`).expect(200);
    await expect(service.refreshTokens!.rotate(refreshToken, 'shop')).rejects.toBeDefined();
    await expect(service.verifyAccessToken(token, { audience: 'api' })).rejects.toBeInstanceOf(TokenError);
  });
});
