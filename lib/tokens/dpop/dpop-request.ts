import type { Request } from 'express';
import { BadRequestError } from '../../http/errors';
import { checkOptions } from '../../util/options';
import { requestOrigin } from '../../util/request-origin';
import { DpopError } from './dpop-error';
import type { DpopVerifier, VerifiedDpopProof } from './dpop-verifier';

/**
 * The target URI a DPoP proof of this request must name in `htu`: the request's origin as the kit decides it
 * everywhere (`requestOrigin`: `req.protocol` and the host under `trust proxy`) and the path it was sent to, without
 * the query. Undefined for a request without a usable host. The one place the kit builds it, so every DPoP check
 * agrees with the rest of the kit on which host a request was for.
 *
 * @example
 * dpopTargetUri(req); // 'https://api.example.test/orders'
 */
export function dpopTargetUri(req: Request): string | undefined {
  const origin = requestOrigin(req);
  if (origin === undefined) return undefined;
  // originalUrl: the path the client sent, before any mount point was stripped.
  const url = req.originalUrl ?? req.url;
  const query = url.indexOf('?');
  return `${origin}${query === -1 ? url : url.slice(0, query)}`;
}

/**
 * The `DPoP` header of a request: undefined when none was sent, or a `DpopError` (`proof_multiple`) when it came
 * twice (RFC 9449 §4.3 check 1); Node joins repeated headers, so they are counted in the raw headers.
 *
 * @example
 * const proof = dpopHeader(req);
 */
export function dpopHeader(req: Request): string | undefined {
  const value = req.headers.dpop;
  if (value === undefined) return undefined;
  let count = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'dpop') count++;
  }
  if (count > 1 || typeof value !== 'string') throw new DpopError('proof_multiple');
  return value;
}

/**
 * A token endpoint's answer to a refused proof (RFC 9449 §5): 400 with the OAuth error in `code` and in `error`
 * (the RFC 6749 §5.2 member OAuth clients read), and for `use_dpop_nonce` the `DPoP-Nonce` header to retry with. For
 * the `DpopError` a `TokenService` throws when a public client's token request carries no proof.
 *
 * @example
 * catch (err) { next(err instanceof DpopError ? dpopTokenError(err) : err); }
 */
export function dpopTokenError(error: DpopError): BadRequestError {
  return new BadRequestError({
    code: error.code,
    detail: `The DPoP proof was refused: ${error.message}.`,
    // OAuth clients read the RFC 6749 §5.2 member; use_dpop_nonce carries the nonce to retry with (RFC 9449 §8).
    extensions: { error: error.code },
    ...(error.nonce === undefined ? {} : { headers: { 'DPoP-Nonce': error.nonce } }),
  });
}

/** Options of {@link tokenRequestProof}. */
export interface TokenRequestProofOptions {
  /** Refuse a request without a proof (400 `invalid_dpop_proof`), e.g. for a public client. Default false. */
  required?: boolean;
}

/**
 * The DPoP proof of a token request (RFC 9449 §5), checked against the request's method and URI: undefined when
 * the request carries none (and `required` is not set), its key (`jkt`) when it is good, and otherwise a 400 for
 * `next(err)` (see {@link dpopTokenError}): `invalid_dpop_proof`, or `use_dpop_nonce` with the `DPoP-Nonce` header
 * to retry with. Pass `proof.jkt` to `TokenService.issueTokens` / `redeemRefreshToken` as `dpopJkt`, and answer
 * with the token's `tokenType` (`DPoP`).
 *
 * @example
 * app.post('/token', express.urlencoded({ extended: false }), async (req, res, next) => {
 *   try {
 *     const proof = await tokenRequestProof(req, dpop);
 *     const { accessToken, refreshToken } = await tokens.redeemRefreshToken(String(req.body.refresh_token), {
 *       clientId, audience: 'shop-api', ...(proof ? { dpopJkt: proof.jkt } : {}),
 *     });
 *     res.set('Cache-Control', 'no-store').json({ access_token: accessToken.token, token_type: accessToken.tokenType, refresh_token: refreshToken.token });
 *   } catch (err) { next(err); }
 * });
 */
export async function tokenRequestProof(
  req: Request,
  verifier: DpopVerifier,
  options: TokenRequestProofOptions = {},
): Promise<VerifiedDpopProof | undefined> {
  checkOptions('tokenRequestProof', options, { required: { type: 'boolean' } });
  try {
    const proof = dpopHeader(req);
    if (proof === undefined && options.required !== true) return undefined;
    return await verifier.verify(proof, { method: req.method, uri: dpopTargetUri(req) ?? '' });
  } catch (error) {
    throw error instanceof DpopError ? dpopTokenError(error) : error;
  }
}
