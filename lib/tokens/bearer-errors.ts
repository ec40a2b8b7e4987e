import type { Request } from 'express';
import { BadGatewayError, BadRequestError, ForbiddenError, ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import { StoreUnavailableError } from '../store/port';
import { KeySourceUnavailableError, TokenError } from './errors';

/** The fixed `error_description`s of `invalid_request` (RFC 6750 §3: no quotes or backslashes in them). */
export const INVALID_REQUEST = {
  header: 'The Authorization header must be the Bearer scheme, one space and the token',
  dpopHeader: 'The Authorization header must be the Bearer or DPoP scheme, one space and the token',
  twoMethods: 'Send the access token in exactly one place',
  notInHeader: 'Send the access token in the Authorization header',
  badParameter: 'The access_token parameter is malformed',
  notAForm: 'A body token needs a form-encoded POST body',
  proofWithBearer: 'Send a DPoP proof only with the DPoP scheme',
} as const;

export type InvalidRequestDescription = (typeof INVALID_REQUEST)[keyof typeof INVALID_REQUEST];

/** How a realm's challenges read besides the realm: the scheme, its own parameters, and another scheme offered too. */
export interface ChallengeOptions {
  /** Default `Bearer`. */
  scheme?: 'Bearer' | 'DPoP';
  /** Parameters every challenge of the scheme ends with, e.g. `algs="ES256 PS256"` (RFC 9449 §7.1). */
  params?: string;
  /** A second challenge appended to every one, e.g. `DPoP realm="api", algs="ES256"` where both schemes are accepted. */
  alsoOffer?: string;
}

/** The RFC 6750 §3 errors of one realm, with every challenge string built once. */
export interface BearerErrors {
  readonly realm: string;
  /** The challenge without an error, e.g. `Bearer realm="api"`, as a 401 for a missing token sends it. */
  readonly challenge: string;
  tokenRequired(detail?: string): UnauthorizedError;
  invalidRequest(description: InvalidRequestDescription): BadRequestError;
  invalidToken(expired: boolean): UnauthorizedError;
  insufficientScope(scopes: readonly string[]): ForbiddenError;
  insufficientClaims(): ForbiddenError;
  /**
   * A 401 whose challenge carries another error code of the scheme (`invalid_dpop_proof`, `use_dpop_nonce`), with a
   * fixed description (no quotes or backslashes), a detail and further headers.
   */
  unauthorized(code: string, description: string, detail: string, headers?: Record<string, string>): UnauthorizedError;
  /** Maps a verification or revocation failure to the answer: 401, 502 or 503 (fail closed). */
  fromFailure(error: unknown): unknown;
}

function build(realm: string, options: ChallengeOptions): BearerErrors {
  const basic = `${options.scheme ?? 'Bearer'} realm="${realm}"`;
  const tail = `${options.params ? `, ${options.params}` : ''}${options.alsoOffer ? `, ${options.alsoOffer}` : ''}`;
  const withError = (error: string, description: string, extra = '') =>
    `${basic}, error="${error}", error_description="${description}"${extra}${tail}`;
  const challenge = `${basic}${tail}`;
  const requestChallenges = new Map<string, string>(
    Object.values(INVALID_REQUEST).map((description) => [description, withError('invalid_request', description)]),
  );
  const expiredChallenge = withError('invalid_token', 'The access token expired');
  const invalidChallenge = withError('invalid_token', 'The access token is invalid');
  const scopeChallenges = new Map<string, string>();
  const otherChallenges = new Map<string, string>();
  const invalidToken = (expired: boolean): UnauthorizedError =>
    new UnauthorizedError({
      code: 'invalid_token',
      detail: expired ? 'The access token expired.' : 'The access token is invalid.',
      headers: { 'WWW-Authenticate': expired ? expiredChallenge : invalidChallenge },
    });
  return {
    realm,
    challenge,
    tokenRequired: (detail = 'An access token is required.') =>
      new UnauthorizedError({ code: 'token_required', detail, headers: { 'WWW-Authenticate': challenge } }),
    invalidRequest: (description) =>
      new BadRequestError({
        code: 'invalid_request',
        detail: description,
        headers: { 'WWW-Authenticate': requestChallenges.get(description) as string },
      }),
    invalidToken,
    insufficientScope(scopes) {
      const scopeText = scopes.join(' ');
      let scopeChallenge = scopeChallenges.get(scopeText);
      if (scopeChallenge === undefined) {
        scopeChallenge = withError('insufficient_scope', 'The access token lacks a required scope', `, scope="${scopeText}"`);
        // Scope sets come from route definitions, so this map stays as small as the app's route table.
        scopeChallenges.set(scopeText, scopeChallenge);
      }
      return new ForbiddenError({
        code: 'insufficient_scope',
        detail: 'The access token lacks a required scope.',
        headers: { 'WWW-Authenticate': scopeChallenge },
        extensions: { scope: scopeText },
      });
    },
    // RFC 6750 has no error code for "valid, but its claims do not allow this"; a 403 needs no challenge (§3).
    insufficientClaims: () => new ForbiddenError({ code: 'insufficient_claims', detail: 'The access token does not allow this request.' }),
    unauthorized(code, description, detail, headers = {}) {
      const key = `${code}\n${description}`;
      let errorChallenge = otherChallenges.get(key);
      if (errorChallenge === undefined) {
        errorChallenge = withError(code, description);
        // Codes and descriptions are the kit's own fixed strings: a handful per realm.
        otherChallenges.set(key, errorChallenge);
      }
      return new UnauthorizedError({ code, detail, headers: { ...headers, 'WWW-Authenticate': errorChallenge } });
    },
    fromFailure(error) {
      if (error instanceof TokenError) return invalidToken(error.reason === 'expired');
      if (error instanceof KeySourceUnavailableError) {
        return error.failure === 'bad_response'
          ? new BadGatewayError({ code: 'key_source_error', detail: 'The token keys could not be read from the identity provider.' })
          : new ServiceUnavailableError({ code: 'key_source_unavailable', detail: 'The token keys are unavailable. Try again shortly.' });
      }
      if (error instanceof StoreUnavailableError) {
        // Never "not revoked" during an outage; mapped here so Express's own handler answers 503 too.
        return new ServiceUnavailableError({
          code: 'store_unavailable',
          detail: 'Token revocation cannot be checked right now. Try again shortly.',
        });
      }
      return error;
    },
  };
}

const byChallenge = new Map<string, BearerErrors>();
const errorsOfRequest = new WeakMap<Request, BearerErrors>();

/**
 * The errors of a realm (built once per realm and challenge form): Bearer's by default, or another scheme's.
 *
 * @example
 * next(bearerErrors('api').invalidToken(false));
 * const dpop = bearerErrors('api', { scheme: 'DPoP', params: 'algs="ES256"' });
 */
export function bearerErrors(realm: string, options: ChallengeOptions = {}): BearerErrors {
  const key = `${realm}\n${options.scheme ?? 'Bearer'}\n${options.params ?? ''}\n${options.alsoOffer ?? ''}`;
  let errors = byChallenge.get(key);
  if (errors === undefined) {
    errors = build(realm, options);
    // One entry per configured middleware: realms and challenge forms come from options, never from requests.
    byChallenge.set(key, errors);
  }
  return errors;
}

/**
 * Remembers the errors (realm and scheme) of the `requireBearer` that authenticated a request, so the claim checks
 * mounted after it answer with the same challenge.
 *
 * @example
 * rememberRealm(req, bearerErrors('orders'));
 */
export function rememberRealm(req: Request, errors: BearerErrors): void {
  errorsOfRequest.set(req, errors);
}

/**
 * The errors of the realm and scheme that authenticated this request (Bearer, realm `api`, when none did).
 *
 * @example
 * next(errorsFor(req).insufficientScope(['orders:read']));
 */
export function errorsFor(req: Request): BearerErrors {
  return errorsOfRequest.get(req) ?? bearerErrors('api');
}
