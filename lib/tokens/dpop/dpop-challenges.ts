import { UnauthorizedError } from '../../http/errors';
import { bearerErrors, INVALID_REQUEST, type BearerErrors } from '../bearer-errors';
import { DpopError } from './dpop-error';

/** The errors of a realm where DPoP is accepted: one set per scheme, each offering the other where both are. */
export interface DpopRealmErrors {
  /** For requests without a token, malformed ones and Bearer tokens; DPoP's own in `required` mode. */
  readonly plain: BearerErrors;
  /** For requests with the DPoP scheme: `DPoP realm="…", error="…", algs="…"`. */
  readonly dpop: BearerErrors;
}

/**
 * The challenges of a `requireBearer` with DPoP (RFC 9449 §7.1, §7.2): the DPoP scheme with its `algs` parameter,
 * and in `allowed` mode the Bearer scheme too, the scheme of the failing request first.
 *
 * @example
 * const errors = dpopRealmErrors('api', 'allowed', ['ES256', 'EdDSA']);
 */
export function dpopRealmErrors(realm: string, mode: 'allowed' | 'required', algorithms: readonly string[]): DpopRealmErrors {
  const params = `algs="${algorithms.join(' ')}"`;
  if (mode === 'required') {
    const dpop = bearerErrors(realm, { scheme: 'DPoP', params });
    return { plain: dpop, dpop };
  }
  return {
    plain: bearerErrors(realm, { alsoOffer: `DPoP realm="${realm}", ${params}` }),
    dpop: bearerErrors(realm, { scheme: 'DPoP', params, alsoOffer: `Bearer realm="${realm}"` }),
  };
}

/**
 * The answer to a refused DPoP request, in the challenge of the scheme it used: 401 `invalid_dpop_proof`; 401
 * `use_dpop_nonce` with the `DPoP-Nonce` header; 401 `invalid_token` for a failed binding (another key, a token
 * without `cnf.jkt` under the DPoP scheme, a bound token sent as Bearer); 400 `invalid_request` for a proof sent
 * with the Bearer scheme; 401 `dpop_required` with the bare DPoP challenge for a Bearer token where only DPoP is
 * accepted. Anything else goes to the scheme's own mapping (a bad token, an outage).
 *
 * @example
 * next(dpopFailure(error, errors.dpop));
 */
export function dpopFailure(error: unknown, errors: BearerErrors): unknown {
  if (!(error instanceof DpopError)) return errors.fromFailure(error);
  switch (error.code) {
    case 'invalid_token':
      return errors.invalidToken(false);
    case 'invalid_request':
      return errors.invalidRequest(INVALID_REQUEST.proofWithBearer);
    case 'use_dpop_nonce':
      return errors.unauthorized(
        'use_dpop_nonce',
        'Resend the request with a DPoP proof carrying the nonce of the DPoP-Nonce header',
        'The DPoP proof must carry the server nonce sent in the DPoP-Nonce header.',
        error.nonce === undefined ? {} : { 'DPoP-Nonce': error.nonce },
      );
    case 'dpop_required':
      // RFC 6750 §3.1: a request without credentials of an accepted scheme gets the challenge without an error.
      return new UnauthorizedError({
        code: 'dpop_required',
        detail: 'This resource accepts only DPoP-bound access tokens, sent with the DPoP scheme and a proof.',
        headers: { 'WWW-Authenticate': errors.challenge },
      });
    case 'invalid_dpop_proof':
      return errors.unauthorized('invalid_dpop_proof', 'The DPoP proof is invalid', 'The DPoP proof was refused.');
  }
}
