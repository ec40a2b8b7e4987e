/**
 * Why a DPoP proof (RFC 9449), or a request's use of one, was refused. Stable strings: tests, logs, events and the
 * `error_description` mapping rely on them. None of them ever carries a proof, a token or a key.
 */
export type DpopErrorReason =
  | 'proof_missing'
  | 'proof_multiple'
  | 'proof_malformed'
  | 'proof_too_large'
  | 'duplicate_member'
  | 'wrong_typ'
  | 'unsupported_alg'
  | 'unsupported_crit'
  | 'bad_jwk'
  | 'private_jwk'
  | 'bad_signature'
  | 'missing_claim'
  | 'invalid_claim'
  | 'wrong_htm'
  | 'wrong_htu'
  | 'stale'
  | 'issued_in_future'
  | 'wrong_ath'
  | 'nonce_required'
  | 'wrong_nonce'
  | 'replayed'
  | 'key_mismatch'
  | 'token_not_bound'
  | 'bound_token_as_bearer'
  | 'dpop_required'
  | 'scheme_mismatch';

/**
 * The OAuth error a {@link DpopError} answers as: `invalid_dpop_proof` and `use_dpop_nonce` (RFC 9449 §7.1, §9),
 * `invalid_token` for a token whose binding fails, `invalid_request` for a Bearer request carrying a proof, and
 * `dpop_required` (no OAuth error: a challenge without one) for a Bearer token where only DPoP is accepted.
 */
export type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce' | 'invalid_token' | 'invalid_request' | 'dpop_required';

const MESSAGES: Record<DpopErrorReason, string> = {
  proof_missing: 'no DPoP proof was sent',
  proof_multiple: 'more than one DPoP proof was sent',
  proof_malformed: 'the DPoP proof is not a well-formed JWS compact serialization',
  proof_too_large: 'the DPoP proof is longer than allowed',
  duplicate_member: 'the DPoP proof header or payload repeats a JSON member',
  wrong_typ: 'the DPoP proof is not typed dpop+jwt',
  unsupported_alg: 'the DPoP proof algorithm is not allowed',
  unsupported_crit: 'the DPoP proof has critical header parameters',
  bad_jwk: 'the DPoP proof key is not a usable public key for its algorithm',
  private_jwk: 'the DPoP proof header carries a private key',
  bad_signature: 'the DPoP proof signature is invalid',
  missing_claim: 'the DPoP proof lacks a required claim',
  invalid_claim: 'a claim of the DPoP proof has the wrong type or size',
  wrong_htm: 'the DPoP proof was made for another HTTP method',
  wrong_htu: 'the DPoP proof was made for another URL',
  stale: 'the DPoP proof is too old',
  issued_in_future: 'the DPoP proof was issued in the future',
  wrong_ath: 'the DPoP proof was made for another access token',
  nonce_required: 'the DPoP proof lacks the server nonce',
  wrong_nonce: 'the DPoP proof carries an unknown or expired server nonce',
  replayed: 'the DPoP proof was already used',
  key_mismatch: 'the access token is bound to another key',
  token_not_bound: 'the access token sent with the DPoP scheme is not bound to a key',
  bound_token_as_bearer: 'a key-bound access token was sent as a Bearer token',
  dpop_required: 'this resource accepts only DPoP-bound access tokens',
  scheme_mismatch: 'a DPoP proof was sent with the Bearer scheme',
};

const CODES: Record<DpopErrorReason, DpopErrorCode> = {
  proof_missing: 'invalid_dpop_proof',
  proof_multiple: 'invalid_dpop_proof',
  proof_malformed: 'invalid_dpop_proof',
  proof_too_large: 'invalid_dpop_proof',
  duplicate_member: 'invalid_dpop_proof',
  wrong_typ: 'invalid_dpop_proof',
  unsupported_alg: 'invalid_dpop_proof',
  unsupported_crit: 'invalid_dpop_proof',
  bad_jwk: 'invalid_dpop_proof',
  private_jwk: 'invalid_dpop_proof',
  bad_signature: 'invalid_dpop_proof',
  missing_claim: 'invalid_dpop_proof',
  invalid_claim: 'invalid_dpop_proof',
  wrong_htm: 'invalid_dpop_proof',
  wrong_htu: 'invalid_dpop_proof',
  stale: 'invalid_dpop_proof',
  issued_in_future: 'invalid_dpop_proof',
  wrong_ath: 'invalid_dpop_proof',
  nonce_required: 'use_dpop_nonce',
  wrong_nonce: 'use_dpop_nonce',
  replayed: 'invalid_dpop_proof',
  // RFC 9449 §7.1's own example answers a failed key binding with invalid_token.
  key_mismatch: 'invalid_token',
  token_not_bound: 'invalid_token',
  bound_token_as_bearer: 'invalid_token',
  dpop_required: 'dpop_required',
  scheme_mismatch: 'invalid_request',
};

/**
 * A DPoP proof, or the way a request uses one, was refused. `reason` is stable and says which check failed; `code`
 * is the OAuth error it answers as. For `use_dpop_nonce`, `nonce` is the nonce the client must use next (sent as
 * the `DPoP-Nonce` header).
 *
 * @example
 * try { await dpop.verify(proof, { method: 'POST', uri }); }
 * catch (err) { if (err instanceof DpopError) next(new BadRequestError({ code: err.code })); }
 */
export class DpopError extends Error {
  override readonly name = 'DpopError';
  /** Which check failed: stable, for logs, events and tests. */
  readonly reason: DpopErrorReason;
  /** The OAuth error the refusal answers as (see {@link DpopErrorCode}). */
  readonly code: DpopErrorCode;
  /** The claim at fault, for `missing_claim` and `invalid_claim`. */
  readonly claim: string | undefined;
  /** The server nonce to use next, for `use_dpop_nonce`. */
  readonly nonce: string | undefined;

  constructor(reason: DpopErrorReason, details: { claim?: string; nonce?: string } = {}) {
    super(details.claim ? `${MESSAGES[reason]} (${details.claim})` : MESSAGES[reason]);
    this.reason = reason;
    this.code = CODES[reason];
    this.claim = details.claim;
    this.nonce = details.nonce;
  }
}
