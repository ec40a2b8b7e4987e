import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { format } from 'node:util';
import createDebug from 'debug';
import express, { type Request, type RequestHandler, type Response } from 'express';
import fc from 'fast-check';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { MemoryStore, StoreUnavailableError } from '../../lib/store';
import { KeySet, requireBearer, requiredScopes, TokenService, type KeyResolver, type RequireBearerOptions } from '../../lib/tokens';
import { debugChannel } from '../../lib/util/debug';
import {
  buildAttackCorpus,
  createAttackTarget,
  mintValid,
  mutatedJws,
  readsAsSameJws,
  type Attack,
  type AttackTarget,
} from '../helpers/jwt-attacks';
import {
  ecPair,
  loadJose,
  nowSeconds,
  rsaPair,
  startHttpServer,
  startJwksServer,
  type JwksServer,
  type TestHttpServer,
} from '../helpers/jose-tokens';
import { expectProblem } from '../helpers/problem';
import { rawHttp } from '../helpers/raw-http';

const issuer = 'https://auth.example.test';
const audience = 'shop-api';
const servers: Server[] = [];

/** An app with requireBearer (and, when given, route checks) in front of a route that echoes req.auth, on a real server on port 0. */
async function serve(
  options: RequireBearerOptions,
  configure?: (app: express.Express) => void,
  ...checks: RequestHandler[]
): Promise<Server> {
  const app = express();
  configure?.(app);
  app.all('/api', requireBearer(options), ...checks, (req: Request, res: Response) => {
    res.json({
      claims: req.auth?.payload,
      header: req.auth?.header,
      tokenMatches: req.auth?.token === (req.headers.authorization ?? '').slice(7),
    });
  });
  app.use(errorHandler({ log: false }));
  // A larger header limit than Node's 16 KB default, so the middleware's own size limit is what a 16 KB token meets.
  const server = createServer({ maxHeaderSize: 64 * 1024 }, app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return server;
}

afterAll(async () => {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function mint(
  key: KeyObject,
  alg: string,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const jose = await loadJose();
  const now = nowSeconds();
  return new jose.SignJWT({
    iss: issuer,
    aud: audience,
    sub: 'alice',
    iat: now,
    exp: now + 600,
    scope: 'orders:read orders:write',
    ...claims,
  })
    .setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt', ...header } as never)
    .sign(key);
}

/** A KeyResolver over a KeySet that counts lookups, to observe the verified-token cache from outside. */
function countingResolver(keys: KeySet): KeyResolver & { calls: number } {
  const resolver = {
    calls: 0,
    getKey(kid: string | undefined, alg: string) {
      resolver.calls++;
      return keys.getKey(kid, alg);
    },
  };
  return resolver;
}

describe('requireBearer accepts valid tokens', () => {
  it.each(['HS256', 'HS384', 'HS512'] as const)('accepts %s with a secret and sets req.auth', async (alg) => {
    const secret = randomBytes(64);
    const server = await serve({ secret, algorithms: [alg], issuer, audience });
    const token = await mint(createSecretKey(secret), alg);
    const res = await request(server).get('/api').set(bearer(token)).expect(200);
    expect(res.body).toMatchObject({ claims: { sub: 'alice', iss: issuer }, header: { alg, kid: 'k1' }, tokenMatches: true });
  });

  it.each(['RS256', 'PS256', 'ES256'] as const)('accepts %s with a KeySet', async (alg) => {
    const pair = alg === 'ES256' ? ecPair() : rsaPair();
    const server = await serve({ keys: new KeySet([{ kid: 'k1', alg, publicKey: pair.publicKey }]), algorithms: [alg], issuer, audience });
    await request(server)
      .get('/api')
      .set(bearer(await mint(pair.privateKey, alg)))
      .expect(200);
  });

  it('accepts RS256 through a JWKS endpoint', async () => {
    const pair = rsaPair();
    const jwks = await startJwksServer([{ ...pair.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256' }]);
    try {
      const server = await serve({ jwksUri: jwks.jwksUri, algorithms: ['RS256'], issuer, audience });
      await request(server)
        .get('/api')
        .set(bearer(await mint(pair.privateKey, 'RS256')))
        .expect(200);
    } finally {
      await jwks.close();
    }
  });

  it('accepts the scheme name in any case (RFC 7235)', async () => {
    const secret = randomBytes(32);
    const server = await serve({ secret, algorithms: ['HS256'], issuer, audience });
    const token = await mint(createSecretKey(secret), 'HS256');
    await request(server).get('/api').set('Authorization', `bearer ${token}`).expect(200);
    await request(server).get('/api').set('Authorization', `BEARER ${token}`).expect(200);
  });
});

describe('requireBearer checks the typ of access tokens (RFC 9068 §4, ASVS 9.2.2)', () => {
  const pair = ecPair();
  const keys = new KeySet([{ kid: 'k1', alg: 'ES256', publicKey: pair.publicKey }]);
  const typed = (typ: string | undefined) => mint(pair.privateKey, 'ES256', {}, { typ });

  it('accepts at+jwt in any case, with or without application/, by default', async () => {
    const server = await serve({ keys, algorithms: ['ES256'], issuer, audience });
    for (const typ of ['at+jwt', 'application/at+jwt', 'AT+JWT'])
      await request(server)
        .get('/api')
        .set(bearer(await typed(typ)))
        .expect(200);
  });

  it('refuses by default a token typed JWT, an ID or logout token, and one without typ', async () => {
    const server = await serve({ keys, algorithms: ['ES256'], issuer, audience });
    for (const typ of ['JWT', 'logout+jwt', undefined]) {
      expectProblem(
        await request(server)
          .get('/api')
          .set(bearer(await typed(typ))),
        401,
        'invalid_token',
      );
    }
  });

  it('takes another typ for an issuer that types its access tokens otherwise, and false for one that sends none', async () => {
    const jwtTyped = await serve({ keys, algorithms: ['ES256'], issuer, audience, typ: 'JWT' });
    await request(jwtTyped)
      .get('/api')
      .set(bearer(await typed('JWT')))
      .expect(200);
    expectProblem(
      await request(jwtTyped)
        .get('/api')
        .set(bearer(await typed('at+jwt'))),
      401,
      'invalid_token',
    );
    const unchecked = await serve({ keys, algorithms: ['ES256'], issuer, audience, typ: false });
    await request(unchecked)
      .get('/api')
      .set(bearer(await typed(undefined)))
      .expect(200);
    expect(() => requireBearer({ keys, algorithms: ['ES256'], issuer, audience, typ: true as never })).toThrow(/typ must be/);
  });
});

describe('requireBearer RFC 6750 errors', () => {
  const secret = randomBytes(32);
  let server: Server;
  let token: string;
  beforeAll(async () => {
    server = await serve(
      { secret, algorithms: ['HS256'], issuer, audience, realm: 'shop' },
      (app) => app.use(express.urlencoded({ extended: false })),
      requiredScopes('orders:read'),
    );
    token = await mint(createSecretKey(secret), 'HS256');
  });

  it('answers a request without credentials with 401 and a bare challenge', async () => {
    const res = await request(server).get('/api');
    expectProblem(res, 401, 'token_required');
    expect(res.headers['www-authenticate']).toBe('Bearer realm="shop"');
  });

  it.each([
    ['another scheme', 'Basic YWxpY2U6c2VjcmV0'],
    ['a misspelled scheme', 'Baerer abc'],
    ['the scheme without a token', 'Bearer'],
    ['the scheme and a space only', 'Bearer '],
    ['two spaces', 'Bearer  abc.def.ghi'],
    ['no space', 'Bearerabc.def.ghi'],
    ['a token with a space', 'Bearer abc def'],
    ['a token with a quote', 'Bearer abc"def'],
    ['a token with a comma', 'Bearer abc,def'],
    ['a token with a padding sign inside', 'Bearer ab=c'],
    ['a tab separator', 'Bearer\tabc'],
  ])('answers %s with 400 invalid_request', async (_name, header) => {
    const res = await request(server).get('/api').set('Authorization', header);
    expectProblem(res, 400, 'invalid_request');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="shop", error="invalid_request", error_description="[^"]+"$/);
  });

  it('answers two Authorization headers with 400 invalid_request', async () => {
    const res = await request(server)
      .get('/api')
      .set('Authorization', [`Bearer ${token}`, `Bearer ${token}`] as never);
    expectProblem(res, 400, 'invalid_request');
  });

  it.each([
    ['Authorization', 'authorization'],
    ['authorization', 'AUTHORIZATION'],
    ['Authorization', 'aUTHORIZATION'],
  ])('answers two Authorization headers spelt %s and %s with 400 invalid_request, and either alone with 200', async (first, second) => {
    const line = `GET /api HTTP/1.1`;
    const both = await rawHttp(server, line, { Host: 'api.example.test', [first]: `Bearer ${token}`, [second]: `Bearer ${token}` });
    expect(both.status).toBe(400);
    expect(JSON.parse(both.body)).toMatchObject({ code: 'invalid_request' });
    for (const name of [first, second]) {
      expect((await rawHttp(server, line, { Host: 'api.example.test', [name]: `Bearer ${token}` })).status).toBe(200);
    }
  });

  it.each(['Bearer', 'bearer', 'BEARER', 'bEaReR'])('takes the scheme %s in any case', async (scheme) => {
    await request(server).get('/api').set('Authorization', `${scheme} ${token}`).expect(200);
  });

  it('refuses a query token unless allowQueryToken, and a header plus a query token always', async () => {
    expectProblem(await request(server).get(`/api?access_token=${token}`), 400, 'invalid_request');
    const lenient = await serve({ secret, algorithms: ['HS256'], issuer, audience, allowQueryToken: true });
    await request(lenient).get(`/api?access_token=${token}`).expect(200);
    expectProblem(await request(lenient).get(`/api?access_token=${token}`).set(bearer(token)), 400, 'invalid_request');
  });

  it('refuses a body token unless allowBodyToken', async () => {
    expectProblem(await request(server).post('/api').type('form').send({ access_token: token }), 400, 'invalid_request');
    const lenient = await serve({ secret, algorithms: ['HS256'], issuer, audience, allowBodyToken: true }, (app) =>
      app.use(express.urlencoded({ extended: false })),
    );
    await request(lenient).post('/api').type('form').send({ access_token: token }).expect(200);
    expectProblem(
      await request(lenient).post('/api').type('form').set(bearer(token)).send({ access_token: token }),
      400,
      'invalid_request',
    );
  });

  it('leaves an access_token field of a JSON body alone: it is application data, not a credential', async () => {
    const jsonApp = await serve({ secret, algorithms: ['HS256'], issuer, audience }, (app) => app.use(express.json()));
    await request(jsonApp).post('/api').set(bearer(token)).send({ access_token: 'a-github-token' }).expect(200);
    expectProblem(await request(jsonApp).post('/api').send({ access_token: token }), 401, 'token_required');
  });

  it('answers a bad token with 401 invalid_token and a generic description', async () => {
    const res = await request(server)
      .get('/api')
      .set(bearer(`${token.slice(0, -4)}AAAA`));
    expectProblem(res, 401, 'invalid_token');
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="shop", error="invalid_token", error_description="The access token is invalid"',
    );
    expect(JSON.stringify(res.body)).not.toMatch(/signature|jsonwebtoken|jws/i);
  });

  it('says "expired" for an expired token so clients know to refresh', async () => {
    const now = nowSeconds();
    const res = await request(server)
      .get('/api')
      .set(bearer(await mint(createSecretKey(secret), 'HS256', { iat: now - 700, exp: now - 60 })));
    expectProblem(res, 401, 'invalid_token');
    expect(res.headers['www-authenticate']).toContain('error_description="The access token expired"');
  });

  it('answers a token lacking a required scope with 403 insufficient_scope naming the scope', async () => {
    const res = await request(server)
      .get('/api')
      .set(bearer(await mint(createSecretKey(secret), 'HS256', { scope: 'profile' })));
    expectProblem(res, 403, 'insufficient_scope');
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="shop", error="insufficient_scope", error_description="The access token lacks a required scope", scope="orders:read"',
    );
  });

  it('refuses a token older than maxTokenAgeSeconds and one lacking a required claim', async () => {
    const strict = await serve({ secret, algorithms: ['HS256'], issuer, audience, maxTokenAgeSeconds: 60, requiredClaims: ['client_id'] });
    const key = createSecretKey(secret);
    const now = nowSeconds();
    await request(strict)
      .get('/api')
      .set(bearer(await mint(key, 'HS256', { client_id: 'shop' })))
      .expect(200);
    expectProblem(
      await request(strict)
        .get('/api')
        .set(bearer(await mint(key, 'HS256', { client_id: 'shop', iat: now - 120 }))),
      401,
      'invalid_token',
    );
    expectProblem(
      await request(strict)
        .get('/api')
        .set(bearer(await mint(key, 'HS256'))),
      401,
      'invalid_token',
    );
  });

  it("keeps status and challenge with Express's own final handler (no errorHandler mounted)", async () => {
    const app = express();
    app.get('/api', requireBearer({ secret, algorithms: ['HS256'], issuer, audience }), (_req: Request, res: Response) => {
      res.end();
    });
    const missing = await request(app).get('/api');
    expect([missing.status, missing.headers['www-authenticate']]).toEqual([401, 'Bearer realm="api"']);
    const malformed = await request(app).get('/api').set('Authorization', 'Basic x');
    expect(malformed.status).toBe(400);
    expect(malformed.headers['www-authenticate']).toContain('error="invalid_request"');
  });

  it('reads scopes from a scp array too', async () => {
    await request(server)
      .get('/api')
      .set(bearer(await mint(createSecretKey(secret), 'HS256', { scope: undefined, scp: ['orders:read'] })))
      .expect(200);
  });
});

describe('requireBearer({ acr, maxAgeSeconds }): step-up for tokens (RFC 9470)', () => {
  const secret = randomBytes(64);
  const key = createSecretKey(secret);
  let server: Server;
  beforeAll(async () => {
    server = await serve({ secret, algorithms: ['HS256'], issuer, audience, realm: 'payouts', acr: '2fa', maxAgeSeconds: 300 });
  });

  it('accepts a token with acr 2fa (or amr showing two factors) and a recent auth_time', async () => {
    await request(server)
      .get('/api')
      .set(bearer(await mint(key, 'HS256', { acr: '2fa', auth_time: nowSeconds() - 10 })))
      .expect(200);
    await request(server)
      .get('/api')
      .set(bearer(await mint(key, 'HS256', { amr: ['pwd', 'otp'], auth_time: nowSeconds() - 10 })))
      .expect(200);
  });

  it.each([
    ['a one-factor acr', { acr: '1fa', auth_time: 'recent' }],
    ['an unknown acr with one method', { acr: 'urn:idp:gold', amr: ['pwd'], auth_time: 'recent' }],
    ['an auth_time older than max_age', { acr: '2fa', auth_time: 'old' }],
    ['no auth_time', { acr: '2fa' }],
    ['a string auth_time', { acr: '2fa', auth_time: 'string' }],
  ])('answers %s with 401 insufficient_user_authentication naming acr_values and max_age', async (_name, claims) => {
    const authTime = { recent: nowSeconds() - 10, old: nowSeconds() - 301, string: String(nowSeconds()) }[
      String((claims as { auth_time?: string }).auth_time)
    ];
    const token = await mint(key, 'HS256', { ...claims, auth_time: authTime });
    const res = await request(server).get('/api').set(bearer(token));
    expectProblem(res, 401, 'insufficient_user_authentication');
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="payouts", error="insufficient_user_authentication", error_description="A second factor is required within the last 300 seconds", acr_values="2fa", max_age=300',
    );
    expect(res.body).toMatchObject({ acr_values: '2fa', max_age: 300 });
  });

  it('checks the age again for a cached token', async () => {
    const token = await mint(key, 'HS256', { acr: '2fa', auth_time: nowSeconds() - 299 });
    await request(server).get('/api').set(bearer(token)).expect(200);
    const later = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 5000);
    try {
      expectProblem(await request(server).get('/api').set(bearer(token)), 401, 'insufficient_user_authentication');
    } finally {
      later.mockRestore();
    }
  });

  it('refuses acr values it does not order', () => {
    expect(() => requireBearer({ secret, algorithms: ['HS256'], issuer, audience, acr: 'gold' as never })).toThrow(/acr must be one of/);
  });
});

describe('requireBearer refuses the attack corpus over HTTP', () => {
  let attacker: TestHttpServer;
  let target: AttackTarget;
  let corpus: Attack[];
  let server: Server;

  beforeAll(async () => {
    attacker = await startHttpServer((_req, res) => res.end('{"keys":[]}'));
    target = createAttackTarget(attacker.url);
    corpus = await buildAttackCorpus(target);
    server = await serve({
      keys: new KeySet([{ kid: target.kid, alg: 'RS256', publicKey: target.publicKey }]),
      algorithms: ['RS256'],
      issuer: target.issuer,
      audience: target.audience,
      typ: 'at+jwt',
    });
  });
  afterAll(() => attacker.close());

  it('accepts the valid token the corpus is derived from', async () => {
    await request(server)
      .get('/api')
      .set(bearer(await mintValid(target)))
      .expect(200);
  });

  it('answers every hostile token with 401 invalid_token and never contacts jku/x5u', async () => {
    const statuses: Record<string, string> = {};
    for (const attack of corpus) {
      const res = await request(server).get('/api').set(bearer(attack.token));
      statuses[attack.name] = `${res.status} ${res.body.code}`;
    }
    expect(statuses).toEqual(Object.fromEntries(corpus.map((attack) => [attack.name, '401 invalid_token'])));
    expect(attacker.hits).toBe(0);
  });

  it('refuses hostile tokens through a JWKS endpoint too, without contacting jku/x5u', async () => {
    const jwks = await startJwksServer([{ ...target.publicKey.export({ format: 'jwk' }), kid: target.kid, alg: 'RS256' }]);
    try {
      const viaJwks = await serve({
        jwksUri: jwks.jwksUri,
        algorithms: ['RS256'],
        issuer: target.issuer,
        audience: target.audience,
        typ: 'at+jwt',
      });
      for (const attack of corpus) {
        const res = await request(viaJwks).get('/api').set(bearer(attack.token));
        expect([attack.name, res.status]).toEqual([attack.name, 401]);
      }
      expect(attacker.hits).toBe(0);
    } finally {
      await jwks.close();
    }
  });
});

describe('requireBearer property-based fuzzing', () => {
  const secret = randomBytes(32);
  let server: Server;
  let token: string;
  beforeAll(async () => {
    server = await serve({ secret, algorithms: ['HS256'], issuer, audience });
    token = await mint(createSecretKey(secret), 'HS256');
  });

  it('never answers an arbitrary Authorization header with 2xx or 5xx', async () => {
    const printable = fc.string({
      unit: fc.constantFrom(
        ...' \t!"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~'.split(''),
      ),
      maxLength: 80,
    });
    const header = fc.oneof(
      printable,
      printable.map((rest) => `Bearer ${rest}`),
      printable.map((rest) => `bearer${rest}`),
    );
    await fc.assert(
      fc.asyncProperty(header, async (value) => {
        const res = await request(server).get('/api').set('Authorization', value);
        return res.status === 400 || res.status === 401;
      }),
      { numRuns: 150 },
    );
  });

  it('never accepts a mutated or random token, and never fails with 5xx', async () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.'.split('');
    const mutated = mutatedJws(token, alphabet);
    const random = fc.string({ unit: fc.constantFrom(...alphabet), minLength: 1, maxLength: 300 });
    const segments = fc
      .array(
        fc.base64String({ maxLength: 60 }).map((s) => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')),
        { minLength: 1, maxLength: 5 },
      )
      .map((parts) => parts.join('.'));
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutated, random, segments), async (candidate) => {
        if (readsAsSameJws(candidate, token)) return true;
        const res = await request(server).get('/api').set('Authorization', `Bearer ${candidate}`);
        return res.status === 401 || res.status === 400;
      }),
      { numRuns: 200 },
    );
  });
});

describe('requireBearer verified-token cache', () => {
  const pair = ecPair();
  const keys = new KeySet([{ kid: 'k1', alg: 'ES256', publicKey: pair.publicKey }]);

  it('verifies a token once and serves repeats from the cache', async () => {
    const resolver = countingResolver(keys);
    const server = await serve({ keys: resolver, algorithms: ['ES256'], issuer, audience });
    const token = await mint(pair.privateKey, 'ES256');
    for (let i = 0; i < 5; i++) await request(server).get('/api').set(bearer(token)).expect(200);
    expect(resolver.calls).toBe(1);
  });

  it('never serves a cached token past its exp', async () => {
    const server = await serve({ keys, algorithms: ['ES256'], issuer, audience, clockToleranceSeconds: 0 });
    const exp = nowSeconds() + 2;
    const token = await mint(pair.privateKey, 'ES256', { exp });
    await request(server).get('/api').set(bearer(token)).expect(200);
    await request(server).get('/api').set(bearer(token)).expect(200);
    await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 20));
    const res = await request(server).get('/api').set(bearer(token));
    expectProblem(res, 401, 'invalid_token');
  });

  it('does not cache a token accepted only thanks to the clock tolerance (nbf ahead)', async () => {
    const resolver = countingResolver(keys);
    const server = await serve({ keys: resolver, algorithms: ['ES256'], issuer, audience, clockToleranceSeconds: 30 });
    const token = await mint(pair.privateKey, 'ES256', { nbf: nowSeconds() + 20 });
    await request(server).get('/api').set(bearer(token)).expect(200);
    await request(server).get('/api').set(bearer(token)).expect(200);
    expect(resolver.calls).toBe(2);
  });

  it('keeps at most cacheSize entries, evicting the least recently used', async () => {
    const resolver = countingResolver(keys);
    const server = await serve({ keys: resolver, algorithms: ['ES256'], issuer, audience, cacheSize: 2 });
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((sub) => mint(pair.privateKey, 'ES256', { sub })));
    for (const token of [a, b, a, c, a, b] as string[]) await request(server).get('/api').set(bearer(token)).expect(200);
    // a, b verified; a hit; c verified (evicts b); a hit; b verified again.
    expect(resolver.calls).toBe(4);
  });

  it('hands out read-only claims, so one handler cannot change what the next request sees', async () => {
    const app = express();
    app.get('/api', requireBearer({ keys, algorithms: ['ES256'], issuer, audience }), (req: Request, res: Response) => {
      const claims = req.auth!.payload as Record<string, unknown>;
      let changed = true;
      try {
        claims.sub = 'admin';
      } catch {
        changed = false;
      }
      res.json({ changed, sub: claims.sub });
    });
    const token = await mint(pair.privateKey, 'ES256');
    const first = await request(app).get('/api').set(bearer(token)).expect(200);
    const second = await request(app).get('/api').set(bearer(token)).expect(200);
    expect([first.body, second.body]).toEqual([
      { changed: false, sub: 'alice' },
      { changed: false, sub: 'alice' },
    ]);
  });

  it('still consults isRevoked for cached tokens', async () => {
    const revoked = new Set<string>();
    const server = await serve({ keys, algorithms: ['ES256'], issuer, audience, isRevoked: (claims) => revoked.has(String(claims.jti)) });
    const token = await mint(pair.privateKey, 'ES256', { jti: 'token-1' });
    await request(server).get('/api').set(bearer(token)).expect(200);
    revoked.add('token-1');
    expectProblem(await request(server).get('/api').set(bearer(token)), 401, 'invalid_token');
  });

  it('fails closed with 503 when the revocation check cannot reach its store', async () => {
    const server = await serve({
      keys,
      algorithms: ['ES256'],
      issuer,
      audience,
      isRevoked: () => Promise.reject(new StoreUnavailableError()),
    });
    const res = await request(server)
      .get('/api')
      .set(bearer(await mint(pair.privateKey, 'ES256')));
    expectProblem(res, 503);
    expect(res.headers['retry-after']).toBeDefined();
  });
});

describe('requireBearer with a JWKS endpoint', () => {
  const first = rsaPair();
  const second = rsaPair();
  let jwks: JwksServer;
  beforeEach(async () => {
    jwks = await startJwksServer([{ ...first.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256' }]);
  });
  afterEach(() => jwks.close());

  it('fetches a rotated-in key exactly once under 50 concurrent requests', async () => {
    const server = await serve({ jwksUri: jwks.jwksUri, algorithms: ['RS256'], issuer, audience });
    await request(server)
      .get('/api')
      .set(bearer(await mint(first.privateKey, 'RS256')))
      .expect(200);
    jwks.jwks = { keys: [...jwks.jwks.keys, { ...second.publicKey.export({ format: 'jwk' }), kid: 'k2', alg: 'RS256' }] };
    const tokens = await Promise.all(
      Array.from({ length: 50 }, (_, i) => mint(second.privateKey, 'RS256', { sub: `user-${i}` }, { kid: 'k2' })),
    );
    const statuses = await Promise.all(tokens.map(async (token) => (await request(server).get('/api').set(bearer(token))).status));
    expect(statuses).toEqual(Array(50).fill(200));
    expect(jwks.hits).toBe(2);
  });

  it('keeps verifying with cached keys while the endpoint is down; an unknown kid gets 401', async () => {
    const server = await serve({
      jwksUri: jwks.jwksUri,
      jwks: { maxAgeSeconds: 0.1, cooldownSeconds: 0, timeoutSeconds: 0.5 },
      algorithms: ['RS256'],
      issuer,
      audience,
    });
    await request(server)
      .get('/api')
      .set(bearer(await mint(first.privateKey, 'RS256')))
      .expect(200);
    await jwks.close();
    await new Promise((resolve) => setTimeout(resolve, 150));
    await request(server)
      .get('/api')
      .set(bearer(await mint(first.privateKey, 'RS256', { sub: 'bob' })))
      .expect(200);
    const res = await request(server)
      .get('/api')
      .set(bearer(await mint(second.privateKey, 'RS256', {}, { kid: 'k2' })));
    expectProblem(res, 401, 'invalid_token');
  });

  it('answers 503 with Retry-After when the endpoint is down and no key was ever fetched', async () => {
    const uri = jwks.jwksUri;
    // The app listens before the endpoint closes, so it cannot be given the endpoint's freed port (its own 401 would
    // then read as a broken key set, 502).
    const server = await serve({ jwksUri: uri, algorithms: ['RS256'], issuer, audience });
    await jwks.close();
    const res = await request(server)
      .get('/api')
      .set(bearer(await mint(first.privateKey, 'RS256')));
    expectProblem(res, 503, 'key_source_unavailable');
    expect(res.headers['retry-after']).toBe('5');
  });

  it('answers 503 when the endpoint is too slow', async () => {
    jwks.delayMs = 1500;
    const server = await serve({ jwksUri: jwks.jwksUri, jwks: { timeoutSeconds: 0.2 }, algorithms: ['RS256'], issuer, audience });
    const res = await request(server)
      .get('/api')
      .set(bearer(await mint(first.privateKey, 'RS256')));
    expectProblem(res, 503, 'key_source_unavailable');
  });

  it('answers 502 when the endpoint serves something that is not a key set', async () => {
    jwks.jwks = { hello: 'world' } as never;
    const server = await serve({ jwksUri: jwks.jwksUri, algorithms: ['RS256'], issuer, audience });
    const res = await request(server)
      .get('/api')
      .set(bearer(await mint(first.privateKey, 'RS256')));
    expectProblem(res, 502, 'key_source_error');
  });
});

describe('requireBearer option validation', () => {
  const secret = randomBytes(32);
  const base = { algorithms: ['HS256'], issuer, audience } as const;

  it.each([
    ['no key source', { ...base }, /give one of secret, keys, jwksUri, tokenService/],
    ['two key sources', { ...base, secret, jwksUri: 'https://auth.example.test/jwks' }, /secret and jwksUri cannot be used together/],
    ['no algorithms', { secret, issuer, audience }, /algorithms is required/],
    ['none among algorithms', { ...base, secret, algorithms: ['none'] }, /may only contain/],
    ['HS mixed with RS', { ...base, secret, algorithms: ['HS256', 'RS256'] }, /must not mix/],
    ['a secret with RS256', { ...base, secret, algorithms: ['RS256'] }, /only verifies HS256/],
    ['a short secret', { ...base, secret: 'short' }, /needs at least 32/],
    ['a 32-byte secret for HS512', { ...base, secret, algorithms: ['HS512'] }, /HS512 needs at least 64/],
    ['jwksUri with HS256', { ...base, jwksUri: 'https://auth.example.test/jwks' }, /must not list HS/],
    ['jwksUri over plain http', { ...base, algorithms: ['RS256'], jwksUri: 'http://auth.example.test/jwks' }, /https:/],
    ['no issuer', { secret, algorithms: ['HS256'], audience }, /issuer is required/],
    ['no audience', { secret, algorithms: ['HS256'], issuer }, /audience is required/],
    ['a realm with a quote', { ...base, secret, realm: 'a"b' }, /realm/],
    [
      'the former requiredScopes option',
      { ...base, secret, requiredScopes: ['a'] },
      /requiredScopes is no longer an option; mount requiredScopes/,
    ],
    ['a negative cacheSize', { ...base, secret, cacheSize: -1 }, /cacheSize/],
    ['a misspelled option', { ...base, secret, audiance: 'x' }, /unknown option "audiance" \(did you mean "audience"\?\)/],
    ['isRevoked not a function', { ...base, secret, isRevoked: true }, /isRevoked/],
  ])('throws a TypeError for %s', (_name, options, message) => {
    expect(() => requireBearer(options as never)).toThrow(message);
  });

  it('detects app.use(requireBearer) written for app.use(requireBearer(options))', () => {
    const call = requireBearer as unknown as (req: unknown, res: unknown, next: unknown) => void;
    expect(() => call({ headers: {}, method: 'GET' }, {}, () => undefined)).toThrow(/app\.use\(requireBearer\(\{ \.\.\. \}\)\)/);
  });

  it('does not modify the caller options and returns a named middleware', () => {
    const options = Object.freeze({ ...base, secret, requiredClaims: Object.freeze(['sub']) });
    const middleware = requireBearer(options as never);
    expect(middleware.name).toBe('requireBearerMiddleware');
  });
});

describe('requireBearer debug channel express-sso-kit:token', () => {
  const lines: string[] = [];
  // The channel is a `debug` instance; its log function is where the lines go.
  const channel = debugChannel('token') as unknown as createDebug.Debugger;
  const originalLog = channel.log;
  const pair = ecPair();
  const keys = new KeySet([{ kid: 'k1', alg: 'ES256', publicKey: pair.publicKey }]);
  let store: MemoryStore;
  let server: Server;
  let service: TokenService;
  let serviceServer: Server;

  beforeAll(async () => {
    createDebug.enable('express-sso-kit:token');
    channel.log = (...args: unknown[]) => lines.push(format(...(args as [string])));
    store = new MemoryStore();
    service = new TokenService({ keys: KeySet.generate('ES256', 'svc'), issuer, store });
    server = await serve({ keys, algorithms: ['ES256'], issuer, audience }, undefined, requiredScopes('orders:admin'));
    const app = express();
    app.get('/api', requireBearer({ tokenService: service, audience }), (_req: Request, res: Response) => {
      res.end();
    });
    app.use(errorHandler({ log: false }));
    serviceServer = createServer(app);
    await new Promise<void>((resolve) => serviceServer.listen(0, '127.0.0.1', resolve));
    servers.push(serviceServer);
  });
  afterAll(async () => {
    createDebug.disable();
    channel.log = originalLog;
    await store.close();
  });

  async function refusedLine(target: Server, token: string, status: number): Promise<string> {
    lines.length = 0;
    const res = await request(target).get('/api').set(bearer(token));
    expect(res.status).toBe(status);
    const text = lines.join('\n');
    // Never the token, nor any of its parts.
    for (const part of token.split('.')) expect(text).not.toContain(part);
    return text;
  }

  it('says why a token was refused: alg, unknown kid, expiry, audience, issuer, revoked grant, scope', async () => {
    const now = nowSeconds();
    const hs = await mint(createSecretKey(randomBytes(32)), 'HS256');
    expect(await refusedLine(server, hs, 401)).toMatch(/refused GET \/api: unsupported_alg; alg "HS256", kid "k1"/);
    const otherKid = await mint(pair.privateKey, 'ES256', {}, { kid: 'rotated-away' });
    expect(await refusedLine(server, otherKid, 401)).toMatch(/unknown_kid; alg "ES256", kid "rotated-away"/);
    const expired = await mint(pair.privateKey, 'ES256', { iat: now - 700, exp: now - 60 });
    expect(await refusedLine(server, expired, 401)).toMatch(/: expired;/);
    const elsewhere = await mint(pair.privateKey, 'ES256', { aud: 'billing-api' });
    expect(await refusedLine(server, elsewhere, 401)).toMatch(/: wrong_audience;/);
    const foreign = await mint(pair.privateKey, 'ES256', { iss: 'https://evil.example.test' });
    expect(await refusedLine(server, foreign, 401)).toMatch(/: wrong_issuer;/);
    const scoped = await mint(pair.privateKey, 'ES256', { scope: 'orders:read' });
    expect(await refusedLine(server, scoped, 403)).toMatch(/refused GET: requiredScopes\("orders:admin"\) failed/);

    const { accessToken, refreshToken } = await service.issueTokens({ subject: 'alice', audience, clientId: 'shop' });
    await service.revokeGrant(refreshToken.record.grantId);
    expect(await refusedLine(serviceServer, accessToken.token, 401)).toMatch(/: revoked \(gid\);/);
  });
});
