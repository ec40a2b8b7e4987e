import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { JwtPayload } from './types';
import { debugChannel } from '../util/debug';
import { OptionsError } from '../util/options';
import { errorsFor } from './bearer-errors';

/** A value `claimEquals` and `claimIncludes` compare with `===`. */
export type JsonPrimitive = string | number | boolean | null;

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
const debug = debugChannel('token');

function refuseMisuse(factory: string, args: IArguments): void {
  if (args.length === 3 && typeof args[2] === 'function') {
    throw new OptionsError(`${factory}: it is a factory: write ${factory}(...) on the route, not ${factory} itself`);
  }
}

function isPrimitive(value: unknown): value is JsonPrimitive {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** Scopes a token grants: `scope` (space-separated, RFC 9068 §2.2.3) or `scp` (an array, as some providers send). */
function grantedScopes(payload: JwtPayload): Set<string> {
  const scope: unknown = payload.scope;
  const scp: unknown = (payload as Record<string, unknown>).scp;
  const list =
    typeof scope === 'string' ? scope.split(' ') : Array.isArray(scp) ? scp.filter((s): s is string => typeof s === 'string') : [];
  return new Set(list.filter(Boolean));
}

/** A claim as a set of values: an array's members, or a space-separated string's words. */
function claimValues(value: unknown): Set<unknown> | undefined {
  if (typeof value === 'string') return new Set(value.split(' '));
  return Array.isArray(value) ? new Set(value) : undefined;
}

/**
 * The one adapter of every check: reads `req.auth` (401 naming `requireBearer` when it is absent) and answers a
 * failed check with 403.
 */
function tokenCheck(name: string, passes: (payload: JwtPayload) => boolean, refusal: (req: Request) => unknown): RequestHandler {
  return function claimCheckMiddleware(req: Request, _res: Response, next: NextFunction): void {
    const payload = req.auth?.payload;
    if (payload === undefined) {
      debug('refused %s: %s found no verified token; requireBearer() must run first', req.method, name);
      next(errorsFor(req).tokenRequired(`No verified access token: mount requireBearer() before ${name}.`));
      return;
    }
    if (passes(payload)) {
      next();
      return;
    }
    debug('refused %s: %s failed', req.method, name);
    next(refusal(req));
  };
}

/**
 * Requires every listed scope (RFC 6749 §3.3) in the token that `requireBearer` verified, as
 * express-oauth2-jwt-bearer's `requiredScopes` does. Missing one → 403 `insufficient_scope` with the RFC 6750
 * challenge naming the scopes.
 *
 * @example
 * app.use('/api', requireBearer({ tokenService, audience: 'shop-api' }));
 * app.get('/api/orders', requiredScopes('orders:read'), listOrders);
 * app.delete('/api/orders/:id', requiredScopes(['orders:read', 'orders:write']), deleteOrder);
 */
export function requiredScopes(scopes: string | readonly string[]): RequestHandler {
  // eslint-disable-next-line prefer-rest-params
  refuseMisuse('requiredScopes', arguments);
  const list = typeof scopes === 'string' ? scopes.split(' ').filter(Boolean) : Array.isArray(scopes) ? [...scopes] : undefined;
  if (!list || list.length === 0 || list.some((scope) => typeof scope !== 'string' || !SCOPE_TOKEN.test(scope))) {
    throw new OptionsError(
      `requiredScopes: scopes must be scope tokens (no quotes or backslashes), e.g. 'orders:read orders:write', got ${JSON.stringify(scopes)}`,
    );
  }
  const required = Object.freeze([...new Set(list)]);
  return tokenCheck(
    `requiredScopes(${JSON.stringify(required.join(' '))})`,
    (payload) => {
      const granted = grantedScopes(payload);
      return required.every((scope) => granted.has(scope));
    },
    (req) => errorsFor(req).insufficientScope(required),
  );
}

/**
 * Allows the request when `check(payload)` returns true; otherwise 403 `insufficient_claims`. The payload is the
 * frozen claims of the token `requireBearer` verified.
 *
 * @example
 * app.get('/api/admin', claimCheck((payload) => payload.org_id === 'acme' && Boolean(payload.email_verified)), admin);
 */
export function claimCheck(check: (payload: JwtPayload) => boolean): RequestHandler {
  // eslint-disable-next-line prefer-rest-params
  refuseMisuse('claimCheck', arguments);
  if (typeof check !== 'function') throw new OptionsError('claimCheck: pass a function (payload) => boolean');
  return tokenCheck(
    'claimCheck',
    (payload) => {
      const verdict: unknown = check(payload);
      // Only a literal true passes: an async check returns a Promise, which is truthy whatever it resolves to.
      if (typeof verdict !== 'boolean') debug('claimCheck: the check returned %s, not a boolean; refused', typeof verdict);
      return verdict === true;
    },
    (req) => errorsFor(req).insufficientClaims(),
  );
}

/**
 * Requires a claim to equal a JSON primitive (`===`); otherwise 403 `insufficient_claims`.
 *
 * @example
 * app.get('/api/billing', claimEquals('org_id', 'acme'), billing);
 */
export function claimEquals(claim: string, expected: JsonPrimitive): RequestHandler {
  // eslint-disable-next-line prefer-rest-params
  refuseMisuse('claimEquals', arguments);
  if (typeof claim !== 'string' || claim === '') throw new OptionsError('claimEquals: claim must be a claim name');
  if (!isPrimitive(expected)) throw new OptionsError('claimEquals: expected must be a string, number, boolean or null');
  return tokenCheck(
    `claimEquals(${JSON.stringify(claim)})`,
    (payload) => Object.prototype.hasOwnProperty.call(payload, claim) && (payload as Record<string, unknown>)[claim] === expected,
    (req) => errorsFor(req).insufficientClaims(),
  );
}

/**
 * Requires a claim (an array, or a space-separated string) to contain every expected value; otherwise 403
 * `insufficient_claims`.
 *
 * @example
 * app.get('/api/reports', claimIncludes('roles', 'analyst', 'viewer'), reports);
 */
export function claimIncludes(claim: string, ...expected: JsonPrimitive[]): RequestHandler {
  // eslint-disable-next-line prefer-rest-params
  refuseMisuse('claimIncludes', arguments);
  if (typeof claim !== 'string' || claim === '') throw new OptionsError('claimIncludes: claim must be a claim name');
  if (expected.length === 0 || !expected.every(isPrimitive)) {
    throw new OptionsError('claimIncludes: give one or more expected values (strings, numbers, booleans or null)');
  }
  return tokenCheck(
    `claimIncludes(${JSON.stringify(claim)})`,
    (payload) => {
      const values = Object.prototype.hasOwnProperty.call(payload, claim)
        ? claimValues((payload as Record<string, unknown>)[claim])
        : undefined;
      return values !== undefined && expected.every((value) => values.has(value));
    },
    (req) => errorsFor(req).insufficientClaims(),
  );
}
