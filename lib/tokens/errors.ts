/**
 * Why a token was refused. Stable strings: tests, logs and the `error_description` mapping rely on them.
 * None of them ever carries the token or a library's internal message.
 */
export type TokenErrorReason =
  | 'malformed'
  | 'too_large'
  | 'duplicate_member'
  | 'unsupported_alg'
  | 'unsupported_crit'
  | 'alg_mismatch'
  | 'unknown_kid'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'issued_in_future'
  | 'too_old'
  | 'missing_claim'
  | 'invalid_claim'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'wrong_typ'
  | 'wrong_nonce'
  | 'revoked';

const MESSAGES: Record<TokenErrorReason, string> = {
  malformed: 'the token is not a well-formed JWS compact serialization',
  too_large: 'the token is longer than allowed',
  duplicate_member: 'the token header or payload repeats a JSON member',
  unsupported_alg: 'the token algorithm is not allowed',
  unsupported_crit: 'the token has critical header parameters',
  alg_mismatch: 'the token algorithm does not match its key',
  unknown_kid: 'no key matches the token',
  bad_signature: 'the token signature is invalid',
  expired: 'the token has expired',
  not_yet_valid: 'the token is not valid yet',
  issued_in_future: 'the token was issued in the future',
  too_old: 'the token is older than allowed',
  missing_claim: 'the token lacks a required claim',
  invalid_claim: 'a claim of the token has the wrong type',
  wrong_issuer: 'the token issuer is not accepted',
  wrong_audience: 'the token audience is not accepted',
  wrong_typ: 'the token type is not accepted',
  wrong_nonce: 'the token nonce does not match',
  revoked: 'the token has been revoked',
};

/**
 * A JWT was refused. `reason` is stable; `claim` names the claim at fault for claim reasons.
 *
 * @example
 * try { await verify(token); } catch (err) { if (err instanceof TokenError && err.reason === 'expired') refresh(); }
 */
export class TokenError extends Error {
  override readonly name = 'TokenError';
  /** Always `invalid_token`, the RFC 6750 error it answers as; `reason` says which check failed. */
  readonly code = 'invalid_token';
  readonly reason: TokenErrorReason;
  readonly claim: string | undefined;

  constructor(reason: TokenErrorReason, claim?: string) {
    super(claim ? `${MESSAGES[reason]} (${claim})` : MESSAGES[reason]);
    this.reason = reason;
    this.claim = claim;
  }
}

/** How a key source failed: `unreachable` and `timeout` map to 503, `bad_response` (a misbehaving upstream) to 502. */
export type KeySourceFailure = 'unreachable' | 'timeout' | 'bad_response';

/**
 * The keys needed to verify a token cannot be obtained (the JWKS endpoint is down, slow or answers nonsense) and
 * none are cached. Middlewares fail closed with 503 (502 for `bad_response`), never treating it as "invalid token".
 *
 * @example
 * if (err instanceof KeySourceUnavailableError) next(new ServiceUnavailableError({ retryAfterSeconds: 5 }));
 */
export class KeySourceUnavailableError extends Error {
  override readonly name = 'KeySourceUnavailableError';
  /** `key_source_error` for a `bad_response` (502), `key_source_unavailable` otherwise (503), as middlewares answer. */
  readonly code: 'key_source_unavailable' | 'key_source_error';
  readonly failure: KeySourceFailure;

  constructor(failure: KeySourceFailure, options?: { cause?: unknown }) {
    super(
      failure === 'timeout'
        ? 'the key source did not answer in time'
        : failure === 'bad_response'
          ? 'the key source answered with an unusable key set'
          : 'the key source is unreachable',
      options,
    );
    this.failure = failure;
    this.code = failure === 'bad_response' ? 'key_source_error' : 'key_source_unavailable';
  }
}

/** Alias of {@link KeySourceUnavailableError}, the name the design notes use. */
export const KeySourceUnavailable = KeySourceUnavailableError;

/** Why a refresh token was refused. Every reason maps to the OAuth error `invalid_grant`. */
export type RefreshTokenErrorReason = 'invalid' | 'reused' | 'revoked' | 'client_mismatch' | 'key_mismatch';

/**
 * A refresh token cannot be redeemed. `reused` means an already-rotated token came back: its grant (every family
 * of it, and the access tokens carrying its `gid`) has been revoked. Token endpoints answer 400 `invalid_grant` for
 * every reason.
 *
 * @example
 * catch (err) { if (err instanceof RefreshTokenError) next(new BadRequestError({ code: err.oauthError })); }
 */
export class RefreshTokenError extends Error {
  override readonly name = 'RefreshTokenError';
  /** Always `invalid_grant` (RFC 6749 §5.2), the same as `oauthError`. */
  readonly code = 'invalid_grant';
  readonly reason: RefreshTokenErrorReason;
  readonly oauthError = 'invalid_grant';

  constructor(reason: RefreshTokenErrorReason) {
    super(
      reason === 'reused'
        ? 'the refresh token was already used; its grant has been revoked'
        : reason === 'revoked'
          ? 'the refresh token has been revoked'
          : reason === 'client_mismatch'
            ? 'the refresh token was issued to another client; its grant has been revoked'
            : reason === 'key_mismatch'
              ? 'the refresh token is bound to a DPoP key the request did not prove; its grant has been revoked'
              : 'the refresh token is invalid or expired',
    );
    this.reason = reason;
  }
}
