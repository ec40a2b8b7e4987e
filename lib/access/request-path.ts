/**
 * How a request path reads to the parts that see it. Express's router (4 and 5 alike) matches a route's literal text
 * against the path as it came, percent-escapes and all: `/%61udit` is not `/audit` to `app.get('/audit')`, and
 * `//audit` or `/x/../audit` are no address of it either. What runs next reads it decoded: a route parameter
 * (`/:page` gets `audit` from `/%61udit`, `audit/` from `/audit%2F`), a static file server, a proxy that resolves
 * dot segments and merges slashes before choosing a route of its own. Access rules read both, and a path whose two
 * readings meet different rules is refused rather than guessed at. Pure functions: no Express.
 */

/** Why a path cannot be read: a percent-escape that decodes to nothing (`%E0%A4%A`, `%zz`). */
export type PathProblem = 'malformed-path';

// Only these can make the decoded reading differ from the path as it came.
const NEEDS_DECODING = /%|\\|\/\/|\/\.\.?(?:\/|$)/;
// ASCII letters, digits and the characters RFC 3986 allows unencoded in a path: the same raw and decoded.
const PLAIN_PATH = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;

/** RFC 3986 §5.2.4, and empty segments merged as proxies do: `/a//b/./c/../d` → `/a/b/d`; a trailing `/` stays. */
function resolveSegments(path: string): string {
  const segments = path.split('/');
  const resolved: string[] = [];
  const last = segments.length - 1;
  let trailing = false;
  segments.forEach((segment, index) => {
    if (index === 0) return;
    if (segment === '..') resolved.pop();
    else if (segment !== '.' && segment !== '') resolved.push(segment);
    if (index === last) trailing = segment === '' || segment === '.' || segment === '..';
  });
  const joined = `/${resolved.join('/')}`;
  return trailing && joined !== '/' ? `${joined}/` : joined;
}

/**
 * The readings of a request path that may reach different code: the path as it came (what the router's route
 * literals match) and, when it differs, the path decoded (`decodeURIComponent`, `\` as `/`) with its dot segments
 * resolved and empty segments merged. `'malformed-path'` when a percent-escape does not decode. Most paths have one
 * reading and cost one regular-expression test.
 *
 * @example
 * pathReadings('/x/../%61udit'); // ['/x/../%61udit', '/audit']
 */
export function pathReadings(path: string): readonly string[] | PathProblem {
  if (!NEEDS_DECODING.test(path)) return [path];
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return 'malformed-path';
  }
  const slashed = decoded.replace(/\\/g, '/');
  const normalized = slashed.startsWith('/') ? resolveSegments(slashed) : slashed;
  return normalized === path ? [path] : [path, normalized];
}

/**
 * Whether a rule's path is written so that it reads the same raw and decoded: starting with `/`, only characters a
 * path needs no escape for, no empty or dot segments. Any other way of writing it would never match both readings.
 *
 * @example
 * isPlainPath('/sessions/revocations'); // true
 * isPlainPath('/a%20b'); // false
 */
export function isPlainPath(path: string): boolean {
  return path.startsWith('/') && PLAIN_PATH.test(path) && resolveSegments(path) === path;
}
