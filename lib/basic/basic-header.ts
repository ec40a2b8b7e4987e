/** What {@link parseBasicAuthorization} found in an `Authorization` header. */
export type BasicAuthorization =
  | { kind: 'credentials'; username: string; password: string }
  /** No header, or another scheme (e.g. Bearer): answer with the Basic challenge. */
  | { kind: 'absent' }
  /** Basic, but not decodable: answer 400, naming `reason`. */
  | { kind: 'malformed'; reason: string };

const BASIC = /^basic +(\S*) *$/i;
// Canonical base64 only: groups of four, padding at the very end. Buffer.from would silently skip anything else.
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// RFC 7617: user-id and password must not contain control characters.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Parses `Authorization: Basic <base64(user:password)>` (RFC 7617) strictly: canonical base64, valid UTF-8, a colon
 * separating the user-id (which therefore has none) from the password, no control characters.
 *
 * @example
 * parseBasicAuthorization('Basic YWxpY2U6czNjcmV0'); // { kind: 'credentials', username: 'alice', password: 's3cret' }
 */
export function parseBasicAuthorization(header: string | undefined): BasicAuthorization {
  if (header === undefined || header === '') return { kind: 'absent' };
  if (!/^basic(?: |$)/i.test(header)) return { kind: 'absent' };
  const match = BASIC.exec(header);
  const encoded = match?.[1];
  if (!encoded) return { kind: 'malformed', reason: 'Write one base64 token after "Basic ".' };
  if (!STRICT_BASE64.test(encoded)) return { kind: 'malformed', reason: 'The Basic credentials are not valid base64.' };
  const bytes = Buffer.from(encoded, 'base64');
  // Non-zero padding bits decode to the same bytes; re-encoding catches them, so each credential has one spelling.
  if (bytes.toString('base64') !== encoded) return { kind: 'malformed', reason: 'The Basic credentials are not canonical base64.' };
  let decoded: string;
  try {
    decoded = utf8.decode(bytes);
  } catch {
    return { kind: 'malformed', reason: 'The Basic credentials are not valid UTF-8.' };
  }
  const colon = decoded.indexOf(':');
  if (colon === -1) return { kind: 'malformed', reason: 'The Basic credentials must be "user:password".' };
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  if (CONTROL.test(decoded)) return { kind: 'malformed', reason: 'The Basic credentials contain control characters.' };
  return { kind: 'credentials', username, password };
}
