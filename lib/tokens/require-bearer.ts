import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { rememberEvents } from '../events/event-source';
import type { SecurityEventReason } from '../events/vocabulary';
import { debugChannel } from '../util/debug';
import { OptionsError } from '../util/options';
import { prepareForProperties } from '../util/request-shape';
import { bearerErrors, INVALID_REQUEST, rememberRealm } from './bearer-errors';
import { B64TOKEN, extractBearerToken, type FoundToken } from './bearer-token-request';
import { dpopFailure } from './dpop/dpop-challenges';
import { DpopError } from './dpop/dpop-error';
import { refusesBearer } from './dpop/require-dpop';
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
  const { verify, revocations, realm, maxTokenAgeMs, requirement, dpop, events } = bearerSetup(options);
  const metrics = events?.metrics;
  const insufficient = requirement === undefined ? undefined : new InsufficientAuthenticationError(requirement, { realm });
  // With DPoP, challenges name both schemes (or DPoP alone); a DPoP-scheme request gets DPoP's own.
  const errors = dpop?.errors.plain ?? bearerErrors(realm);
  const places = {
    allowQuery: options.allowQueryToken === true,
    allowBody: options.allowBodyToken === true,
    allowDpop: dpop !== undefined,
  };
  const { isRevoked } = options;
  const cacheSize = options.cacheSize ?? 1000;
  const cache = new VerifiedTokenCache(cacheSize, maxTokenAgeMs);
  const defaultErrors = bearerErrors('api');
  // The realm is worth recording only when the app named one.
  const realmField = realm !== 'api' ? { realm } : {};

  /** True when the token meets the route's `acr`/`maxAgeSeconds`, checked on every request (age changes). */
  function strongEnough(entry: CachedToken): boolean {
    return requirement === undefined || tokenMeets(entry.claims, requirement, Math.floor(Date.now() / 1000));
  }

  /** The errors of the scheme a request used: the claim checks after this middleware answer in it too. */
  const errorsOf = (found: FoundToken) => (found.dpop === true ? (dpop as NonNullable<typeof dpop>).errors.dpop : errors);

  function accept(req: Request, found: FoundToken, entry: CachedToken): void {
    const auth: AuthInfo = { token: found.token, header: entry.header, payload: entry.claims };
    req.auth = auth;
    const schemeErrors = errorsOf(found);
    if (schemeErrors !== defaultErrors) rememberRealm(req, schemeErrors);
  }

  async function authorize(req: Request, res: Response, found: FoundToken, entry: CachedToken): Promise<void> {
    if (found.dpop !== true && refusesBearer(entry.claims)) throw new DpopError('bound_token_as_bearer');
    // The proof's replay-store write and the revocation read are started together: one trip to Redis for both.
    const [, revoked] = await Promise.all([
      found.dpop === true ? (dpop as NonNullable<typeof dpop>).checkProof(req, res, found.token, entry.claims) : undefined,
      // One batched store read for tokens of a grant: a reused refresh token or revokeGrant ends them at once.
      entry.checkRevocation ? (revocations as NonNullable<typeof revocations>).isRevoked(entry.claims) : false,
    ]);
    if (revoked) throw new TokenError('revoked', 'gid');
    if (isRevoked && (await isRevoked(entry.claims, req))) throw new TokenError('revoked');
    if (!strongEnough(entry)) throw insufficient;
    accept(req, found, entry);
  }

  /**
   * Records a refusal where it is decided: a 4xx as `token.refused` (or `dpop.proof_refused`) with its reason (and,
   * for a token that verified but is revoked or too weak, whose it is); an outage (502/503) is left to the error
   * handler, with these events.
   */
  function record(req: Request, error: unknown, entry?: CachedToken): void {
    if (events === undefined) return;
    const claims = entry?.claims;
    const whose = {
      ...realmField,
      ...(typeof claims?.sub === 'string' ? { userId: claims.sub } : {}),
      ...(typeof claims?.client_id === 'string' ? { clientId: claims.client_id } : {}),
    };
    if (error instanceof DpopError) {
      events.emit('dpop.proof_refused', { reason: error.reason, ...whose }, req);
      return;
    }
    const reason: SecurityEventReason<'token.refused'> | undefined =
      error === insufficient ? 'insufficient_authentication' : error instanceof TokenError ? error.reason : undefined;
    if (reason === undefined) rememberEvents(req, events);
    else events.emit('token.refused', { reason, ...whose }, req);
  }

  function refuse(req: Request, found: FoundToken, error: unknown, next: NextFunction, entry?: CachedToken): void {
    if (debug.enabled) {
      const why =
        error instanceof TokenError || error instanceof DpopError
          ? `${error.reason}${error.claim ? ` (${error.claim})` : ''}`
          : String((error as Error)?.name);
      debug('refused %s %s: %s; %s', req.method, pathOf(req), why, headerFacts(found.token));
    }
    record(req, error, entry);
    next(error === insufficient ? error : dpopFailure(error, errorsOf(found)));
  }

  /** Verifies a token not in the cache, timing it when metrics are on (a cache hit is no verification). */
  function verifyTimed(token: string) {
    if (metrics === undefined) return verify(token);
    const started = performance.now();
    return verify(token).then(
      (verified) => {
        metrics.observeTokenVerification('success', (performance.now() - started) / 1000);
        return verified;
      },
      (error: unknown) => {
        metrics.observeTokenVerification('failure', (performance.now() - started) / 1000);
        throw error;
      },
    );
  }

  return function requireBearerMiddleware(req: Request, res: Response, next: NextFunction): void {
    // `req.auth` (and the realm) will be added, and the route's own properties after it: make that cheap first.
    prepareForProperties(req, res);
    const found = extractBearerToken(req, places, errors);
    if (found === undefined) {
      debug('refused %s %s: no access token', req.method, pathOf(req));
      if (events !== undefined) events.emit('token.refused', { reason: 'missing', ...realmField }, req);
      next(errors.tokenRequired());
      return;
    }
    if (!('token' in found)) {
      debug('refused %s %s: %s', req.method, pathOf(req), found.detail);
      if (events !== undefined) events.emit('token.refused', { reason: 'invalid_request', ...realmField }, req);
      next(found);
      return;
    }
    const early = dpop?.refuseEarly(req, found);
    if (early !== undefined) {
      refuse(req, found, early, next);
      return;
    }
    const { token } = found;
    const hash = cacheSize > 0 ? tokenHash(token) : '';
    const now = Date.now();
    const cached = cache.get(hash, now);
    if (cached !== undefined) {
      if (!isRevoked && !cached.checkRevocation && found.dpop !== true) {
        // The hot path stays synchronous: no promise for a token we already verified.
        const refusal = refusesBearer(cached.claims)
          ? new DpopError('bound_token_as_bearer')
          : strongEnough(cached)
            ? undefined
            : insufficient;
        if (refusal !== undefined) {
          refuse(req, found, refusal, next, cached);
          return;
        }
        accept(req, found, cached);
        next();
        return;
      }
      authorize(req, res, found, cached).then(next, (error: unknown) => refuse(req, found, error, next, cached));
      return;
    }
    // A cached token was verified, so it is well-formed; only new header tokens need the character check.
    if (found.fromHeader && !B64TOKEN.test(token)) {
      debug('refused %s %s: the token has characters RFC 6750 does not allow', req.method, pathOf(req));
      if (events !== undefined) events.emit('token.refused', { reason: 'invalid_request', ...realmField }, req);
      next(errors.invalidRequest(dpop === undefined ? INVALID_REQUEST.header : INVALID_REQUEST.dpopHeader));
      return;
    }
    let verifiedEntry: CachedToken | undefined;
    verifyTimed(token)
      .then((verified) => {
        verifiedEntry = cache.remember(hash, verified, now, revocations !== undefined && carriesGrant(verified.claims));
        return authorize(req, res, found, verifiedEntry);
      })
      .then(
        () => next(),
        (error: unknown) => refuse(req, found, error, next, verifiedEntry),
      );
  };
}
