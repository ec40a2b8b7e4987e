import type { Request } from 'express';
import type { BadRequestError } from '../http/errors';
import { INVALID_REQUEST, type BearerErrors } from './bearer-errors';

/** RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
export const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Where a token may come from besides the Authorization header (RFC 6750 §2.2, §2.3). */
export interface TokenPlaces {
  allowQuery: boolean;
  allowBody: boolean;
  /** Accept `Authorization: DPoP <token>` (RFC 9449 §7.1) besides Bearer. Default false. */
  allowDpop?: boolean;
}

/** A token found in a request; a header token's characters are checked later, and only when it is not cached. */
export interface FoundToken {
  token: string;
  fromHeader: boolean;
  /** Sent with the DPoP scheme (so it must come with a proof of its key). */
  dpop?: boolean;
}

function countAuthorizationHeaders(req: Request): number {
  let count = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    // The two spellings clients send are compared as they are; only another casing pays for a lower-case copy.
    if (name.length === 13 && (name === 'Authorization' || name === 'authorization' || name.toLowerCase() === 'authorization')) count++;
  }
  return count;
}

/**
 * The access token of a request, undefined when none was sent, or a 400 `invalid_request` for a malformed or
 * ambiguous one (another scheme, two headers, a header and a query token, a token where it is not allowed).
 *
 * @example
 * const found = extractBearerToken(req, { allowQuery: false, allowBody: false }, bearerErrors('api'));
 */
export function extractBearerToken(req: Request, places: TokenPlaces, errors: BearerErrors): FoundToken | undefined | BadRequestError {
  const header = req.headers.authorization;
  let found: FoundToken | undefined;
  if (header !== undefined) {
    // Node keeps only the first of repeated Authorization headers; a second one is an ambiguous request.
    if (countAuthorizationHeaders(req) > 1) return errors.invalidRequest(INVALID_REQUEST.twoMethods);
    if (
      header.length >= 8 &&
      header.charCodeAt(6) === 32 &&
      (header.startsWith('Bearer') || header.slice(0, 6).toLowerCase() === 'bearer')
    ) {
      found = { token: header.slice(7), fromHeader: true };
    } else if (
      places.allowDpop === true &&
      header.length >= 6 &&
      header.charCodeAt(4) === 32 &&
      header.slice(0, 4).toLowerCase() === 'dpop'
    ) {
      found = { token: header.slice(5), fromHeader: true, dpop: true };
    } else {
      return errors.invalidRequest(places.allowDpop === true ? INVALID_REQUEST.dpopHeader : INVALID_REQUEST.header);
    }
  }
  // Only look at the query when the URL can carry a token at all; parsing it on every request would cost.
  if (req.url.includes('access_token')) {
    const fromQuery: unknown = req.query.access_token;
    if (fromQuery !== undefined) {
      if (!places.allowQuery) return errors.invalidRequest(INVALID_REQUEST.notInHeader);
      if (found !== undefined) return errors.invalidRequest(INVALID_REQUEST.twoMethods);
      if (typeof fromQuery !== 'string' || !B64TOKEN.test(fromQuery)) return errors.invalidRequest(INVALID_REQUEST.badParameter);
      found = { token: fromQuery, fromHeader: false };
    }
  }
  const body: unknown = req.body;
  // RFC 6750 §2.2 defines body tokens for form posts only; an access_token field of a JSON body is the app's data.
  if (typeof body === 'object' && body !== null && 'access_token' in body && req.is('application/x-www-form-urlencoded')) {
    const fromBody: unknown = (body as Record<string, unknown>).access_token;
    if (!places.allowBody) return errors.invalidRequest(INVALID_REQUEST.notInHeader);
    if (found !== undefined) return errors.invalidRequest(INVALID_REQUEST.twoMethods);
    if (req.method === 'GET') return errors.invalidRequest(INVALID_REQUEST.notAForm);
    if (typeof fromBody !== 'string' || !B64TOKEN.test(fromBody)) return errors.invalidRequest(INVALID_REQUEST.badParameter);
    found = { token: fromBody, fromHeader: false };
  }
  return found;
}
