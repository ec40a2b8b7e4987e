// RFC 3986 §2.3: characters that mean the same percent-encoded or not.
const UNRESERVED = /[A-Za-z0-9\-._~]/;
const PERCENT_ENCODED = /%([0-9A-Fa-f]{2})/g;
// Printable ASCII without the backslash: anything else in an htu is a client bug or an attempt to confuse a parser.
const PLAIN_URI = /^[\x21-\x5b\x5d-\x7e]+$/;
// A client names the same few URLs in every proof, and an API serves the same few: parsing them (WHATWG URL) was about
// a tenth of a proof check's own work. Bounded; a stream of distinct URIs only empties it.
const normalised = new Map<string, string | undefined>();
const URIS_REMEMBERED = 1000;

/** RFC 3986 §6.2.2.1 and §6.2.2.2: upper-case hex digits, unreserved characters decoded. */
function normalizePercentEncoding(path: string): string {
  return path.replace(PERCENT_ENCODED, (escape: string, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
  });
}

/**
 * An http(s) URI in the form RFC 9449 §4.3 compares `htu` in: the syntax- and scheme-based normalisation of
 * RFC 3986 §6.2.2 and §6.2.3 (scheme and host in lower case, the default port dropped, dot segments removed,
 * percent-encodings normalised), without query and fragment. Undefined for anything else (another scheme,
 * credentials in the authority, an unparseable URI).
 *
 * @example
 * normalizeHttpUri('HTTPS://API.Example.TEST:443/a/./b%7e'); // 'https://api.example.test/a/b~'
 */
export function normalizeHttpUri(uri: string): string | undefined {
  const known = normalised.get(uri);
  if (known !== undefined || normalised.has(uri)) return known;
  const result = parseHttpUri(uri);
  if (normalised.size >= URIS_REMEMBERED) normalised.clear();
  normalised.set(uri, result);
  return result;
}

function parseHttpUri(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '') return undefined;
  return `${url.origin}${normalizePercentEncoding(url.pathname)}`;
}

/**
 * The normalised form of a proof's `htu`, or undefined when it cannot name a request's target: not a string, not
 * printable ASCII, or carrying a query or fragment (RFC 9449 §4.2: the client sends the URI without them).
 *
 * @example
 * normalizeHtu('https://api.example.test/orders'); // 'https://api.example.test/orders'
 * normalizeHtu('https://api.example.test/orders?page=2'); // undefined
 */
export function normalizeHtu(htu: unknown): string | undefined {
  if (typeof htu !== 'string' || htu.length > 4096 || !PLAIN_URI.test(htu) || htu.includes('?') || htu.includes('#')) return undefined;
  return normalizeHttpUri(htu);
}
