import type { Request } from 'express';
import { BadGatewayError, BadRequestError, ForbiddenError, ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import { StoreUnavailableError } from '../store/port';
import { KeySourceUnavailableError, TokenError } from './errors';

/** The fixed `error_description`s of `invalid_request` (RFC 6750 §3: no quotes or backslashes in them). */
export const INVALID_REQUEST = {
  header: 'The Authorization header must be the Bearer scheme, one space and the token',
  twoMethods: 'Send the access token in exactly one place',
  notInHeader: 'Send the access token in the Authorization header',
  badParameter: 'The access_token parameter is malformed',
  notAForm: 'A body token needs a form-encoded POST body',
} as const;

export type InvalidRequestDescription = (typeof INVALID_REQUEST)[keyof typeof INVALID_REQUEST];

/** The RFC 6750 §3 errors of one realm, with every challenge string built once. */
export interface BearerErrors {
  readonly realm: string;
  tokenRequired(detail?: string): UnauthorizedError;
  invalidRequest(description: InvalidRequestDescription): BadRequestError;
  invalidToken(expired: boolean): UnauthorizedError;
  insufficientScope(scopes: readonly string[]): ForbiddenError;
  insufficientClaims(): ForbiddenError;
  /** Maps a verification or revocation failure to the answer: 401, 502 or 503 (fail closed). */
  fromFailure(error: unknown): unknown;
}

function build(realm: string): BearerErrors {
  const basic = `Bearer realm="${realm}"`;
  const requestChallenges = new Map<string, string>(
    Object.values(INVALID_REQUEST).map((description) => [
      description,
      `${basic}, error="invalid_request", error_description="${description}"`,
    ]),
  );
  const expiredChallenge = `${basic}, error="invalid_token", error_description="The access token expired"`;
  const invalidChallenge = `${basic}, error="invalid_token", error_description="The access token is invalid"`;
  const scopeChallenges = new Map<string, string>();
  const invalidToken = (expired: boolean): UnauthorizedError =>
    new UnauthorizedError({
      code: 'invalid_token',
      detail: expired ? 'The access token expired.' : 'The access token is invalid.',
      headers: { 'WWW-Authenticate': expired ? expiredChallenge : invalidChallenge },
    });
  return {
    realm,
    tokenRequired: (detail = 'An access token is required.') =>
      new UnauthorizedError({ code: 'token_required', detail, headers: { 'WWW-Authenticate': basic } }),
    invalidRequest: (description) =>
      new BadRequestError({
        code: 'invalid_request',
        detail: description,
        headers: { 'WWW-Authenticate': requestChallenges.get(description) as string },
      }),
    invalidToken,
    insufficientScope(scopes) {
      const scopeText = scopes.join(' ');
      let challenge = scopeChallenges.get(scopeText);
      if (challenge === undefined) {
        challenge = `${basic}, error="insufficient_scope", error_description="The access token lacks a required scope", scope="${scopeText}"`;
        // Scope sets come from route definitions, so this map stays as small as the app's route table.
        scopeChallenges.set(scopeText, challenge);
      }
      return new ForbiddenError({
        code: 'insufficient_scope',
        detail: 'The access token lacks a required scope.',
        headers: { 'WWW-Authenticate': challenge },
        extensions: { scope: scopeText },
      });
    },
    // RFC 6750 has no error code for "valid, but its claims do not allow this"; a 403 needs no challenge (§3).
    insufficientClaims: () => new ForbiddenError({ code: 'insufficient_claims', detail: 'The access token does not allow this request.' }),
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

const byRealm = new Map<string, BearerErrors>();
const realmOfRequest = new WeakMap<Request, string>();

/**
 * The errors of a realm (built once per realm).
 *
 * @example
 * next(bearerErrors('api').invalidToken(false));
 */
export function bearerErrors(realm: string): BearerErrors {
  let errors = byRealm.get(realm);
  if (errors === undefined) {
    errors = build(realm);
    byRealm.set(realm, errors);
  }
  return errors;
}

/**
 * Remembers the realm of the `requireBearer` that authenticated a request, so the claim checks mounted after it
 * answer with the same challenge.
 *
 * @example
 * rememberRealm(req, 'api');
 */
export function rememberRealm(req: Request, realm: string): void {
  realmOfRequest.set(req, realm);
}

/**
 * The errors of the realm that authenticated this request (`api` when none did).
 *
 * @example
 * next(errorsFor(req).insufficientScope(['orders:read']));
 */
export function errorsFor(req: Request): BearerErrors {
  return bearerErrors(realmOfRequest.get(req) ?? 'api');
}
