import { HttpError } from './errors';

/**
 * True when a request path holds a percent-escape that does not decode (`%E0%A4%A`, `%ZZ`, an escape of invalid
 * UTF-8): the path names no resource, and Express's router would fail on it as soon as a route read a parameter.
 *
 * @example
 * hasMalformedPercentEncoding('/%E0%A4%A'); // true
 */
export function hasMalformedPercentEncoding(path: string): boolean {
  if (!path.includes('%')) return false;
  try {
    decodeURIComponent(path);
    return false;
  } catch {
    return true;
  }
}

/**
 * The kit's answer to a request URL with a malformed percent-encoding: 400 `malformed_uri`, without the URL.
 *
 * @example
 * if (hasMalformedPercentEncoding(req.path)) return next(malformedUriError());
 */
export function malformedUriError(cause?: unknown): HttpError {
  return new HttpError(400, {
    code: 'malformed_uri',
    detail: 'The request URL contains a malformed percent-encoding.',
    ...(cause === undefined ? {} : { cause }),
  });
}
