import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { debugChannel } from '../util/debug';
import { OptionsError } from '../util/options';
import { prepareForProperties } from '../util/request-shape';
import { bearerErrors, INVALID_REQUEST, rememberRealm } from './bearer-errors';
import { B64TOKEN, extractBearerToken } from './bearer-token-request';
import { TokenError } from './errors';
import { InsufficientAuthenticationError } from '../session/step-up';
import { tokenMeets } from './token-authentication';
import { bearerSetup, type RequireBearerOptions } from './require-bearer-options';
import { carriesGrant } from './token-revocations';
import type { AuthInfo } from './types';
import { tokenHash, VerifiedTokenCache, type CachedToken } from './verified-token-cache';

export type { RequireBearerOptions } from './require-bearer-options';

const debug = debugChannel('token');

/** The path of a request without its query, which may carry a token (`?access_token=`). */
function pathOf(req: Request): string {
  const url = req.originalUrl ?? req.url;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** alg and kid of a refused token's header, for the debug line only (printable, truncated, never the token). */
function headerFacts(token: string): string {
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8')) as Record<string, unknown>;
    const fact = (value: unknown) => (typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : '(none)');
    return `alg ${fact(header.alg)}, kid ${fact(header.kid)}`;
  } catch {
    return 'unreadable header';
  }
}

/**
 * Protects routes with `Authorization: Bearer <JWT>` (RFC 6750). Verifies the token (see `createJwtVerifier`) and
 * sets `req.auth = { payload, header, token }`; mount `requiredScopes()`, `claimCheck()`, `claimEquals()` or
 * `claimIncludes()` after it per route. With `tokenService` (or `revocationStore`), a token of a revoked grant —
 * revoked by `revokeGrant` or by the reuse of one of its refresh tokens — is refused. Errors go to `next(err)` with
 * RFC 6750 challenges: no token → 401; malformed request → 400 invalid_request; bad or revoked token → 401
 * invalid_token; key source or revocation store down → 503 (502 for a broken JWKS). With `acr` and/or
 * `maxAgeSeconds`, a token whose `acr` (or `amr`) is below the level or whose `auth_time` is too old gets 401
 * `insufficient_user_authentication` with `acr_values`/`max_age` (RFC 9470), so the client can obtain a stronger one.
 *
 * @example
 * app.use('/api', requireBearer({ jwksUri: 'https://auth.example.test/.well-known/jwks.json', algorithms: ['RS256'],
 *   issuer: 'https://auth.example.test', audience: 'shop-api' }));
 * app.get('/api/orders', requiredScopes('orders:read'), listOrders);
 */
export function requireBearer(options: RequireBearerOptions): RequestHandler {
  // eslint-disable-next-line prefer-rest-params
  if (arguments.length === 3 && typeof arguments[2] === 'function') {
    throw new OptionsError('requireBearer: it is a factory: write app.use(requireBearer({ ... })), not app.use(requireBearer)');
  }
  const { verify, revocations, realm, maxTokenAgeMs, requirement } = bearerSetup(options);
  const insufficient = requirement === undefined ? undefined : new InsufficientAuthenticationError(requirement, { realm });
  const errors = bearerErrors(realm);
  const places = { allowQuery: options.allowQueryToken === true, allowBody: options.allowBodyToken === true };
  const { isRevoked } = options;
  const cacheSize = options.cacheSize ?? 1000;
  const cache = new VerifiedTokenCache(cacheSize, maxTokenAgeMs);
  const ownRealm = realm !== 'api';

  /** True when the token meets the route's `acr`/`maxAgeSeconds`, checked on every request (age changes). */
  function strongEnough(entry: CachedToken): boolean {
    return requirement === undefined || tokenMeets(entry.claims, requirement, Math.floor(Date.now() / 1000));
  }

  function accept(req: Request, token: string, entry: CachedToken): void {
    const auth: AuthInfo = { token, header: entry.header, payload: entry.claims };
    req.auth = auth;
    if (ownRealm) rememberRealm(req, realm);
  }

  async function authorize(req: Request, token: string, entry: CachedToken): Promise<void> {
    // One batched store read for tokens of a grant: a reused refresh token or revokeGrant ends them at once.
    if (entry.checkRevocation && (await (revocations as NonNullable<typeof revocations>).isRevoked(entry.claims))) {
      throw new TokenError('revoked', 'gid');
    }
    if (isRevoked && (await isRevoked(entry.claims, req))) throw new TokenError('revoked');
    if (!strongEnough(entry)) throw insufficient;
    accept(req, token, entry);
  }

  function refuse(req: Request, token: string, error: unknown, next: NextFunction): void {
    if (debug.enabled) {
      const why = error instanceof TokenError ? `${error.reason}${error.claim ? ` (${error.claim})` : ''}` : String((error as Error)?.name);
      debug('refused %s %s: %s; %s', req.method, pathOf(req), why, headerFacts(token));
    }
    next(error === insufficient ? error : errors.fromFailure(error));
  }

  return function requireBearerMiddleware(req: Request, res: Response, next: NextFunction): void {
    // `req.auth` (and the realm) will be added, and the route's own properties after it: make that cheap first.
    prepareForProperties(req, res);
    const found = extractBearerToken(req, places, errors);
    if (found === undefined) {
      debug('refused %s %s: no access token', req.method, pathOf(req));
      next(errors.tokenRequired());
      return;
    }
    if (!('token' in found)) {
      debug('refused %s %s: %s', req.method, pathOf(req), found.detail);
      next(found);
      return;
    }
    const { token } = found;
    const hash = cacheSize > 0 ? tokenHash(token) : '';
    const now = Date.now();
    const cached = cache.get(hash, now);
    if (cached !== undefined) {
      if (!isRevoked && !cached.checkRevocation) {
        // The hot path stays synchronous: no promise for a token we already verified.
        if (!strongEnough(cached)) {
          refuse(req, token, insufficient, next);
          return;
        }
        accept(req, token, cached);
        next();
        return;
      }
      authorize(req, token, cached).then(next, (error: unknown) => refuse(req, token, error, next));
      return;
    }
    // A cached token was verified, so it is well-formed; only new header tokens need the character check.
    if (found.fromHeader && !B64TOKEN.test(token)) {
      debug('refused %s %s: the token has characters RFC 6750 does not allow', req.method, pathOf(req));
      next(errors.invalidRequest(INVALID_REQUEST.header));
      return;
    }
    verify(token)
      .then((verified) =>
        authorize(req, token, cache.remember(hash, verified, now, revocations !== undefined && carriesGrant(verified.claims))),
      )
      .then(
        () => next(),
        (error: unknown) => refuse(req, token, error, next),
      );
  };
}
