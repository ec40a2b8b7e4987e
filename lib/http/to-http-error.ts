import { StoreUnavailableError } from '../store/port';
import { HttpError, ServiceUnavailableError } from './errors';
import { malformedUriError } from './malformed-uri';

/** What body-parser, raw-body, the router and other `http-errors` users put on the errors they pass to `next`. */
interface LibraryError {
  name?: unknown;
  code?: unknown;
  type?: unknown;
  status?: unknown;
  statusCode?: unknown;
}

/**
 * Stable codes and fixed explanations for the client errors of Express's body parsers (body-parser and raw-body
 * `type`s). The libraries' own messages are never shown: some quote the input (a charset, a parse position).
 */
const BODY_ERRORS: Readonly<Record<string, { code: string; detail: string }>> = {
  'entity.parse.failed': { code: 'entity_parse_failed', detail: 'The request body is not valid for its Content-Type.' },
  'entity.too.large': { code: 'entity_too_large', detail: 'The request body is larger than this endpoint accepts.' },
  'entity.verify.failed': { code: 'entity_verify_failed', detail: 'The request body was refused.' },
  'charset.unsupported': { code: 'charset_unsupported', detail: 'The charset of the request body is not supported.' },
  'encoding.unsupported': { code: 'encoding_unsupported', detail: 'The Content-Encoding of the request body is not supported.' },
  'parameters.too.many': { code: 'parameters_too_many', detail: 'The request body has too many parameters.' },
  'querystring.parse.rangeError': { code: 'parameters_too_deep', detail: 'The request body nests parameters too deeply.' },
  'request.aborted': { code: 'request_aborted', detail: 'The request body was not sent completely.' },
  'request.size.invalid': { code: 'request_size_invalid', detail: 'The request body does not match its Content-Length.' },
};

function statusOf(error: LibraryError): number | undefined {
  const status = typeof error.status === 'number' ? error.status : error.statusCode;
  return typeof status === 'number' && Number.isInteger(status) ? status : undefined;
}

/**
 * Maps anything passed to `next(err)` to an {@link HttpError}:
 *
 * - the kit's own errors as they are, and a store outage as 503 `store_unavailable` (fail closed);
 * - a client error of a library, i.e. any error with a 4xx `status`/`statusCode`, whether or not it is marked
 *   `expose`, as that 4xx with a stable code: the router's malformed percent-escape (`URIError`, 400
 *   `malformed_uri`), the body parsers' errors by their `type` (`entity_too_large`, `charset_unsupported`, …) or
 *   zlib code (`content_decoding_failed`), and others by status (`bad_request`, …). Their messages are dropped,
 *   since some quote the input;
 * - everything else (a bug, a 5xx of a library) as 500 `internal_error`, message hidden.
 *
 * @example
 * app.use((err, req, res, next) => {
 *   const problem = toHttpError(err);
 *   if (problem.status === 403 && req.accepts('html')) res.status(403).send(friendlyPage);
 *   else next(err);
 * });
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof StoreUnavailableError) {
    return new ServiceUnavailableError({ code: 'store_unavailable', detail: 'The session store is unavailable. Try again shortly.' });
  }
  const library = (typeof error === 'object' && error !== null ? error : {}) as LibraryError;
  const status = statusOf(library);
  if (status !== undefined && status >= 400 && status < 500) {
    const known = typeof library.type === 'string' ? BODY_ERRORS[library.type] : undefined;
    if (known) return new HttpError(status, { code: known.code, detail: known.detail, cause: error });
    // zlib's codes (Z_DATA_ERROR, Z_BUF_ERROR, …): the body parser could not inflate a gzip/deflate/br body.
    if (typeof library.code === 'string' && library.code.startsWith('Z_')) {
      return new HttpError(status, {
        code: 'content_decoding_failed',
        detail: 'The request body does not decode by its Content-Encoding.',
        cause: error,
      });
    }
    if (error instanceof URIError && status === 400) return malformedUriError(error);
    return new HttpError(status, { cause: error });
  }
  return new HttpError(500, { code: 'internal_error', cause: error });
}
