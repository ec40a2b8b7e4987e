import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { expressjwt } from 'express-jwt';
import jwksRsa from 'jwks-rsa';
import { listen, type BenchCase, type BenchSuite, type RunningCase } from './harness';
import { kitBearerCases } from './bearer-kit';

/** How many distinct valid tokens the load generator rotates through, per signing algorithm. */
export const DISTINCT_TOKENS = 100;
const AUDIENCE = 'https://api.example.test';

/**
 * express-oauth2-jwt-bearer declares its own global `Request.auth` type, which clashes with the kit's; it is
 * loaded untyped so its declarations never enter the type check.
 */
type OAuth2Bearer = { auth(options: Record<string, unknown>): RequestHandler };
const oauth2Bearer = createRequire(__filename)('express-oauth2-jwt-bearer') as OAuth2Bearer;

/** What the kit's cases need from the suite's shared fixtures. */
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
 * const app = protectedApp(requireBearer({ ... }), (req) => req.auth?.claims.sub);
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
 * Starts a Bearer case: the app on a loopback port and one request per token, cycled by the load generator.
 *
 * @example
 * const running = await startCase(app, rsTokens);
 */
export async function startCase(app: Express, tokens: string[]): Promise<RunningCase> {
  const server = await listen(app);
  return {
    url: server.url,
    requests: tokens.map((token) => ({ method: 'GET', path: '/me', headers: { authorization: `Bearer ${token}` } })),
    close: server.close,
  };
}

/**
 * The Bearer suite: the kit's `requireBearer` with HS256 and with RS256 keys from a local JWKS URL, against
 * express-oauth2-jwt-bearer, express-jwt + jwks-rsa and bare Express, all fed the same rotating token set.
 *
 * @example
 * const suite = await bearerSuite();
 */
export async function bearerSuite(): Promise<BenchSuite> {
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
      .setProtectedHeader(alg === 'RS256' ? { alg, kid: jwk.kid, typ: 'JWT' } : { alg, typ: 'JWT' })
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
  const fixtures: BearerFixtures = { issuer, audience: AUDIENCE, jwksUri, secret, rsTokens, hsTokens };

  const authSubject = (req: express.Request): unknown => (req as unknown as { auth?: { sub?: string; payload?: { sub?: string } } }).auth;

  const anchors: BenchCase[] = [
    {
      name: 'bare',
      description: 'bare Express, res.json of a constant (the RS256 tokens are sent but not read)',
      start: () => startCase(protectedApp(undefined, () => 'anonymous'), rsTokens),
    },
    {
      name: 'oauth2-jwt-bearer-rs256',
      description: 'express-oauth2-jwt-bearer auth({ issuer, jwksUri, audience, tokenSigningAlg: RS256 })',
      start: () =>
        startCase(
          protectedApp(oauth2Bearer.auth({ issuer, jwksUri, audience: AUDIENCE, tokenSigningAlg: 'RS256' }), (req) => {
            const auth = authSubject(req) as { payload?: { sub?: string } } | undefined;
            return auth?.payload?.sub;
          }),
          rsTokens,
        ),
    },
    {
      name: 'oauth2-jwt-bearer-hs256',
      description: 'express-oauth2-jwt-bearer auth({ issuer, secret, audience, tokenSigningAlg: HS256 })',
      start: () =>
        startCase(
          protectedApp(oauth2Bearer.auth({ issuer, secret, audience: AUDIENCE, tokenSigningAlg: 'HS256' }), (req) => {
            const auth = authSubject(req) as { payload?: { sub?: string } } | undefined;
            return auth?.payload?.sub;
          }),
          hsTokens,
        ),
    },
    {
      name: 'express-jwt-rs256',
      description: 'express-jwt + jwks-rsa expressJwtSecret({ jwksUri, cache: true, rateLimit: true })',
      start: () =>
        startCase(
          protectedApp(
            expressjwt({
              secret: jwksRsa.expressJwtSecret({ jwksUri, cache: true, rateLimit: true, jwksRequestsPerMinute: 10 }),
              algorithms: ['RS256'],
              audience: AUDIENCE,
              issuer,
            }),
            (req) => (authSubject(req) as { sub?: string } | undefined)?.sub,
          ),
          rsTokens,
        ),
    },
    {
      name: 'express-jwt-hs256',
      description: 'express-jwt expressjwt({ secret, algorithms: [HS256] })',
      start: () =>
        startCase(
          protectedApp(expressjwt({ secret, algorithms: ['HS256'], audience: AUDIENCE, issuer }), (req) => (authSubject(req) as { sub?: string } | undefined)?.sub),
          hsTokens,
        ),
    },
  ];

  const kit = await kitBearerCases(fixtures);
  return {
    name: 'bearer',
    workload: `GET /me with Authorization: Bearer, ${DISTINCT_TOKENS} distinct valid tokens per algorithm rotating across requests (RS256 2048-bit key from a local JWKS URL; HS256 48-byte secret); every case checks iss, aud and exp`,
    cases: [anchors[0]!, ...kit.cases, ...anchors.slice(1)],
    targets: [
      { numerator: 'kit-rs256-jwks', denominator: 'bare', atLeast: 0.85 },
      { numerator: 'kit-rs256-jwks', denominator: 'oauth2-jwt-bearer-rs256', atLeast: 1.75 },
      { numerator: 'kit-hs256', denominator: 'bare', atLeast: 0.85 },
    ],
    close: async () => {
      await kit.close();
      await idpServer.close();
    },
  };
}
