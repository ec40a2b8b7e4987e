import { createHash, randomBytes } from 'node:crypto';
import express from 'express';
import Redis from 'ioredis';
import { MemoryStore, RedisStore, type KeyValueStore } from '../lib/store';
import { requireBearer } from '../lib/tokens';
import { oauth2Bearer, oauth2Subject, protectedApp, tokenRequests } from './bearer';
import { deleteByPrefix, listen, type AutocannonRequest, type BenchCase, type BenchSuite } from './harness';

/** How many DPoP client keys, and tokens bound to them (token i to key i mod CLIENT_KEYS), rotate across requests. */
const CLIENT_KEYS = 10;
const DISTINCT_TOKENS = 100;
const AUDIENCE = 'https://api.example.test';

/** The suite's fixtures, made by the runner: the issuer's JWKS, the clients' keys, bound and unbound tokens, Redis. */
export interface DpopFixtures {
  issuer: string;
  audience: string;
  jwksUri: string;
  redisUrl: string;
  prefix: string;
  /** P-256 private JWKs of the clients (proofs are signed in the load generator's process). */
  clientKeys: Record<string, string>[];
  /** RS256 access tokens with `cnf.jkt` of client key i mod CLIENT_KEYS. */
  boundTokens: string[];
  /** The same tokens without `cnf`, for the Bearer route. */
  bearerTokens: string[];
}

const athOf = (token: string): string => createHash('sha256').update(token).digest('base64url');

/** One request per bound token, each signed afresh at every send with its client's key. */
function dpopRequests(url: string, { boundTokens, clientKeys }: DpopFixtures): AutocannonRequest[] {
  return boundTokens.map((token, index) => ({
    method: 'GET',
    path: '/me',
    headers: { authorization: `DPoP ${token}` },
    dpop: { privateJwk: clientKeys[index % clientKeys.length]!, htm: 'GET', htu: `${url}/me`, ath: athOf(token) },
  }));
}

const kitSubject = (req: express.Request): unknown => req.auth?.payload.sub;

function kitDpopApp(fixtures: DpopFixtures, replayStore: KeyValueStore) {
  const { jwksUri, issuer, audience } = fixtures;
  return {
    app: protectedApp(
      requireBearer({ jwksUri, algorithms: ['RS256'], issuer, audience, dpop: { mode: 'required', replayStore } }),
      kitSubject,
    ),
    close: () => replayStore.close(),
  };
}

/**
 * The DPoP suite's cases: bare Express, the kit's Bearer route, the kit's DPoP route with its replay store on Redis
 * and in memory (their difference is the store's cost), and express-oauth2-jwt-bearer in DPoP and Bearer modes.
 *
 * @example
 * const cases = dpopCases();
 */
export function dpopCases(): BenchCase<DpopFixtures>[] {
  return [
    {
      name: 'bare',
      description: 'bare Express, res.json of a constant (DPoP tokens and proofs sent, not read)',
      app: () => ({ app: protectedApp(undefined, () => 'anonymous') }),
      requests: dpopRequests,
    },
    {
      name: 'kit-bearer-rs256',
      description: 'requireBearer({ jwksUri, algorithms: [RS256], issuer, audience }), Bearer tokens (the Bearer route)',
      app: ({ jwksUri, issuer, audience }) => ({
        app: protectedApp(requireBearer({ jwksUri, algorithms: ['RS256'], issuer, audience }), kitSubject),
      }),
      requests: (_url, { bearerTokens }) => tokenRequests(bearerTokens),
    },
    {
      name: 'kit-dpop-redis',
      description: "the same with dpop: { mode: 'required', replayStore: RedisStore } (jti SET NX on Redis)",
      app: (fixtures) => kitDpopApp(fixtures, new RedisStore(fixtures.redisUrl, { prefix: fixtures.prefix })),
      requests: dpopRequests,
    },
    {
      name: 'kit-dpop-memory',
      description: 'the same with replayStore: new MemoryStore() (one process; the proof check without Redis)',
      app: (fixtures) => kitDpopApp(fixtures, new MemoryStore()),
      requests: dpopRequests,
    },
    {
      name: 'oauth2-jwt-bearer-dpop',
      description: 'express-oauth2-jwt-bearer auth({ …, dpop: { enabled: true, required: true } }) (no jti replay check)',
      app: ({ issuer, jwksUri, audience }) => ({
        app: protectedApp(
          oauth2Bearer.auth({ issuer, jwksUri, audience, tokenSigningAlg: 'RS256', dpop: { enabled: true, required: true } }),
          oauth2Subject,
        ),
      }),
      requests: dpopRequests,
    },
    {
      name: 'oauth2-jwt-bearer-rs256',
      description: 'express-oauth2-jwt-bearer auth({ issuer, jwksUri, audience, tokenSigningAlg: RS256 }), Bearer tokens',
      app: ({ issuer, jwksUri, audience }) => ({
        app: protectedApp(oauth2Bearer.auth({ issuer, jwksUri, audience, tokenSigningAlg: 'RS256' }), oauth2Subject),
      }),
      requests: (_url, { bearerTokens }) => tokenRequests(bearerTokens),
    },
  ];
}

/**
 * The DPoP suite: a DPoP-protected route against the Bearer route and express-oauth2-jwt-bearer's DPoP mode, on the
 * same RS256 tokens (bound to one of ten ES256 client keys, or not bound). Every request of a DPoP case carries a
 * proof the load generator signs for it, so none is a replay.
 *
 * @example
 * const suite = await dpopSuite('redis://127.0.0.1:6379');
 */
export async function dpopSuite(redisUrl: string): Promise<BenchSuite<DpopFixtures>> {
  const { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } = await import('jose');
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-rs256', alg: 'RS256', use: 'sig' };
  const idp = express();
  idp.get('/.well-known/jwks.json', (_req, res) => {
    res.json({ keys: [jwk] });
  });
  const idpServer = await listen(idp);
  const issuer = `${idpServer.url}/`;
  const clients = await Promise.all(
    Array.from({ length: CLIENT_KEYS }, async () => {
      const pair = await generateKeyPair('ES256', { extractable: true });
      return {
        privateJwk: (await exportJWK(pair.privateKey)) as Record<string, string>,
        jkt: await calculateJwkThumbprint(await exportJWK(pair.publicKey)),
      };
    }),
  );
  const mint = (index: number, bound: boolean) =>
    new SignJWT({ scope: 'read:orders', ...(bound ? { cnf: { jkt: clients[index % CLIENT_KEYS]!.jkt } } : {}) })
      .setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'at+jwt' })
      .setIssuer(issuer)
      .setAudience(AUDIENCE)
      .setSubject(`user-${index}`)
      .setIssuedAt()
      .setExpirationTime('2h')
      .sign(privateKey);
  const indexes = Array.from({ length: DISTINCT_TOKENS }, (_, index) => index);
  const prefix = `ssobench:dpop:${randomBytes(4).toString('hex')}:`;
  const client = new Redis(redisUrl);
  return {
    name: 'dpop',
    workload: `GET /me with ${DISTINCT_TOKENS} RS256 access tokens rotating (JWKS from a local URL), bound to ${CLIENT_KEYS} ES256 client keys; DPoP cases send Authorization: DPoP and a fresh proof signed for each request by the load generator, Bearer cases the same tokens unbound`,
    fixtures: {
      issuer,
      audience: AUDIENCE,
      jwksUri: `${idpServer.url}/.well-known/jwks.json`,
      redisUrl,
      prefix,
      clientKeys: clients.map(({ privateJwk }) => privateJwk),
      boundTokens: await Promise.all(indexes.map((index) => mint(index, true))),
      bearerTokens: await Promise.all(indexes.map((index) => mint(index, false))),
    },
    cases: dpopCases(),
    targets: [],
    close: async () => {
      await deleteByPrefix(client, prefix);
      await client.quit();
      await idpServer.close();
    },
  };
}
