import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import express, { type Request, type RequestHandler, type Response } from 'express';
import fc from 'fast-check';
import request from 'supertest';
import { errorHandler } from '../../../lib/http';
import { requireAuth } from '../../../lib/rbac';
import { MemoryStore, RedisStore } from '../../../lib/store';
import { jwksHandler, KeySet, requireBearer, requiredScopes, TokenService, type RequireBearerOptions } from '../../../lib/tokens';
import { OptionsError } from '../../../lib/util/options';
import { athOf, loadDpop, ProofClient } from '../../helpers/dpop-proofs';
import { mutatedJws } from '../../helpers/jwt-attacks';
import { fuzzHttp } from '../../helpers/fuzz';
import { loadJose, nowSeconds } from '../../helpers/jose-tokens';
import { LoopbackServers, type ListeningServer } from '../../helpers/loopback-servers';
import { expectProblem } from '../../helpers/problem';
import { startPrivateRedis, testRedisStore } from '../../helpers/redis';

const issuer = 'https://auth.example.test';
const audience = 'orders-api';
const ALGS = 'algs="ES256 ES384 EdDSA Ed25519 PS256 RS256"';
const servers = new LoopbackServers();

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let issuerKeys: KeySet;
let client: ProofClient;

beforeAll(async () => {
  redis = await testRedisStore('require-dpop');
  issuerKeys = KeySet.generate('ES256');
  client = await ProofClient.create('ES256');
});

afterAll(async () => {
  await servers.closeAll();
  await redis.cleanup();
});

/** An access token of the issuer, minted with jose: bound to `jkt` when given, typed at+jwt. */
async function mintToken(claims: Record<string, unknown> = {}, jkt?: string): Promise<string> {
  const jose = await loadJose();
  const { kid, key } = issuerKeys.signingKey;
  return new jose.SignJWT({ scope: 'orders:read', ...(jkt ? { cnf: { jkt } } : {}), ...claims })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject('alice')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(key);
}

/** requireBearer in front of `/api/*`, echoing req.auth, with `checks` after it, on a real server on port 0. */
async function serve(
  options: Partial<RequireBearerOptions>,
  configure?: (app: express.Express) => void,
  ...checks: RequestHandler[]
): Promise<ListeningServer> {
  const app = express();
  configure?.(app);
  // app.use, not a wildcard route: the same on Express 4 and 5 (this file runs on both).
  app.use(
    '/api',
    requireBearer({ keys: issuerKeys, algorithms: ['ES256'], issuer, audience, ...options } as RequireBearerOptions),
    ...checks,
    (req: Request, res: Response) => {
      res.json({ sub: req.auth?.payload.sub, cnf: req.auth?.payload.cnf ?? null });
    },
  );
  app.use(errorHandler({ log: false }));
  return servers.listen(app);
}

const allowed = (extra: Partial<RequireBearerOptions> = {}) => ({ dpop: { mode: 'allowed' as const, replayStore: redis.store }, ...extra });
const required = (extra: Partial<RequireBearerOptions> = {}) => ({
  dpop: { mode: 'required' as const, replayStore: redis.store },
  ...extra,
});

async function dpopGet(
  target: ListeningServer,
  path: string,
  token: string,
  signer = client,
  shape: { htm?: string; htu?: string; ath?: string } = {},
) {
  const proof = await signer.proof({
    htm: shape.htm ?? 'GET',
    htu: shape.htu ?? `${target.base}${path.split('?')[0]}`,
    accessToken: token,
    ...(shape.ath ? { claims: { ath: shape.ath } } : {}),
  });
  return request(target.server).get(path).set('Authorization', `DPoP ${token}`).set('DPoP', proof);
}

async function ok(response: Promise<request.Response>): Promise<void> {
  const res = await response;
  expect({ status: res.status, body: res.body as unknown }).toMatchObject({ status: 200 });
}

describe("requireBearer({ dpop: 'allowed' })", () => {
  let api: ListeningServer;
  beforeAll(async () => {
    api = await serve(allowed(), undefined);
  });

  it('accepts a DPoP-bound token with a proof of its key, and an unbound Bearer token', async () => {
    const bound = await mintToken({}, client.jkt);
    const res = await dpopGet(api, '/api/orders', bound);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ sub: 'alice', cnf: { jkt: client.jkt } });
    await request(api.server)
      .get('/api/orders')
      .set('Authorization', `Bearer ${await mintToken()}`)
      .expect(200);
  });

  it('accepts the scheme name in any case and a request with a query (the proof names the URL without it)', async () => {
    const bound = await mintToken({}, client.jkt);
    const proof = await client.proof({ htm: 'GET', htu: `${api.base}/api/orders`, accessToken: bound });
    await request(api.server).get('/api/orders?page=2').set('Authorization', `dpop ${bound}`).set('DPoP', proof).expect(200);
  });

  it('refuses a DPoP-bound token sent as Bearer, also once it is in the verified-token cache', async () => {
    const bound = await mintToken({}, client.jkt);
    await ok(dpopGet(api, '/api/orders', bound));
    const res = await request(api.server).get('/api/orders').set('Authorization', `Bearer ${bound}`);
    expectProblem(res, 401, 'invalid_token');
    expect(res.headers['www-authenticate']).toBe(
      `Bearer realm="api", error="invalid_token", error_description="The access token is invalid", DPoP realm="api", ${ALGS}`,
    );
  });

  it('answers no token with both challenges, Bearer and DPoP with its algorithms (RFC 9449 §7.2)', async () => {
    const res = await request(api.server).get('/api/orders');
    expectProblem(res, 401, 'token_required');
    expect(res.headers['www-authenticate']).toBe(`Bearer realm="api", DPoP realm="api", ${ALGS}`);
  });

  it('answers a bad proof with 401 invalid_dpop_proof in the DPoP challenge, the Bearer one after it', async () => {
    const bound = await mintToken({}, client.jkt);
    const res = await dpopGet(api, '/api/orders', bound, client, { htm: 'POST' });
    expectProblem(res, 401, 'invalid_dpop_proof');
    expect(res.headers['www-authenticate']).toBe(
      `DPoP realm="api", error="invalid_dpop_proof", error_description="The DPoP proof is invalid", ${ALGS}, Bearer realm="api"`,
    );
  });

  it('refuses the DPoP scheme without a proof, with two proofs, and with a token not bound to a key', async () => {
    const bound = await mintToken({}, client.jkt);
    expectProblem(await request(api.server).get('/api/orders').set('Authorization', `DPoP ${bound}`), 401, 'invalid_dpop_proof');
    const proof = await client.proof({ htm: 'GET', htu: `${api.base}/api/orders`, accessToken: bound });
    const twice = await request(api.server)
      .get('/api/orders')
      .set('Authorization', `DPoP ${bound}`)
      .set('DPoP', [proof, proof] as never);
    expectProblem(twice, 401, 'invalid_dpop_proof');
    const unbound = await dpopGet(api, '/api/orders', await mintToken());
    expectProblem(unbound, 401, 'invalid_token');
    expect(unbound.headers['www-authenticate']).toMatch(/^DPoP realm="api", error="invalid_token"/);
  });

  it('refuses a proof sent with the Bearer scheme with 400 invalid_request', async () => {
    const token = await mintToken();
    const proof = await client.proof({ htm: 'GET', htu: `${api.base}/api/orders`, accessToken: token });
    const res = await request(api.server).get('/api/orders').set('Authorization', `Bearer ${token}`).set('DPoP', proof);
    expectProblem(res, 400, 'invalid_request');
  });

  it('refuses a replayed proof, and accepts exactly one of 20 parallel requests carrying the same proof', async () => {
    const bound = await mintToken({}, client.jkt);
    const proof = await client.proof({ htm: 'GET', htu: `${api.base}/api/orders`, accessToken: bound });
    const send = () => request(api.server).get('/api/orders').set('Authorization', `DPoP ${bound}`).set('DPoP', proof);
    expect((await send()).status).toBe(200);
    expectProblem(await send(), 401, 'invalid_dpop_proof');
    const fresh = await client.proof({ htm: 'GET', htu: `${api.base}/api/orders`, accessToken: bound });
    const statuses = await Promise.all(
      Array.from(
        { length: 20 },
        async () => (await request(api.server).get('/api/orders').set('Authorization', `DPoP ${bound}`).set('DPoP', fresh)).status,
      ),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 401)).toHaveLength(19);
  });

  it.each([
    ['another method', { htm: 'POST' }],
    ['the method in lower case', { htm: 'get' }],
    ['another path', { htu: '/api/other' }],
    ['a path in another case', { htu: '/API/orders' }],
    ['a trailing slash', { htu: '/api/orders/' }],
    ['a query', { htu: '/api/orders?page=2' }],
    ['another port', { htu: 'port' }],
  ])('refuses a proof made for %s', async (_what, shape: { htm?: string; htu?: string }) => {
    const bound = await mintToken({}, client.jkt);
    const port = (api.server.address() as AddressInfo).port;
    const htu = shape.htu === 'port' ? `http://127.0.0.1:${port + 1}/api/orders` : shape.htu ? `${api.base}${shape.htu}` : undefined;
    expectProblem(
      await dpopGet(api, '/api/orders', bound, client, { ...(shape.htm ? { htm: shape.htm } : {}), ...(htu ? { htu } : {}) }),
      401,
      'invalid_dpop_proof',
    );
  });

  it('refuses a proof with the ath of another token, and a proof of another key than the token is bound to', async () => {
    const bound = await mintToken({}, client.jkt);
    expectProblem(
      await dpopGet(api, '/api/orders', bound, client, { ath: athOf(await mintToken({}, client.jkt)) }),
      401,
      'invalid_dpop_proof',
    );
    const thief = await ProofClient.create('ES256');
    const stolen = await dpopGet(api, '/api/orders', bound, thief);
    expectProblem(stolen, 401, 'invalid_token');
  });

  it('refuses a proof carrying a private key, and alg none and HS256 proofs', async () => {
    const bound = await mintToken({}, client.jkt);
    const htu = `${api.base}/api/orders`;
    const withPrivate = await client.proof({ htm: 'GET', htu, accessToken: bound, header: { jwk: client.privateJwk } });
    expectProblem(
      await request(api.server).get('/api/orders').set('Authorization', `DPoP ${bound}`).set('DPoP', withPrivate),
      401,
      'invalid_dpop_proof',
    );
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const claims = { jti: randomBytes(8).toString('hex'), htm: 'GET', htu, iat: nowSeconds(), ath: athOf(bound) };
    for (const alg of ['none', 'HS256']) {
      const forged = `${b64({ typ: 'dpop+jwt', alg, jwk: client.publicJwk })}.${b64(claims)}.${alg === 'none' ? '' : 'c2ln'}`;
      expectProblem(
        await request(api.server).get('/api/orders').set('Authorization', `DPoP ${bound}`).set('DPoP', forged),
        401,
        'invalid_dpop_proof',
      );
    }
  });

  it('refuses a stale proof and one from the future', async () => {
    const bound = await mintToken({}, client.jkt);
    const htu = `${api.base}/api/orders`;
    for (const iat of [nowSeconds() - 300, nowSeconds() + 300]) {
      const proof = await client.proof({ htm: 'GET', htu, accessToken: bound, claims: { iat } });
      expectProblem(
        await request(api.server).get('/api/orders').set('Authorization', `DPoP ${bound}`).set('DPoP', proof),
        401,
        'invalid_dpop_proof',
      );
    }
  });

  it('keeps requiredScopes working after it, answering in the DPoP challenge', async () => {
    const scoped = await serve(allowed(), undefined, requiredScopes('orders:write'));
    const bound = await mintToken({}, client.jkt);
    const res = await dpopGet(scoped, '/api/orders', bound);
    expectProblem(res, 403, 'insufficient_scope');
    expect(res.headers['www-authenticate']).toBe(
      `DPoP realm="api", error="insufficient_scope", error_description="The access token lacks a required scope", scope="orders:write", ${ALGS}, Bearer realm="api"`,
    );
    const writer = await mintToken({ scope: 'orders:read orders:write' }, client.jkt);
    await ok(dpopGet(scoped, '/api/orders', writer));
  });
});

describe("requireBearer({ dpop: 'required' })", () => {
  let api: ListeningServer;
  beforeAll(async () => {
    api = await serve(required());
  });

  it('accepts only a DPoP-bound token with its proof', async () => {
    await ok(dpopGet(api, '/api/orders', await mintToken({}, client.jkt)));
  });

  it('answers a Bearer token with 401 dpop_required and the DPoP challenge alone', async () => {
    for (const token of [await mintToken(), await mintToken({}, client.jkt)]) {
      const res = await request(api.server).get('/api/orders').set('Authorization', `Bearer ${token}`);
      expectProblem(res, 401, 'dpop_required');
      expect(res.headers['www-authenticate']).toBe(`DPoP realm="api", ${ALGS}`);
    }
    const res = await request(api.server).get('/api/orders');
    expectProblem(res, 401, 'token_required');
    expect(res.headers['www-authenticate']).toBe(`DPoP realm="api", ${ALGS}`);
  });

  it('refuses a nonce-less proof with use_dpop_nonce and a DPoP-Nonce header when nonces are on, then accepts the retry', async () => {
    const nonced = await serve({ dpop: { mode: 'required', replayStore: redis.store, nonce: { secret: randomBytes(32) } } });
    const bound = await mintToken({}, client.jkt);
    const htu = `${nonced.base}/api/orders`;
    const first = await request(nonced.server)
      .get('/api/orders')
      .set('Authorization', `DPoP ${bound}`)
      .set('DPoP', await client.proof({ htm: 'GET', htu, accessToken: bound }));
    expectProblem(first, 401, 'use_dpop_nonce');
    expect(first.headers['www-authenticate']).toMatch(/^DPoP realm="api", error="use_dpop_nonce", error_description="[^"]+", algs="/);
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
    await request(nonced.server)
      .get('/api/orders')
      .set('Authorization', `DPoP ${bound}`)
      .set('DPoP', await client.proof({ htm: 'GET', htu, accessToken: bound, nonce }))
      .expect(200);
  });
});

describe('requireBearer without dpop', () => {
  it('refuses a token bound to a key (any cnf) sent as Bearer, and the DPoP scheme as a malformed request', async () => {
    const api = await serve({});
    for (const cnf of [{ jkt: client.jkt }, { 'x5t#S256': 'bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2' }]) {
      expectProblem(
        await request(api.server)
          .get('/api/orders')
          .set('Authorization', `Bearer ${await mintToken({ cnf })}`),
        401,
        'invalid_token',
      );
    }
    await request(api.server)
      .get('/api/orders')
      .set('Authorization', `Bearer ${await mintToken()}`)
      .expect(200);
    expectProblem(await dpopGet(api, '/api/orders', await mintToken({}, client.jkt)), 400, 'invalid_request');
  });
});

describe('the htu a request is checked against, behind a proxy', () => {
  it('builds it from the origin the kit trusts: X-Forwarded-Proto and -Host only from a trusted proxy', async () => {
    const trusting = await serve(allowed(), (app) => app.set('trust proxy', 'loopback'));
    const bound = await mintToken({}, client.jkt);
    const publicUrl = 'https://api.example.test/api/orders';
    const behind = (target: ListeningServer, htu: string) =>
      client
        .proof({ htm: 'GET', htu, accessToken: bound })
        .then((proof) =>
          request(target.server)
            .get('/api/orders')
            .set('X-Forwarded-Proto', 'https')
            .set('X-Forwarded-Host', 'api.example.test')
            .set('Authorization', `DPoP ${bound}`)
            .set('DPoP', proof),
        );
    expect((await behind(trusting, publicUrl)).status).toBe(200);
    // Not trusting the peer, the same forwarded headers change nothing: the request is for the server's own URL.
    const direct = await serve(allowed());
    expectProblem(await behind(direct, publicUrl), 401, 'invalid_dpop_proof');
    expect((await behind(direct, `${direct.base}/api/orders`)).status).toBe(200);
  });

  it('takes the path the client sent, mount points included', async () => {
    const app = express();
    const router = express.Router();
    router.use(requireBearer({ keys: issuerKeys, algorithms: ['ES256'], issuer, audience, ...allowed() } as RequireBearerOptions));
    router.get('/orders', (_req, res) => {
      res.json({ ok: true });
    });
    app.use('/v1', router);
    app.use(errorHandler({ log: false }));
    const { server, base } = await servers.listen(app);
    const bound = await mintToken({}, client.jkt);
    const send = async (htu: string) =>
      request(server)
        .get('/v1/orders')
        .set('Authorization', `DPoP ${bound}`)
        .set('DPoP', await client.proof({ htm: 'GET', htu, accessToken: bound }));
    expect((await send(`${base}/orders`)).status).toBe(401);
    expect((await send(`${base}/v1/orders`)).status).toBe(200);
  });
});

describe('the replay store', () => {
  it('uses the tokenService store by default, and fails closed with 503 when Redis is down', async () => {
    const privateRedis = await startPrivateRedis();
    const store = new RedisStore(privateRedis.url, { prefix: 'dpop-outage:' });
    try {
      const tokens = new TokenService({ keys: KeySet.generate('ES256'), issuer, store });
      const api = await serve({
        tokenService: tokens,
        dpop: 'required',
        keys: undefined,
        algorithms: undefined,
        issuer: undefined,
      } as never);
      const { token } = tokens.issueAccessToken({ subject: 'alice', audience, clientId: 'spa', dpopJkt: client.jkt });
      await ok(dpopGet(api, '/api/orders', token));
      await privateRedis.stop();
      expectProblem(await dpopGet(api, '/api/orders', token), 503, 'store_unavailable');
    } finally {
      await store.close();
      await privateRedis.stop();
    }
  });

  it('takes a Redis URL, and refuses dpop without any store, an unknown mode and a symmetric algorithm', async () => {
    const base = { keys: issuerKeys, algorithms: ['ES256'] as const, issuer, audience };
    expect(() => requireBearer({ ...base, dpop: 'required' })).toThrow(/replayStore/);
    expect(() => requireBearer({ ...base, dpop: 'sometimes' as never })).toThrow(OptionsError);
    expect(() =>
      requireBearer({ ...base, dpop: { mode: 'required', replayStore: new MemoryStore(), algorithms: ['HS256' as never] } }),
    ).toThrow(/asymmetric/);
    expect(() =>
      requireBearer({ ...base, dpop: { mode: 'required', replayStore: new MemoryStore(), proofMaxAgeSecond: 5 } as never }),
    ).toThrow(/dpop: unknown option "proofMaxAgeSecond" \(did you mean "proofMaxAgeSeconds"\?\)/);
    const handler = requireBearer({
      ...base,
      dpop: { mode: 'allowed', replayStore: { url: 'redis://127.0.0.1:6379', redisOptions: { lazyConnect: true } } },
    });
    expect(handler.name).toBe('requireBearerMiddleware');
  });
});

describe('interoperability', () => {
  it('serves openid-client 6 (its DPoP handle, and its retry with the nonce a use_dpop_nonce answer gives)', async () => {
    const api = await serve({ dpop: { mode: 'required', replayStore: redis.store, nonce: { secret: randomBytes(32) } } });
    const oidc = await import('openid-client');
    const config = new oidc.Configuration({ issuer }, 'spa', undefined, oidc.None());
    oidc.allowInsecureRequests(config);
    const keyPair = await oidc.randomDPoPKeyPair('ES256', { extractable: true });
    const jose = await loadJose();
    const jkt = await jose.calculateJwkThumbprint(await jose.exportJWK(keyPair.publicKey));
    const token = await mintToken({}, jkt);
    const dpop = oidc.getDPoPHandle(config, keyPair);
    const first = await oidc.fetchProtectedResource(config, token, new URL(`${api.base}/api/orders`), 'GET', undefined, undefined, {
      DPoP: dpop,
    });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ sub: 'alice', cnf: { jkt } });
    // The handle now holds the nonce: the next request carries it at once.
    const second = await oidc.fetchProtectedResource(config, token, new URL(`${api.base}/api/orders`), 'GET', undefined, undefined, {
      DPoP: dpop,
    });
    expect(second.status).toBe(200);
  });

  it('accepts proofs of the dpop package', async () => {
    const api = await serve(required());
    const dpop = await loadDpop();
    const pair = await dpop.generateKeyPair('ES256');
    const jose = await loadJose();
    const token = await mintToken({}, await jose.calculateJwkThumbprint(await jose.exportJWK(pair.publicKey)));
    const proof = await dpop.generateProof(pair, `${api.base}/api/orders`, 'GET', undefined, token);
    await request(api.server).get('/api/orders').set('Authorization', `DPoP ${token}`).set('DPoP', proof).expect(200);
  });

  it("lets express-oauth2-jwt-bearer's DPoP verifier accept the kit's DPoP-bound tokens", async () => {
    const store = new MemoryStore();
    const keys = KeySet.generate('ES256');
    const tokens = new TokenService({ keys, issuer, store });
    const app = express();
    app.get('/.well-known/jwks.json', jwksHandler(keys));
    const { server: listening, base } = await servers.listen(app);
    type Auth = (options: Record<string, unknown>) => RequestHandler;
    const { auth } = createRequire(__filename)('express-oauth2-jwt-bearer') as { auth: Auth };
    app.get(
      '/orders',
      auth({
        issuer,
        jwksUri: `${base}/.well-known/jwks.json`,
        audience,
        tokenSigningAlg: 'ES256',
        dpop: { enabled: true, required: true },
      }),
      (req, res) => {
        res.json({ sub: (req as unknown as { auth: { payload: { sub: string } } }).auth.payload.sub });
      },
    );
    const { accessToken } = await tokens.issueTokens({ subject: 'alice', audience, clientId: 'spa', dpopJkt: client.jkt });
    expect(accessToken.tokenType).toBe('DPoP');
    const proof = await client.proof({ htm: 'GET', htu: `${base}/orders`, accessToken: accessToken.token });
    const res = await request(listening).get('/orders').set('Authorization', `DPoP ${accessToken.token}`).set('DPoP', proof);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ sub: 'alice' });
    // And it refuses the same token with another key's proof: the binding is what it checks.
    const thief = await ProofClient.create('ES256');
    const stolen = await thief.proof({ htm: 'GET', htu: `${base}/orders`, accessToken: accessToken.token });
    expect((await request(listening).get('/orders').set('Authorization', `DPoP ${accessToken.token}`).set('DPoP', stolen)).status).toBe(
      401,
    );
    await store.close();
  });

  it('lets requireAuth hand a DPoP request to requireBearer unchanged', async () => {
    const app = express();
    const authenticate = requireAuth({
      bearer: requireBearer({ keys: issuerKeys, algorithms: ['ES256'], issuer, audience, ...required() } as RequireBearerOptions),
      session: (_req, _res, next) => next(new Error('the session must not be asked')),
    });
    app.get('/notes', authenticate, (req, res) => {
      res.json({ sub: req.auth?.payload.sub });
    });
    app.use(errorHandler({ log: false }));
    const target = await servers.listen(app);
    const res = await dpopGet(target, '/notes', await mintToken({}, client.jkt));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ sub: 'alice' });
  });
});

describe('bad input', () => {
  it('answers every malformed Authorization and DPoP header with a 4xx and the RFC error code, never a 5xx', async () => {
    const api = await serve(allowed());
    const bound = await mintToken({}, client.jkt);
    const valid = await client.proof({ htm: 'GET', htu: `${api.base}/api/orders`, accessToken: bound });
    const printable = fc.string({
      unit: fc.constantFrom(...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i))),
      maxLength: 200,
    });
    const authorization = fc.oneof(
      printable,
      printable.map((text) => `DPoP ${text}`),
      printable.map((text) => `Bearer ${text}`),
      fc.constant(`DPoP ${bound}`),
      fc.constant(`Bearer ${bound}`),
    );
    const mutated = mutatedJws(valid, 'AZaz09-_.!'.split(''));
    const proof = fc.oneof(fc.constant(undefined), printable, mutated, fc.constant(`${valid}, ${valid}`));
    await fc.assert(
      fc.asyncProperty(authorization, proof, async (header, dpop) => {
        let call = request(api.server).get('/api/orders').set('Authorization', header);
        if (dpop !== undefined) call = call.set('DPoP', dpop);
        const res = await call;
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(['invalid_request', 'invalid_token', 'invalid_dpop_proof', 'token_required']).toContain(res.body.code);
      }),
      { numRuns: 300, seed: 20261129 },
    );
  });

  it('never answers 5xx to the kit-wide catalogue of malformed requests from a DPoP client', async () => {
    const api = await serve(allowed());
    const bound = await mintToken({}, client.jkt);
    const port = (api.server.address() as AddressInfo).port;
    const report = await fuzzHttp(
      {
        port,
        host: `127.0.0.1:${port}`,
        routes: [{ method: ['GET', 'POST'], path: '/api/orders/:id' }],
        identities: [
          { label: 'anonymous', headers: {} },
          {
            label: 'a DPoP client',
            headers: {
              Authorization: `DPoP ${bound}`,
              DPoP: await client.proof({ htm: 'GET', htu: `${api.base}/api/orders/x1`, accessToken: bound }),
            },
          },
        ],
      },
      { randomCases: 200, deadlineMs: 20_000 },
    );
    expect(report.failures).toEqual([]);
    expect(report.sent).toBeGreaterThan(100);
  });
});
