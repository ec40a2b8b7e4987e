import { createHash, createSecretKey, hash, KeyObject } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { JwtHeader, JwtPayload } from 'jsonwebtoken';
import { BadGatewayError, BadRequestError, ForbiddenError, ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import { isHmacAlgorithm, keyFitsAlgorithm, minimumSecretBytes, type SupportedAlgorithm } from './algorithms';
import { KeySourceUnavailableError, TokenError } from './errors';
import { JwksCache, type JwksCacheOptions } from './jwks-cache';
import type { KeyResolver } from './key-set';
import { createJwtVerifier, validateAlgorithms, type VerifiedJwt } from './verify-jwt';

/** Options of {@link requireBearer}. Exactly one of `secret`, `keys` or `jwksUri`. */
export interface RequireBearerOptions {
  /** HS* shared secret (string = UTF-8 bytes, at least as long as the hash output). Turned into a KeyObject once. */
  secret?: string | Buffer | KeyObject;
  /** A `KeySet`, a `JwksCache` or any {@link KeyResolver}. */
  keys?: KeyResolver;
  /** The issuer's JWKS URL; a {@link JwksCache} is built from it (tune it with `jwks`). */
  jwksUri?: string;
  /** Tuning of the JwksCache built from `jwksUri` (timeoutMs, cooldownMs, maxAgeMs, …). */
  jwks?: Omit<JwksCacheOptions, 'uri'>;
  /** Allowed `alg` values; required. Never `none`; never HS* mixed with asymmetric. */
  algorithms: readonly SupportedAlgorithm[];
  /** Accepted `iss`. Required. */
  issuer: string | readonly string[];
  /** Accepted `aud`. Required. */
  audience: string | readonly string[];
  /** Leeway for exp/nbf/iat. Default 5 s (enough for NTP-synced servers, small enough to keep exp meaningful). */
  clockToleranceSeconds?: number;
  /** Refuse tokens older than this (by iat). Default: no limit beyond exp. */
  maxTokenAgeSeconds?: number;
  /** Required `typ` header, e.g. `at+jwt` (RFC 9068). Default: not checked. */
  typ?: string;
  /** Claims that must be present besides exp, iss, aud. */
  requiredClaims?: readonly string[];
  /** Scopes the token must all carry (`scope` string or `scp` array); missing → 403 insufficient_scope. */
  requiredScopes?: readonly string[];
  /** The `realm` of the challenge. Default `api`. */
  realm?: string;
  /** Consulted on every request, cached tokens included. Return true to refuse (401). A rejection is passed on (a store outage → 503). */
  isRevoked?: (claims: JwtPayload, req: Request) => boolean | Promise<boolean>;
  /** Accept `?access_token=` (RFC 6750 §2.3). Default false: URLs end up in logs, history and Referer headers. */
  allowQueryToken?: boolean;
  /** Accept `access_token` in a form-encoded body (RFC 6750 §2.2, needs a body parser). Default false. */
  allowBodyToken?: boolean;
  /** Verified tokens kept in memory (LRU, keyed by SHA-256 of the token). Default 1000; 0 disables. */
  cacheSize?: number;
  /** Longest token accepted, in characters. Default 8192. */
  maxTokenLength?: number;
}

interface CachedToken {
  header: JwtHeader;
  claims: JwtPayload;
  /** Epoch ms after which the entry must not be served (never later than exp). */
  validUntil: number;
  hasScopes: boolean;
}

// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const REALM = /^[\x20-\x7e]*$/;
// A cached entry is re-verified at least this often, so a key withdrawn from the JWKS stops working soon.
const CACHE_ENTRY_MAX_MS = 5 * 60 * 1000;
const OPTION_NAMES = new Set([
  'secret',
  'keys',
  'jwksUri',
  'jwks',
  'algorithms',
  'issuer',
  'audience',
  'clockToleranceSeconds',
  'maxTokenAgeSeconds',
  'typ',
  'requiredClaims',
  'requiredScopes',
  'realm',
  'isRevoked',
  'allowQueryToken',
  'allowBodyToken',
  'cacheSize',
  'maxTokenLength',
]);

// crypto.hash (Node ≥ 20.12) hashes in one call, about twice as fast as createHash for a token-sized input.
const hasOneShotHash = typeof hash === 'function';
function sha256(text: string): string {
  return hasOneShotHash ? hash('sha256', text, 'base64') : createHash('sha256').update(text).digest('base64');
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

function scopesOf(claims: JwtPayload): Set<string> {
  const scope: unknown = claims.scope;
  const scp: unknown = (claims as Record<string, unknown>).scp;
  const list =
    typeof scope === 'string' ? scope.split(' ') : Array.isArray(scp) ? scp.filter((s): s is string => typeof s === 'string') : [];
  return new Set(list.filter(Boolean));
}

function secretResolver(secret: string | Buffer | KeyObject, algorithms: readonly SupportedAlgorithm[]): KeyResolver {
  if (!algorithms.every(isHmacAlgorithm))
    throw new TypeError('requireBearer: a secret only verifies HS256/HS384/HS512; list only those in algorithms');
  let key: KeyObject;
  if (secret instanceof KeyObject) {
    if (secret.type !== 'secret')
      throw new TypeError('requireBearer: secret must be a string, a Buffer or a secret KeyObject (for public keys use keys or jwksUri)');
    key = secret;
  } else if (typeof secret === 'string' || Buffer.isBuffer(secret)) {
    key = createSecretKey(Buffer.from(secret as never));
  } else {
    throw new TypeError('requireBearer: secret must be a string, a Buffer or a secret KeyObject');
  }
  for (const alg of algorithms) {
    if (!keyFitsAlgorithm(key, alg)) {
      throw new TypeError(
        `requireBearer: the secret has ${key.symmetricKeySize ?? 0} bytes; ${alg} needs at least ${minimumSecretBytes(alg)} random bytes`,
      );
    }
  }
  return { getKey: () => key };
}

function resolverFrom(options: RequireBearerOptions, algorithms: readonly SupportedAlgorithm[]): KeyResolver {
  const sources = (['secret', 'keys', 'jwksUri'] as const).filter((name) => options[name] !== undefined);
  if (sources.length !== 1) {
    throw new TypeError(
      `requireBearer: give exactly one key source, secret (HS*), keys (a KeySet or KeyResolver) or jwksUri, got ${sources.length === 0 ? 'none' : sources.join(' and ')}`,
    );
  }
  if (options.jwks !== undefined && options.jwksUri === undefined)
    throw new TypeError('requireBearer: jwks tunes the cache of jwksUri; give jwksUri too');
  if (options.secret !== undefined) return secretResolver(options.secret, algorithms);
  if (options.keys !== undefined) {
    if (typeof options.keys !== 'object' || options.keys === null || typeof options.keys.getKey !== 'function') {
      throw new TypeError('requireBearer: keys must be a KeySet, a JwksCache or an object with getKey(kid, alg)');
    }
    return options.keys;
  }
  if (algorithms.some(isHmacAlgorithm))
    throw new TypeError('requireBearer: a JWKS publishes public keys only; algorithms must not list HS*');
  return new JwksCache({ ...options.jwks, uri: options.jwksUri as string });
}

/**
 * Protects routes with `Authorization: Bearer <JWT>` (RFC 6750). Verifies the token (see `createJwtVerifier`) and
 * sets `req.auth = { token, header, claims }`. Errors go to `next(err)` with RFC 6750 challenges: no token → 401;
 * malformed request → 400 invalid_request; bad token → 401 invalid_token; missing scope → 403
 * insufficient_scope; key source down → 503 (502 for a broken JWKS).
 *
 * @example
 * app.use('/api', requireBearer({
 *   jwksUri: 'https://auth.example.test/.well-known/jwks.json',
 *   algorithms: ['RS256'], issuer: 'https://auth.example.test', audience: 'shop-api', requiredScopes: ['orders:read'],
 * }));
 */
export function requireBearer(options: RequireBearerOptions): RequestHandler {
  // eslint-disable-next-line prefer-rest-params
  if (arguments.length === 3 && typeof arguments[2] === 'function') {
    throw new TypeError('requireBearer: it is a factory; write app.use(requireBearer({ ... })), not app.use(requireBearer)');
  }
  if (typeof options !== 'object' || options === null)
    throw new TypeError('requireBearer: pass options { algorithms, issuer, audience, and secret, keys or jwksUri }');
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name)) throw new TypeError(`requireBearer: unknown option "${name}"`);
  }
  const algorithms = validateAlgorithms('requireBearer', options.algorithms);
  const keys = resolverFrom(options, algorithms);
  const verify = createJwtVerifier({
    keys,
    algorithms,
    issuer: options.issuer,
    audience: options.audience,
    ...(options.clockToleranceSeconds !== undefined ? { clockToleranceSeconds: options.clockToleranceSeconds } : {}),
    ...(options.maxTokenAgeSeconds !== undefined ? { maxTokenAgeSeconds: options.maxTokenAgeSeconds } : {}),
    ...(options.typ !== undefined ? { typ: options.typ } : {}),
    ...(options.requiredClaims !== undefined ? { requiredClaims: options.requiredClaims } : {}),
    ...(options.maxTokenLength !== undefined ? { maxTokenLength: options.maxTokenLength } : {}),
  });
  const maxTokenAgeMs = options.maxTokenAgeSeconds === undefined ? undefined : options.maxTokenAgeSeconds * 1000;

  const realm = options.realm ?? 'api';
  if (typeof realm !== 'string' || !REALM.test(realm) || /["\\]/.test(realm)) {
    throw new TypeError(`requireBearer: realm must be printable ASCII without quotes or backslashes, got ${JSON.stringify(options.realm)}`);
  }
  const requiredScopes = options.requiredScopes ?? [];
  if (!Array.isArray(requiredScopes) || requiredScopes.some((s) => typeof s !== 'string' || !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))) {
    throw new TypeError('requireBearer: requiredScopes must be an array of scope tokens without spaces or quotes, e.g. ["orders:read"]');
  }
  const { isRevoked } = options;
  if (isRevoked !== undefined && typeof isRevoked !== 'function')
    throw new TypeError('requireBearer: isRevoked must be a function (claims, req) => boolean | Promise<boolean>');
  for (const name of ['allowQueryToken', 'allowBodyToken'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean') throw new TypeError(`requireBearer: ${name} must be a boolean`);
  }
  const allowQuery = options.allowQueryToken === true;
  const allowBody = options.allowBodyToken === true;
  const cacheSize = options.cacheSize ?? 1000;
  if (!Number.isInteger(cacheSize) || cacheSize < 0 || cacheSize > 1_000_000) {
    throw new TypeError(`requireBearer: cacheSize must be a whole number from 0 to 1000000, got ${JSON.stringify(options.cacheSize)}`);
  }

  // Every challenge string is built here, once. error_description may not contain quotes or backslashes (RFC 6750 §3).
  const basic = `Bearer realm="${realm}"`;
  const INVALID_HEADER = 'The Authorization header must be the Bearer scheme, one space and the token';
  const TWO_METHODS = 'Send the access token in exactly one place';
  const NOT_IN_HEADER = 'Send the access token in the Authorization header';
  const BAD_PARAMETER = 'The access_token parameter is malformed';
  const NOT_A_FORM = 'A body token needs a form-encoded POST body';
  const requestChallenges = new Map(
    [INVALID_HEADER, TWO_METHODS, NOT_IN_HEADER, BAD_PARAMETER, NOT_A_FORM].map((description) => [
      description,
      `${basic}, error="invalid_request", error_description="${description}"`,
    ]),
  );
  const invalidRequest = (description: string): BadRequestError =>
    new BadRequestError({
      code: 'invalid_request',
      detail: description,
      headers: { 'WWW-Authenticate': requestChallenges.get(description) as string },
    });
  const expiredChallenge = `${basic}, error="invalid_token", error_description="The access token expired"`;
  const invalidChallenge = `${basic}, error="invalid_token", error_description="The access token is invalid"`;
  const scopeText = requiredScopes.join(' ');
  const scopeChallenge = `${basic}, error="insufficient_scope", error_description="The access token lacks a required scope", scope="${scopeText}"`;
  const missingChallenge = { 'WWW-Authenticate': basic };
  const required = new Set(requiredScopes);
  const cache = new Map<string, CachedToken>();

  function invalidToken(expired: boolean): UnauthorizedError {
    return new UnauthorizedError({
      code: 'invalid_token',
      detail: expired ? 'The access token expired.' : 'The access token is invalid.',
      headers: { 'WWW-Authenticate': expired ? expiredChallenge : invalidChallenge },
    });
  }

  function hasRequiredScopes(claims: JwtPayload): boolean {
    if (required.size === 0) return true;
    const granted = scopesOf(claims);
    for (const scope of required) if (!granted.has(scope)) return false;
    return true;
  }

  function remember(hash: string, verified: VerifiedJwt, now: number): CachedToken {
    const { claims } = verified;
    let validUntil = Math.min((claims.exp as number) * 1000, now + CACHE_ENTRY_MAX_MS);
    if (maxTokenAgeMs !== undefined && typeof claims.iat === 'number') validUntil = Math.min(validUntil, claims.iat * 1000 + maxTokenAgeMs);
    // One claims object serves many requests, so no handler may change it for the next one.
    const entry: CachedToken = {
      header: deepFreeze(verified.header),
      claims: deepFreeze(claims),
      validUntil,
      hasScopes: hasRequiredScopes(claims),
    };
    // Tokens accepted only thanks to the clock tolerance (nbf a little ahead, exp just past) are not cached.
    const early = typeof claims.nbf === 'number' && claims.nbf * 1000 > now;
    if (cacheSize > 0 && !early && validUntil > now) {
      cache.set(hash, entry);
      if (cache.size > cacheSize) cache.delete(cache.keys().next().value as string);
    }
    return entry;
  }

  /**
   * Returns the token, undefined when none was sent, or an error for a malformed request. The characters of a
   * header token are checked later, and only when the token is not in the cache: a cached token was verified, so
   * it is well-formed.
   */
  function extractToken(req: Request): { token: string; fromHeader: boolean } | undefined | BadRequestError {
    const header = req.headers.authorization;
    let found: { token: string; fromHeader: boolean } | undefined;
    if (header !== undefined) {
      // Node keeps only the first of repeated Authorization headers; a second one is an ambiguous request.
      let count = 0;
      const raw = req.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) {
        const name = raw[i] as string;
        if (name.length === 13 && name.toLowerCase() === 'authorization') count++;
      }
      if (count > 1) return invalidRequest(TWO_METHODS);
      if (header.length < 8 || header.charCodeAt(6) !== 32 || header.slice(0, 6).toLowerCase() !== 'bearer')
        return invalidRequest(INVALID_HEADER);
      found = { token: header.slice(7), fromHeader: true };
    }
    // Only look at the query when the URL can carry a token at all; parsing it on every request would cost.
    if (req.url.includes('access_token')) {
      const fromQuery: unknown = req.query.access_token;
      if (fromQuery !== undefined) {
        if (!allowQuery) return invalidRequest(NOT_IN_HEADER);
        if (found !== undefined) return invalidRequest(TWO_METHODS);
        if (typeof fromQuery !== 'string' || !B64TOKEN.test(fromQuery)) return invalidRequest(BAD_PARAMETER);
        found = { token: fromQuery, fromHeader: false };
      }
    }
    const body: unknown = req.body;
    // RFC 6750 §2.2 defines body tokens for form posts only; an access_token field of a JSON body is the app's data.
    if (typeof body === 'object' && body !== null && 'access_token' in body && req.is('application/x-www-form-urlencoded')) {
      const fromBody: unknown = (body as Record<string, unknown>).access_token;
      if (!allowBody) return invalidRequest(NOT_IN_HEADER);
      if (found !== undefined) return invalidRequest(TWO_METHODS);
      if (req.method === 'GET') return invalidRequest(NOT_A_FORM);
      if (typeof fromBody !== 'string' || !B64TOKEN.test(fromBody)) return invalidRequest(BAD_PARAMETER);
      found = { token: fromBody, fromHeader: false };
    }
    return found;
  }

  async function authorize(req: Request, token: string, entry: CachedToken): Promise<void> {
    if (isRevoked && (await isRevoked(entry.claims, req))) throw invalidToken(false);
    if (!entry.hasScopes) {
      throw new ForbiddenError({
        code: 'insufficient_scope',
        detail: 'The access token lacks a required scope.',
        headers: { 'WWW-Authenticate': scopeChallenge },
        extensions: { scope: scopeText },
      });
    }
    req.auth = { token, header: entry.header, claims: entry.claims };
  }

  function fromFailure(error: unknown): unknown {
    if (error instanceof TokenError) return invalidToken(error.reason === 'expired');
    if (error instanceof KeySourceUnavailableError) {
      return error.failure === 'bad_response'
        ? new BadGatewayError({ code: 'key_source_error', detail: 'The token keys could not be read from the identity provider.' })
        : new ServiceUnavailableError({ code: 'key_source_unavailable', detail: 'The token keys are unavailable. Try again shortly.' });
    }
    return error;
  }

  return function requireBearerMiddleware(req: Request, _res: Response, next: NextFunction): void {
    const found = extractToken(req);
    if (found instanceof BadRequestError) {
      next(found);
      return;
    }
    if (found === undefined) {
      next(new UnauthorizedError({ code: 'token_required', detail: 'An access token is required.', headers: missingChallenge }));
      return;
    }
    const { token } = found;
    const hash = cacheSize > 0 ? sha256(token) : '';
    const now = Date.now();
    const cached = cacheSize > 0 ? cache.get(hash) : undefined;
    if (cached !== undefined) {
      if (now < cached.validUntil) {
        // Refresh the LRU position.
        cache.delete(hash);
        cache.set(hash, cached);
        if (!isRevoked && cached.hasScopes) {
          // The hot path stays synchronous: no promise for a token we already verified.
          req.auth = { token, header: cached.header, claims: cached.claims };
          next();
          return;
        }
        authorize(req, token, cached).then(
          () => next(),
          (error: unknown) => next(fromFailure(error)),
        );
        return;
      }
      cache.delete(hash);
    }
    if (found.fromHeader && !B64TOKEN.test(token)) {
      next(invalidRequest(INVALID_HEADER));
      return;
    }
    verify(token)
      .then((verified) => authorize(req, token, remember(hash, verified, now)))
      .then(
        () => next(),
        (error: unknown) => next(fromFailure(error)),
      );
  };
}
