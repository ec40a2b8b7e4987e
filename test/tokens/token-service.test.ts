import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { MemoryStore, RedisStore } from '../../lib/store';
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
    const { token, expiresIn } = service.issueAccessToken({
      subject: 'alice',
      audience: 'shop-api',
      clientId: 'shop',
      expiresInSeconds: 7200,
    });
    const claims = jose.decodeJwt(token);
    expect([expiresIn, claims.exp! - claims.iat!]).toEqual([7200, 7200]);
  });

  it('gives every token its own jti', () => {
    const jtis = new Set(Array.from({ length: 20 }, () => service.issueAccessToken({ subject: 'a', audience: 'b', clientId: 'shop' }).jti));
    expect(jtis.size).toBe(20);
  });

  it('verifies its own access tokens and refuses an ID token presented as one', async () => {
    const { token } = service.issueAccessToken({ subject: 'alice', audience: 'shop-api', clientId: 'shop' });
    await expect(service.verifyAccessToken(token, { audience: 'shop-api' })).resolves.toMatchObject({ claims: { sub: 'alice' } });
    const idToken = service.issueIdToken({ subject: 'alice', audience: 'shop-api' }).token;
    await expect(service.verifyAccessToken(idToken, { audience: 'shop-api' })).rejects.toMatchObject({ reason: 'wrong_typ' });
    await expect(service.verifyAccessToken(token, { audience: 'admin-api' })).rejects.toMatchObject({ reason: 'wrong_audience' });
  });

  it('verifies an access token it signed in this process from memory, still checking the audience asked for', async () => {
    const roles = ['reader'];
    const audience = ['shop-api', 'admin-api'];
    const { token } = service.issueAccessToken({ subject: 'alice', audience, clientId: 'shop', roles });
    // What the caller passed in is never frozen by being remembered.
    expect(Object.isFrozen(roles) || Object.isFrozen(audience)).toBe(false);
    const fromMemory = await service.verifyAccessToken(token, { audience: ['other-api', 'admin-api'] });
    // Served from memory: the claims are the remembered, frozen ones (as requireBearer's cached claims are).
    expect(Object.isFrozen(fromMemory.claims)).toBe(true);
    expect(fromMemory.claims).toMatchObject({ sub: 'alice', client_id: 'shop', roles: ['reader'], iss: issuer });
    expect(fromMemory.header).toMatchObject({ alg: 'ES256', typ: 'at+jwt', kid: 'at-1' });
    await expect(service.verifyAccessToken(token, { audience: 'billing-api' })).rejects.toMatchObject({ reason: 'wrong_audience' });
    // Another service with the same keys remembers nothing: it checks the signature and returns the same claims.
    const verifier = new TokenService({ keys, issuer });
    const checked = await verifier.verifyAccessToken(token, { audience: 'admin-api' });
    expect(Object.isFrozen(checked.claims)).toBe(false);
    expect(checked.claims).toEqual(fromMemory.claims);
    expect(checked.header).toEqual(fromMemory.header);
    // A token differing in one signature character is another text: never served from memory, refused.
    const tampered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    await expect(service.verifyAccessToken(tampered, { audience: 'admin-api' })).rejects.toBeInstanceOf(TokenError);
  });

  it('signs with the active key after a rotation, while tokens of the old key still verify', async () => {
    const oldKeys = KeySet.generate('RS256', 'old');
    const old = new TokenService({ keys: oldKeys, issuer });
    const oldToken = old.issueAccessToken({ subject: 'alice', audience: 'api', clientId: 'shop' }).token;
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
    expect(jose.decodeProtectedHeader(service2.issueAccessToken({ subject: 'alice', audience: 'api', clientId: 'shop' }).token).kid).toBe(
      'new',
    );
    await expect(service2.verifyAccessToken(oldToken, { audience: 'api' })).resolves.toBeDefined();
  });

  it.each([
    ['no subject', { audience: 'a', clientId: 'shop' }, /subject/],
    ['no audience', { subject: 'a', clientId: 'shop' }, /audience/],
    ['no client (RFC 9068 requires client_id)', { subject: 'a', audience: 'b' }, /clientId must be a non-empty string/],
    ['a lifetime over a day', { subject: 'a', audience: 'b', clientId: 'shop', expiresInSeconds: 90_000 }, /expiresInSeconds/],
    ['roles that are not strings', { subject: 'a', audience: 'b', clientId: 'shop', roles: [1] }, /roles/],
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

  it('refuses an ID-token lifetime over an hour', () => {
    expect(() => new TokenService({ keys, issuer, idTokenLifetimeSeconds: 7200 })).toThrow(/idTokenLifetimeSeconds/);
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

describe('TokenService access tokens follow RFC 9068', () => {
  // RFC 9068 §2.2: an at+jwt carries iss, exp, aud, sub, client_id, iat and jti.
  const REQUIRED = ['iss', 'exp', 'aud', 'sub', 'client_id', 'iat', 'jti'];
  let store: MemoryStore;
  let service: TokenService;
  beforeAll(() => {
    store = new MemoryStore();
    service = new TokenService({ keys: KeySet.generate('ES256', 'k9068'), issuer, store });
  });
  afterAll(() => store.close());

  async function expectRfc9068(token: string): Promise<void> {
    const jose = await loadJose();
    expect(jose.decodeProtectedHeader(token).typ).toBe('at+jwt');
    const payload = jose.decodeJwt(token);
    expect(REQUIRED.filter((claim) => payload[claim] === undefined)).toEqual([]);
  }

  it('puts every required claim into each at+jwt the service can mint', async () => {
    const minimal = service.issueAccessToken({ subject: 'alice', audience: 'api', clientId: 'shop' });
    const full = service.issueAccessToken({
      subject: 'alice',
      audience: ['api', 'admin'],
      clientId: 'shop',
      scope: 'a b',
      roles: ['r'],
      grantId: 'g-9068',
      expiresInSeconds: 60,
    });
    const pair = await service.issueTokens({ subject: 'bob', audience: 'api', clientId: 'shop' });
    const redeemed = await service.redeemRefreshToken(pair.refreshToken.token, { clientId: 'shop', audience: 'api' });
    for (const token of [minimal.token, full.token, pair.accessToken.token, redeemed.accessToken.token]) await expectRfc9068(token);
  });

  it('refuses to mint an at+jwt without a client, rather than claiming a type it does not follow', () => {
    expect(() => service.issueAccessToken({ subject: 'alice', audience: 'api' } as never)).toThrow(/clientId must be a non-empty string/);
  });

  it('types ID tokens JWT, never at+jwt, so they cannot pass as access tokens', async () => {
    const jose = await loadJose();
    expect(jose.decodeProtectedHeader(service.issueIdToken({ subject: 'alice', audience: 'shop' }).token).typ).toBe('JWT');
  });

  it('refuses an access token lacking client_id at verification, even when signed by its keys', async () => {
    const jose = await loadJose();
    const keys = KeySet.generate('ES256', 'k-noclient');
    const strict = new TokenService({ keys, issuer });
    const now = nowSeconds();
    const token = await new jose.SignJWT({ iss: issuer, aud: 'api', sub: 'alice', iat: now, exp: now + 60, jti: 'j-1' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k-noclient', typ: 'at+jwt' })
      .sign(keys.signingKey.key);
    await expect(strict.verifyAccessToken(token, { audience: 'api' })).rejects.toMatchObject({
      reason: 'missing_claim',
      claim: 'client_id',
    });
  });
});

describe('TokenService with a store: revocation end to end', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let server: Server;
  let service: TokenService;
  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

  beforeAll(async () => {
    redis = await testRedisStore('token-service');
    const keys = KeySet.generate('ES256', 'k1');
    service = new TokenService({ keys, issuer, store: redis.store, accessTokenLifetimeSeconds: 120 });
    // Wired as docs/tokens.md shows: the service is the only source of keys, issuer and revocations.
    const app = express();
    app.get('/api', requireBearer({ tokenService: service, audience: 'api' }), (req, res) => {
      res.json({ sub: req.auth?.payload.sub });
    });
    app.use(errorHandler({ log: false }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await redis.cleanup();
  });

  it('refuses the access tokens of a family once one of its rotated refresh tokens is replayed; other families pass', async () => {
    const victim = await service.issueTokens({ subject: 'alice', audience: 'api', clientId: 'shop', scope: 'orders:read' });
    const bystander = await service.issueTokens({ subject: 'bob', audience: 'api', clientId: 'shop' });
    const rotated = await service.redeemRefreshToken(victim.refreshToken.token, { clientId: 'shop', audience: 'api' });
    // Both of the victim's access tokens work, and get cached by requireBearer.
    await request(server).get('/api').set(bearer(victim.accessToken.token)).expect(200);
    await request(server).get('/api').set(bearer(rotated.accessToken.token)).expect(200);

    // The attacker (or the victim) replays the refresh token that was already rotated.
    await expect(service.redeemRefreshToken(victim.refreshToken.token, { clientId: 'shop', audience: 'api' })).rejects.toMatchObject({
      reason: 'reused',
    });

    expectProblem(await request(server).get('/api').set(bearer(victim.accessToken.token)), 401, 'invalid_token');
    expectProblem(await request(server).get('/api').set(bearer(rotated.accessToken.token)), 401, 'invalid_token');
    await expect(service.redeemRefreshToken(rotated.refreshToken.token, { clientId: 'shop', audience: 'api' })).rejects.toBeDefined();
    const other = await request(server).get('/api').set(bearer(bystander.accessToken.token)).expect(200);
    expect(other.body.sub).toBe('bob');
  });

  it('refuses the access tokens of a family whose refresh token another client presents', async () => {
    const victim = await service.issueTokens({ subject: 'alice', audience: 'api', clientId: 'shop' });
    await request(server).get('/api').set(bearer(victim.accessToken.token)).expect(200);
    await expect(service.redeemRefreshToken(victim.refreshToken.token, { clientId: 'admin', audience: 'api' })).rejects.toMatchObject({
      reason: 'client_mismatch',
    });
    expectProblem(await request(server).get('/api').set(bearer(victim.accessToken.token)), 401, 'invalid_token');
  });

  it('revokeGrant makes requireBearer refuse the access tokens of that grant, even cached ones', async () => {
    const grantId = 'grant-e2e';
    const { token } = service.issueAccessToken({ subject: 'alice', audience: 'api', clientId: 'shop', grantId });
    const unrelated = service.issueAccessToken({ subject: 'bob', audience: 'api', clientId: 'shop', grantId: 'other' }).token;
    const { token: refreshToken } = await service.refreshTokens!.issue({ clientId: 'shop', subject: 'alice', grantId });
    await request(server).get('/api').set(bearer(token)).expect(200);
    await service.revokeGrant(grantId);
    expectProblem(await request(server).get('/api').set(bearer(token)), 401, 'invalid_token');
    await request(server).get('/api').set(bearer(unrelated)).expect(200);
    await expect(service.refreshTokens!.rotate(refreshToken, 'shop')).rejects.toBeDefined();
    await expect(service.verifyAccessToken(token, { audience: 'api' })).rejects.toBeInstanceOf(TokenError);
  });

  it('refuses a token signed by the service key with every claim but another typ (an ID or logout token)', async () => {
    const jose = await loadJose();
    const now = nowSeconds();
    const { kid, key } = service.keys.signingKey;
    const claims = { iss: issuer, aud: 'api', sub: 'alice', client_id: 'shop', iat: now, exp: now + 60, jti: 'j-typ' };
    const asAccess = await new jose.SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' }).sign(key);
    const asOther = await new jose.SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' }).sign(key);
    await request(server).get('/api').set(bearer(asAccess)).expect(200);
    expectProblem(await request(server).get('/api').set(bearer(asOther)), 401, 'invalid_token');
    // An at+jwt without the claims RFC 9068 requires (one signed before client_id was always set) is refused too.
    const { client_id: _clientId, ...withoutClient } = claims;
    const incomplete = await new jose.SignJWT(withoutClient).setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' }).sign(key);
    expectProblem(await request(server).get('/api').set(bearer(incomplete)), 401, 'invalid_token');
  });

  it('refuses one revoked access token of a grant (revokeAccessToken) while its siblings pass', async () => {
    const first = await service.issueTokens({ subject: 'erin', audience: 'api', clientId: 'shop' });
    const sibling = await service.redeemRefreshToken(first.refreshToken.token, { clientId: 'shop', audience: 'api' });
    await request(server).get('/api').set(bearer(first.accessToken.token)).expect(200);
    const jose = await loadJose();
    await service.refreshTokens!.revokeAccessToken(jose.decodeJwt(first.accessToken.token));
    expectProblem(await request(server).get('/api').set(bearer(first.accessToken.token)), 401, 'invalid_token');
    await request(server).get('/api').set(bearer(sibling.accessToken.token)).expect(200);
  });

  it('keeps the grant mark at least as long as the longest access token the service can sign', async () => {
    // Refresh tokens of 10 minutes and access tokens of 2 by default; a caller may still ask for a 24 h one.
    const shortLived = new TokenService({
      keys: service.keys,
      issuer,
      store: redis.store,
      accessTokenLifetimeSeconds: 120,
      refreshTokenLifetimeSeconds: 600,
    });
    const { accessToken } = await shortLived.issueTokens({ subject: 'carol', audience: 'api', clientId: 'shop', expiresInSeconds: 86_400 });
    const jose = await loadJose();
    const gid = jose.decodeJwt(accessToken.token).gid as string;
    await shortLived.revokeGrant(gid);
    expect(await redis.client.pttl(`${redis.prefix}grant:{${gid}}:revoked`)).toBeGreaterThanOrEqual(86_400_000);
  });

  it('serves a resource server in another process through the JWKS and the shared store', async () => {
    const keysUrl = express();
    keysUrl.get('/jwks', jwksHandler(service.keys));
    const jwksServer = keysUrl.listen(0, '127.0.0.1');
    await new Promise((resolve) => jwksServer.once('listening', resolve));
    const otherStore = new RedisStore(redis.client, { prefix: redis.prefix });
    try {
      const api = express();
      const { port } = jwksServer.address() as AddressInfo;
      api.get(
        '/api',
        requireBearer({
          jwksUri: `http://127.0.0.1:${port}/jwks`,
          algorithms: ['ES256'],
          issuer,
          audience: 'api',
          typ: 'at+jwt',
          revocationStore: otherStore,
        }),
        (_req, res) => {
          res.end('ok');
        },
      );
      api.use(errorHandler({ log: false }));
      const victim = await service.issueTokens({ subject: 'dave', audience: 'api', clientId: 'shop' });
      await request(api).get('/api').set(bearer(victim.accessToken.token)).expect(200);
      await service.redeemRefreshToken(victim.refreshToken.token, { clientId: 'shop', audience: 'api' });
      await expect(service.redeemRefreshToken(victim.refreshToken.token, { clientId: 'shop', audience: 'api' })).rejects.toBeDefined();
      expectProblem(await request(api).get('/api').set(bearer(victim.accessToken.token)), 401, 'invalid_token');
    } finally {
      jwksServer.closeAllConnections();
      await new Promise((resolve) => jwksServer.close(resolve));
    }
  });
});

describe('TokenService: the login’s authentication in access tokens', () => {
  it('signs acr, amr and auth_time, keeps them across refresh rotations, and requireBearer({ acr }) reads them', async () => {
    const store = new MemoryStore();
    const service = new TokenService({ keys: KeySet.generate('ES256', 'at-2'), issuer, store });
    const authTime = nowSeconds() - 30;
    const strong = await service.issueTokens({
      subject: 'alice',
      audience: 'api',
      clientId: 'shop',
      authentication: { acr: '2fa', amr: ['pwd', 'otp'], authTime },
    });
    const weak = await service.issueTokens({
      subject: 'bob',
      audience: 'api',
      clientId: 'shop',
      authentication: { acr: '1fa', amr: ['pwd'], authTime },
    });
    const refreshed = await service.redeemRefreshToken(strong.refreshToken.token, { clientId: 'shop', audience: 'api' });
    const claims = (await service.verifyAccessToken(refreshed.accessToken.token, { audience: 'api' })).claims;
    expect(claims).toMatchObject({ acr: '2fa', amr: ['pwd', 'otp'], auth_time: authTime });

    const app = express();
    app.get('/payouts', requireBearer({ tokenService: service, audience: 'api', acr: '2fa', maxAgeSeconds: 300 }), (_req, res) =>
      res.end('ok'),
    );
    app.use(errorHandler({ log: false }));
    const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
    expect((await request(app).get('/payouts').set(bearer(refreshed.accessToken.token))).status).toBe(200);
    expectProblem(await request(app).get('/payouts').set(bearer(weak.accessToken.token)), 401, 'insufficient_user_authentication');
    await store.close();
  });

  it('refuses a malformed authentication', () => {
    const service = new TokenService({ keys: KeySet.generate('ES256', 'at-3'), issuer });
    expect(() => service.issueAccessToken({ subject: 'a', audience: 'api', clientId: 'shop', authentication: { authTime: 1.5 } })).toThrow(
      /authTime/,
    );
    expect(() => service.issueAccessToken({ subject: 'a', audience: 'api', clientId: 'shop', authentication: { amr: [''] } })).toThrow(
      /amr/,
    );
  });
});
