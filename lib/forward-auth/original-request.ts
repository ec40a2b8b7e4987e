/**
 * The request a reverse proxy asks about, read from its sub-request in one of the dialects proxies speak. Pure
 * functions: no Express.
 */

/** How a proxy names the original request. */
export type ForwardAuthDialect = 'forward-auth' | 'auth-request' | 'ext-authz';

/** The original request as the proxy routed it. */
export interface OriginalRequest {
  /** Upper-case method. */
  method: string;
  scheme: 'http' | 'https';
  /** Lower-case host with its port, as in a Host header. */
  host: string;
  /** The host without its port, as access rules match it. */
  hostname: string;
  /** The origin, default port dropped: `https://docs.example.test`. */
  origin: string;
  /** The path as the client sent it (still percent-encoded), without the query. */
  path: string;
  /** Path and query, as sent: `/guide?page=2`. */
  uri: string;
  /** `origin` + `uri`. */
  url: string;
}

/** The headers a dialect reads (lower-case, as Node gives them). */
export interface ProxyHeaders {
  readonly [name: string]: string | string[] | undefined;
}

const METHOD = /^[A-Z][A-Z-]{0,19}$/;
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;
// Origin-form (RFC 9112 §3.2.1): a path and query of visible ASCII, no fragment; nothing a header could smuggle.
const URI = /^\/[!$&'()*+,\-./0-9:;=?@A-Z[\]_a-z~%|^`{}\\"<>]*$/;

/** One value of a header, or undefined when it is absent, repeated, or a list (a proxy that appended to a client's). */
function single(headers: ProxyHeaders, name: string): string | undefined {
  const value = headers[name];
  if (typeof value !== 'string' || value === '' || value.includes(',')) return undefined;
  return value.trim();
}

function build(method: string | undefined, scheme: string | undefined, host: string | undefined, uri: string | undefined) {
  if (method === undefined || !METHOD.test(method.toUpperCase())) return undefined;
  const lowerScheme = scheme?.toLowerCase();
  if (lowerScheme !== 'http' && lowerScheme !== 'https') return undefined;
  const lowerHost = host?.toLowerCase();
  if (lowerHost === undefined || lowerHost.length > 261 || !HOST.test(lowerHost)) return undefined;
  if (uri === undefined || uri.length > 8192 || !URI.test(uri) || uri.startsWith('//')) return undefined;
  const defaultPort = lowerScheme === 'https' ? ':443' : ':80';
  const bareHost = lowerHost.endsWith(defaultPort) ? lowerHost.slice(0, -defaultPort.length) : lowerHost;
  const port = /:\d+$/.exec(lowerHost);
  const query = uri.indexOf('?');
  const origin = `${lowerScheme}://${bareHost}`;
  const request: OriginalRequest = {
    method: method.toUpperCase(),
    scheme: lowerScheme,
    host: lowerHost,
    hostname: port === null ? lowerHost : lowerHost.slice(0, port.index),
    origin,
    path: query === -1 ? uri : uri.slice(0, query),
    uri,
    url: `${origin}${uri}`,
  };
  return request;
}

/**
 * The original request of a proxy's sub-request, or undefined when the proxy did not say it plainly (a header
 * missing, repeated, a list, or not of its form):
 * - `forward-auth` (Caddy `forward_auth`, Traefik `ForwardAuth`): `X-Forwarded-Method`, `-Proto`, `-Host`, `-Uri`;
 * - `auth-request` (nginx `auth_request`): `X-Original-Method` and `X-Original-URL` (absolute);
 * - `ext-authz` (Envoy HTTP `ext_authz`): the sub-request's own method and `Host`, the path after the
 *   endpoint's prefix (`pathAfterPrefix`), and `X-Forwarded-Proto`.
 * Only call it for a sub-request from a trusted proxy: every one of these headers can be sent by a client.
 *
 * @example
 * originalRequest('forward-auth', req.headers); // { method: 'GET', host: 'docs.example.test', path: '/guide', ... }
 */
export function originalRequest(
  dialect: ForwardAuthDialect,
  headers: ProxyHeaders,
  subRequest: { method: string; pathAfterPrefix?: string } = { method: 'GET' },
): OriginalRequest | undefined {
  switch (dialect) {
    case 'forward-auth':
      return build(
        single(headers, 'x-forwarded-method'),
        single(headers, 'x-forwarded-proto'),
        single(headers, 'x-forwarded-host'),
        single(headers, 'x-forwarded-uri'),
      );
    case 'auth-request': {
      const url = single(headers, 'x-original-url');
      const match = url === undefined ? null : /^(https?):\/\/([^/?#@]+)(\/[^#]*)?$/i.exec(url);
      if (match === null) return undefined;
      return build(single(headers, 'x-original-method'), match[1], match[2], match[3] ?? '/');
    }
    case 'ext-authz':
      return build(subRequest.method, single(headers, 'x-forwarded-proto'), single(headers, 'host'), subRequest.pathAfterPrefix);
  }
}

/**
 * The path with `;` parameters taken off each segment (`/admin;v=1/x` → `/admin/x`), as servlet containers and some
 * frameworks route it; undefined when it has none.
 *
 * @example
 * withoutSegmentParameters('/admin;jsessionid=1'); // '/admin'
 */
export function withoutSegmentParameters(path: string): string | undefined {
  if (!path.includes(';') && !/%3b/i.test(path)) return undefined;
  return path
    .split('/')
    .map((segment) => segment.replace(/(;|%3b).*$/i, ''))
    .join('/');
}
