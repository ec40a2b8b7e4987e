import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { expressjwt } from 'express-jwt';
import jwksRsa from 'jwks-rsa';
import { listen, preparedRequests, type AutocannonRequest, type BenchCase, type BenchSuite } from './harness';
import { kitBearerCases } from './bearer-kit';
import { tokenHash } from '../lib/tokens/verified-token-cache';

/** How many distinct valid tokens the load generator rotates through, per signing algorithm. */
export const DISTINCT_TOKENS = 100;
const AUDIENCE = 'https://api.example.test';

/**
 * express-oauth2-jwt-bearer declares its own global `Request.auth` type, which clashes with the kit's; it is
 * loaded untyped so its declarations never enter the type check.
 */
type OAuth2Bearer = { auth(options: Record<string, unknown>): RequestHandler };
export const oauth2Bearer = createRequire(__filename)('express-oauth2-jwt-bearer') as OAuth2Bearer;

/** The suite's shared fixtures, made by the runner and sent to every case's server process. */
export interface BearerFixtures {
  issuer: string;
  audience: string;
  jwksUri: string;
  /** The HS256 secret (48 random bytes, base64url). */
  secret: string;
  rsTokens: string[];
  hsTokens: string[];
}

const answerError: ErrorRequestHandler = (error: { status?: number }, _req, res, _next) => {
  res.status(error.status ?? 500).end();
};

/**
 * An app with one protected route that echoes the subject, so every case does the same work after verifying.
 *
 * @example
 * const app = protectedApp(requireBearer({ ... }), (req) => req.auth?.payload.sub);
 */
export function protectedApp(guard: RequestHandler | undefined, subjectOf: (req: express.Request) => unknown): Express {
  const app = express();
  app.disable('x-powered-by');
  if (guard) app.use(guard);
  app.get('/me', (req, res) => {
    res.json({ sub: subjectOf(req) });
  });
  app.use(answerError);
  return app;
}

/**
 * One request per token, cycled by the load generator.
 *
 * @example
 * const requests = tokenRequests(fixtures.rsTokens);
 */
export function tokenRequests(tokens: string[]): AutocannonRequest[] {
  return tokens.map((token) => ({ method: 'GET', path: '/me', headers: { authorization: `Bearer ${token}` } }));
}

const passThrough: RequestHandler = (_req, _res, next) => {
  next();
};

/**
 * The least a cache of verified tokens that never holds a token does per request: the token's SHA-256 (the kit's
 * own `tokenHash`) and one Map lookup by it. No parsing, no claims, no check; the Map is filled as tokens arrive.
 */
function tokenHashFloor(): RequestHandler {
  const seen = new Map<string, true>();
  return (req, _res, next) => {
    const header = req.headers.authorization;
    if (header !== undefined) {
      const key = tokenHash(header.slice(7));
      if (seen.get(key) === undefined) seen.set(key, true);
    }
    next();
  };
}

const authSubject = (req: express.Request): unknown => (req as unknown as { auth?: { sub?: string; payload?: { sub?: string } } }).auth;
/** The subject express-oauth2-jwt-bearer put on `req.auth`. */
export const oauth2Subject = (req: express.Request): unknown =>
  (authSubject(req) as { payload?: { sub?: string } } | undefined)?.payload?.sub;
const expressJwtSubject = (req: express.Request): unknown => (authSubject(req) as { sub?: string } | undefined)?.sub;

/**
 * The Bearer suite's cases, in table order: bare Express, the kit's, then express-oauth2-jwt-bearer and express-jwt
 * + jwks-rsa. Each `app` runs in the case's own server process, built from the fixtures the runner made.
 *
 * @example
 * const cases = bearerCases();
 */
export function bearerCases(): BenchCase<BearerFixtures>[] {
  const rs = (_url: string, fixtures: BearerFixtures) => tokenRequests(fixtures.rsTokens);
  const hs = (_url: string, fixtures: BearerFixtures) => tokenRequests(fixtures.hsTokens);
  const anchors: BenchCase<BearerFixtures>[] = [
    {
      name: 'oauth2-jwt-bearer-rs256',
      description: 'express-oauth2-jwt-bearer auth({ issuer, jwksUri, audience, tokenSigningAlg: RS256 })',
      app: ({ issuer, jwksUri, audience }) => ({
        app: protectedApp(oauth2Bearer.auth({ issuer, jwksUri, audience, tokenSigningAlg: 'RS256' }), oauth2Subject),
      }),
      requests: rs,
    },
    {
      name: 'oauth2-jwt-bearer-hs256',
      description: 'express-oauth2-jwt-bearer auth({ issuer, secret, audience, tokenSigningAlg: HS256 })',
      app: ({ issuer, secret, audience }) => ({
        app: protectedApp(oauth2Bearer.auth({ issuer, secret, audience, tokenSigningAlg: 'HS256' }), oauth2Subject),
      }),
      requests: hs,
    },
    {
      name: 'express-jwt-rs256',
      description: 'express-jwt + jwks-rsa expressJwtSecret({ jwksUri, cache: true, rateLimit: true })',
      app: ({ issuer, jwksUri, audience }) => ({
        app: protectedApp(
          expressjwt({
            secret: jwksRsa.expressJwtSecret({ jwksUri, cache: true, rateLimit: true, jwksRequestsPerMinute: 10 }),
            algorithms: ['RS256'],
            audience,
            issuer,
          }),
          expressJwtSubject,
        ),
      }),
      requests: rs,
    },
    {
      name: 'express-jwt-hs256',
      description: 'express-jwt expressjwt({ secret, algorithms: [HS256] })',
      app: ({ issuer, secret, audience }) => ({
        app: protectedApp(expressjwt({ secret, algorithms: ['HS256'], audience, issuer }), expressJwtSubject),
      }),
      requests: hs,
    },
  ];
  return [
    {
      name: 'bare',
      description: 'bare Express, res.json of a constant (the RS256 tokens are sent but not read)',
      app: () => ({ app: protectedApp(undefined, () => 'anonymous') }),
      requests: rs,
    },
    {
      name: 'bare-prepared',
      description: 'bare Express with the one step the kit takes first (prepareForProperties); tokens sent, not read',
      app: () => ({ app: protectedApp(preparedRequests, () => 'anonymous') }),
      requests: rs,
    },
    {
      name: 'bare-middleware',
      description:
        'bare Express with one pass-through middleware where requireBearer sits (the least any guard adds); tokens sent, not read',
      app: () => ({ app: protectedApp(passThrough, () => 'anonymous') }),
      requests: rs,
    },
    {
      name: 'bare-token-hash',
      description:
        "bare-middleware whose middleware takes the token's SHA-256 and looks it up in a Map (the least a cache that never holds tokens does); HS256 tokens, as kit-hs256",
      app: () => ({ app: protectedApp(tokenHashFloor(), () => 'anonymous') }),
      requests: hs,
    },
    ...kitBearerCases(),
    ...anchors,
  ];
}

/**
 * The Bearer suite: the kit's `requireBearer` with HS256 and with RS256 keys from a local JWKS URL, against
 * express-oauth2-jwt-bearer, express-jwt + jwks-rsa and bare Express, all fed the same rotating token set. The
 * keys, tokens and the JWKS server are made here, in the runner; each case's server process gets the fixtures.
 *
 * @example
 * const suite = await bearerSuite();
 */
export async function bearerSuite(): Promise<BenchSuite<BearerFixtures>> {
  // jose is ESM-only; this package compiles to CommonJS.
  const { exportJWK, generateKeyPair, SignJWT } = await import('jose');
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-rs256', alg: 'RS256', use: 'sig' };
  const idp = express();
  idp.get('/.well-known/jwks.json', (_req, res) => {
    res.json({ keys: [jwk] });
  });
  const idpServer = await listen(idp);
  const issuer = `${idpServer.url}/`;
  idp.get('/.well-known/openid-configuration', (_req, res) => {
    res.json({ issuer, jwks_uri: `${idpServer.url}/.well-known/jwks.json` });
  });
  const jwksUri = `${idpServer.url}/.well-known/jwks.json`;
  const secret = randomBytes(48).toString('base64url');
  const secretBytes = new TextEncoder().encode(secret);

  const mint = async (index: number, alg: 'RS256' | 'HS256'): Promise<string> => {
    const jwt = new SignJWT({ scope: 'read:orders', name: `User ${index}` })
      .setProtectedHeader(alg === 'RS256' ? { alg, kid: jwk.kid, typ: 'at+jwt' } : { alg, typ: 'at+jwt' })
      .setIssuer(issuer)
      .setAudience(AUDIENCE)
      .setSubject(`user-${index}`)
      .setIssuedAt()
      .setExpirationTime('2h');
    return alg === 'RS256' ? jwt.sign(privateKey) : jwt.sign(secretBytes);
  };
  const indexes = Array.from({ length: DISTINCT_TOKENS }, (_, index) => index);
  const rsTokens = await Promise.all(indexes.map((index) => mint(index, 'RS256')));
  const hsTokens = await Promise.all(indexes.map((index) => mint(index, 'HS256')));

  return {
    name: 'bearer',
    workload: `GET /me with Authorization: Bearer, ${DISTINCT_TOKENS} distinct valid tokens per algorithm rotating across requests (RS256 2048-bit key from a local JWKS URL; HS256 48-byte secret); every case checks iss, aud and exp`,
    fixtures: { issuer, audience: AUDIENCE, jwksUri, secret, rsTokens, hsTokens },
    cases: bearerCases(),
    targets: [
      // Issue 30's targets, on Node 24 and 26.
      { numerator: 'kit-rs256-jwks', denominator: 'bare', atLeast: 0.9 },
      { numerator: 'kit-rs256-jwks', denominator: 'oauth2-jwt-bearer-rs256', atLeast: 2.5 },
      { numerator: 'kit-hs256', denominator: 'bare', atLeast: 0.9 },
      // What any guard mounted with app.use reaches, and how far the kit's cached checks are from it.
      { numerator: 'bare-middleware', denominator: 'bare', atLeast: 0.9, floor: true },
      { numerator: 'kit-hs256', denominator: 'bare-middleware', atLeast: 0.9, floor: true },
      { numerator: 'bare-token-hash', denominator: 'bare', atLeast: 0.9, floor: true },
      { numerator: 'kit-hs256', denominator: 'bare-token-hash', atLeast: 0.9, floor: true },
    ],
    close: () => idpServer.close(),
  };
}
