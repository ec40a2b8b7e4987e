/**
 * Attacks on tokens, each a request a real attacker would send, against servers wired as docs/tokens.md shows:
 * an authorization server of our own (TokenService on Redis, a refresh endpoint, an API behind
 * `requireBearer({ tokenService })` and `requiredScopes`), and an API trusting another identity provider's JWKS.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { BadRequestError, errorHandler } from '../../lib/http';
import { jwksHandler, KeySet, RefreshTokenError, requireBearer, requiredScopes, TokenService } from '../../lib/tokens';
import { b64url, loadJose, nowSeconds, rsaPair, signRaw } from '../helpers/jose-tokens';
import { startJwksEndpoint, type JwksEndpoint } from '../helpers/jwks-endpoint';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

const ISSUER = 'https://auth.example.test';
const servers: Server[] = [];

async function listen(app: express.Express): Promise<Server> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  servers.push(server);
  return server;
}

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** The authorization server of docs/tokens.md: keys, a refresh endpoint (RFC 6749 §6) and a protected API. */
function authorizationServer(tokens: TokenService, keys: KeySet): express.Express {
  const app = express();
  app.get('/.well-known/jwks.json', jwksHandler(keys, { maxAgeSeconds: 600 }));
  app.post('/token', express.urlencoded({ extended: false }), async (req: Request, res: Response, next: NextFunction) => {
    try {
      if (req.body.grant_type !== 'refresh_token') throw new BadRequestError({ code: 'unsupported_grant_type' });
      const { accessToken, refreshToken } = await tokens.redeemRefreshToken(String(req.body.refresh_token), {
        clientId: String(req.body.client_id),
        audience: 'shop-api',
      });
      res.set('Cache-Control', 'no-store').json({
        access_token: accessToken.token,
        token_type: 'Bearer',
        expires_in: accessToken.expiresIn,
        refresh_token: refreshToken.token,
      });
    } catch (err) {
      next(err instanceof RefreshTokenError ? new BadRequestError({ code: err.oauthError }) : err);
    }
  });
  app.use('/api', requireBearer({ tokenService: tokens, audience: 'shop-api' }));
  app.get('/api/orders', requiredScopes('orders:read'), (req: Request, res: Response) => {
    res.json({ user: req.auth?.payload.sub, orders: [] });
  });
  app.use(errorHandler({ log: false }));
  return app;
}

describe('token attacks on an authorization server of our own', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let tokens: TokenService;
  let keys: KeySet;
  let server: Server;
  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const refresh = (refreshToken: string, clientId = 'shop') =>
    request(server).post('/token').type('form').send({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });
  const login = () => tokens.issueTokens({ subject: 'alice', audience: 'shop-api', clientId: 'shop', scope: 'orders:read' });

  beforeAll(async () => {
    redis = await testRedisStore('security-tokens');
    keys = KeySet.generate('ES256', '2026-11');
    tokens = new TokenService({ keys, issuer: ISSUER, store: redis.store });
    server = await listen(authorizationServer(tokens, keys));
  });
  afterAll(() => redis.cleanup());

  it('a stolen refresh token used first by the attacker: the victim’s next refresh ends the attacker’s tokens', async () => {
    const victim = await login();
    const stolen = await refresh(victim.refreshToken.token).expect(200);
    await request(server).get('/api/orders').set(bearer(stolen.body.access_token)).expect(200);
    // The victim's client refreshes with the same token: reuse.
    expectProblem(await refresh(victim.refreshToken.token), 400, 'invalid_grant');
    expectProblem(await request(server).get('/api/orders').set(bearer(stolen.body.access_token)), 401, 'invalid_token');
    expectProblem(await refresh(stolen.body.refresh_token), 400, 'invalid_grant');
  });

  it('a refresh token replayed after the victim rotated it: the victim’s access tokens issued before end too', async () => {
    const victim = await login();
    const bystander = await tokens.issueTokens({ subject: 'bob', audience: 'shop-api', clientId: 'shop', scope: 'orders:read' });
    const rotated = await refresh(victim.refreshToken.token).expect(200);
    await request(server).get('/api/orders').set(bearer(victim.accessToken.token)).expect(200);
    expectProblem(await refresh(victim.refreshToken.token), 400, 'invalid_grant');
    for (const token of [victim.accessToken.token, rotated.body.access_token as string]) {
      expectProblem(await request(server).get('/api/orders').set(bearer(token)), 401, 'invalid_token');
    }
    await request(server).get('/api/orders').set(bearer(bystander.accessToken.token)).expect(200);
  });

  it('a refresh token presented by another client', async () => {
    const victim = await login();
    expectProblem(await refresh(victim.refreshToken.token, 'admin'), 400, 'invalid_grant');
    expectProblem(await request(server).get('/api/orders').set(bearer(victim.accessToken.token)), 401, 'invalid_token');
  });

  it('a token of another issuer, signed with its own key under our kid', async () => {
    const jose = await loadJose();
    const now = nowSeconds();
    const forged = await new jose.SignJWT({
      iss: 'https://evil.example.test',
      aud: 'shop-api',
      sub: 'admin',
      client_id: 'shop',
      iat: now,
      exp: now + 600,
      jti: 'x',
      scope: 'orders:read',
    })
      .setProtectedHeader({ alg: 'ES256', kid: '2026-11', typ: 'at+jwt' })
      .sign(KeySet.generate('ES256').signingKey.key);
    expectProblem(await request(server).get('/api/orders').set(bearer(forged)), 401, 'invalid_token');
    const claimingUs = await new jose.SignJWT({
      iss: ISSUER,
      aud: 'shop-api',
      sub: 'admin',
      client_id: 'shop',
      iat: now,
      exp: now + 600,
      jti: 'y',
      scope: 'orders:read',
    })
      .setProtectedHeader({ alg: 'ES256', kid: '2026-11', typ: 'at+jwt' })
      .sign(KeySet.generate('ES256').signingKey.key);
    expectProblem(await request(server).get('/api/orders').set(bearer(claimingUs)), 401, 'invalid_token');
  });

  it('a genuine token of ours issued for another API', async () => {
    const billing = tokens.issueAccessToken({ subject: 'alice', audience: 'billing-api', clientId: 'shop', scope: 'orders:read' });
    expectProblem(await request(server).get('/api/orders').set(bearer(billing.token)), 401, 'invalid_token');
  });

  it('an ID token of ours presented as an access token', async () => {
    const idToken = tokens.issueIdToken({ subject: 'alice', audience: 'shop-api' });
    expectProblem(await request(server).get('/api/orders').set(bearer(idToken.token)), 401, 'invalid_token');
  });

  it('algorithm confusion: HS256 keyed with our published public key, and alg none', async () => {
    const now = nowSeconds();
    const claims = JSON.stringify({
      iss: ISSUER,
      aud: 'shop-api',
      sub: 'admin',
      client_id: 'shop',
      iat: now,
      exp: now + 600,
      jti: 'z',
      scope: 'orders:read',
    });
    const published = (await request(server).get('/.well-known/jwks.json').expect(200)).body.keys[0];
    for (const secret of [JSON.stringify(published), keys.find('2026-11', 'ES256')!.export({ format: 'pem', type: 'spki' }).toString()]) {
      const confused = signRaw(JSON.stringify({ alg: 'HS256', kid: '2026-11', typ: 'at+jwt' }), claims, 'HS256', Buffer.from(secret));
      expectProblem(await request(server).get('/api/orders').set(bearer(confused)), 401, 'invalid_token');
    }
    const unsigned = `${b64url(JSON.stringify({ alg: 'none', kid: '2026-11', typ: 'at+jwt' }))}.${b64url(claims)}.`;
    expectProblem(await request(server).get('/api/orders').set(bearer(unsigned)), 401, 'invalid_token');
  });

  it('a valid token without the scope of the route', async () => {
    const narrow = tokens.issueAccessToken({ subject: 'alice', audience: 'shop-api', clientId: 'shop', scope: 'profile' });
    expectProblem(await request(server).get('/api/orders').set(bearer(narrow.token)), 403, 'insufficient_scope');
  });
});

describe('a random-kid storm against an API trusting an identity provider’s JWKS', () => {
  const current = rsaPair();
  const next = rsaPair();
  const idp = 'https://idp.example.test';
  const endpoints: JwksEndpoint[] = [];
  afterAll(async () => {
    for (const endpoint of endpoints) await endpoint.close();
  });

  const mint = async (key: typeof current, kid: string) => {
    const jose = await loadJose();
    const now = nowSeconds();
    return new jose.SignJWT({ iss: idp, aud: 'shop-api', sub: 'alice', iat: now, exp: now + 600, scope: 'orders:read' })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
      .sign(key.privateKey);
  };

  /** The quick-start API of docs/tokens.md, in front of a JWKS endpoint the test controls. */
  async function api(cacheControl: string | undefined, jwks?: { minAgeSeconds: number }) {
    const endpoint = await startJwksEndpoint([{ ...current.publicKey.export({ format: 'jwk' }), kid: 'idp-1', alg: 'RS256', use: 'sig' }]);
    endpoints.push(endpoint);
    endpoint.cacheControl = cacheControl;
    const app = express();
    app.use(
      '/api',
      requireBearer({ jwksUri: endpoint.jwksUri, ...(jwks ? { jwks } : {}), algorithms: ['RS256'], issuer: idp, audience: 'shop-api' }),
    );
    app.get('/api/orders', requiredScopes('orders:read'), (_req: Request, res: Response) => {
      res.json({ orders: [] });
    });
    app.use(errorHandler({ log: false }));
    return { endpoint, server: await listen(app) };
  }

  /** A forged token with a fresh random kid (the signature is a real one, of another header). */
  async function randomKidForger(): Promise<() => string> {
    const [, payload, signature] = (await mint(current, 'placeholder')).split('.');
    return () =>
      `${b64url(JSON.stringify({ alg: 'RS256', kid: randomBytes(12).toString('base64url'), typ: 'at+jwt' }))}.${payload}.${signature}`;
  }

  it('1,000 requests with random kids make the API fetch the key set at most twice', async () => {
    const { endpoint, server } = await api(undefined);
    await request(server)
      .get('/api/orders')
      .set('Authorization', `Bearer ${await mint(current, 'idp-1')}`)
      .expect(200);
    const forge = await randomKidForger();
    const statuses = new Set<number>();
    for (let wave = 0; wave < 20; wave += 1) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => request(server).get('/api/orders').set('Authorization', `Bearer ${forge()}`)),
      );
      for (const res of answers) statuses.add(res.status);
    }
    expect([...statuses]).toEqual([401]);
    // The first fetch, and the one refetch the 30 s cooldown allows.
    expect(endpoint.fetches).toBeLessThanOrEqual(2);
  });

  it('a key the provider published is accepted on its first token while a storm goes on', async () => {
    // The provider lets its key set be cached for 5 s; the API honours that (minAgeSeconds 0).
    const { endpoint, server } = await api('public, max-age=5', { minAgeSeconds: 0 });
    await request(server)
      .get('/api/orders')
      .set('Authorization', `Bearer ${await mint(current, 'idp-1')}`)
      .expect(200);
    const forge = await randomKidForger();
    let raging = true;
    const storm = (async () => {
      while (raging)
        await Promise.all(Array.from({ length: 20 }, () => request(server).get('/api/orders').set('Authorization', `Bearer ${forge()}`)));
    })();
    try {
      // The storm has spent the one kid-driven refetch its cooldown allows before the provider rotates.
      while (endpoint.fetches < 2) await endpoint.nextFetch();
      // The provider publishes its next key and, once caches had time to see it, signs with it.
      endpoint.keys = [...endpoint.keys, { ...next.publicKey.export({ format: 'jwk' }), kid: 'idp-2', alg: 'RS256', use: 'sig' }];
      const before = endpoint.fetches;
      while (endpoint.fetches === before) await endpoint.nextFetch();
      // That fetch came ahead of the expiry of the set fetched before it: no request had to wait for it.
      const [, previous = 0, latest = 0] = endpoint.fetchedAt;
      expect(latest - previous).toBeLessThan(5000);
      await request(server)
        .get('/api/orders')
        .set('Authorization', `Bearer ${await mint(next, 'idp-2')}`)
        .expect(200);
    } finally {
      raging = false;
      await storm;
    }
  });
});
