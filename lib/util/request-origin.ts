import type { Request } from 'express';

// A host as it may appear in a Host header: a DNS name or IPv4 address, or a bracketed IPv6 address, and a port.
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;
// An absolute-form request target (`GET http://shop.example.test/ HTTP/1.1`, RFC 9112 §3.2.2): its authority.
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i;

type TrustFunction = (address: string | undefined, hop: number) => boolean;

/**
 * True when the app's `trust proxy` setting trusts the peer that sent this request, so the headers a proxy sets
 * (`X-Forwarded-Host`, `X-Request-Id`) may be believed. False when nothing is trusted (Express's default).
 *
 * @example
 * const forwardedId = trustsPeer(req) ? req.get('x-request-id') : undefined;
 */
export function trustsPeer(req: Request): boolean {
  const trust = req.app?.get('trust proxy fn') as TrustFunction | undefined;
  return trust?.(req.socket?.remoteAddress, 0) === true;
}

function usableHost(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 261) return undefined;
  const host = value.toLowerCase();
  return HOST.test(host) ? host : undefined;
}

/**
 * The host (with its port) the request was routed by: its `Host` header, the name a proxy's server blocks, `vhost`
 * and the demo's front door choose a site by. Never `X-Forwarded-Host`, which a client can send through a proxy that
 * passes it on, so every security decision (access rules, the CSRF origin check) reads this one. Undefined without a
 * usable host: no `Host` (HTTP/1.0), a malformed one (a trailing dot included, which proxies and `vhost` read
 * differently), or an absolute-form request target naming another authority than `Host`.
 *
 * @example
 * routedHost(req); // 'admin.example.test:8443'
 */
export function routedHost(req: Request): string | undefined {
  const host = usableHost(req.headers.host);
  if (host === undefined) return undefined;
  const target = req.originalUrl ?? req.url;
  if (typeof target === 'string' && !target.startsWith('/')) {
    const authority = ABSOLUTE_FORM.exec(target)?.[1];
    if (authority !== undefined && authority.toLowerCase() !== host) return undefined;
  }
  return host;
}

/**
 * The host (with its port) the client asked for, to build URLs with: `X-Forwarded-Host` when `trust proxy` trusts
 * the peer, else the `Host` header. The same on Express 4 and 5 (Express 4's `req.host` drops the port, Express 5's
 * keeps it), and undefined for a request without a usable host. A client can set `X-Forwarded-Host` through a proxy
 * that passes it on, so decisions read {@link routedHost} instead; a URL built from this one is still checked (a
 * redirect by the redirect policy) or goes back to the client who sent it.
 *
 * @example
 * requestHost(req); // 'shop.example.test:8443'
 */
export function requestHost(req: Request): string | undefined {
  const forwarded = req.headers['x-forwarded-host'];
  if (typeof forwarded === 'string' && forwarded !== '' && trustsPeer(req)) {
    const comma = forwarded.indexOf(',');
    return usableHost((comma === -1 ? forwarded : forwarded.slice(0, comma)).trim());
  }
  return usableHost(req.headers.host);
}

function originOf(req: Request, host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  const protocol = req.protocol === 'https' ? 'https' : 'http';
  const defaultPort = protocol === 'https' ? ':443' : ':80';
  return `${protocol}://${host.endsWith(defaultPort) ? host.slice(0, -defaultPort.length) : host}`;
}

/**
 * The request's own origin to build URLs with, `https://shop.example.test:8443`, from the protocol Express trusts
 * (`req.protocol`, which honours `trust proxy` the same way on Express 4 and 5) and {@link requestHost}. Default
 * ports are dropped, as browsers do in `Origin`. Undefined without a usable host.
 *
 * @example
 * requestOrigin(req); // 'https://shop.example.test'
 */
export function requestOrigin(req: Request): string | undefined {
  return originOf(req, requestHost(req));
}

/**
 * The origin the request was routed to, `https://shop.example.test`, for decisions (is this POST from the page's own
 * origin?): the trusted protocol and {@link routedHost}, never `X-Forwarded-Host`. Undefined without a usable host.
 *
 * @example
 * routedOrigin(req); // 'https://shop.example.test'
 */
export function routedOrigin(req: Request): string | undefined {
  return originOf(req, routedHost(req));
}

/**
 * The absolute URL the request asked for, `https://auth.example.test/sns/qr-logins/…/confirmation?x=1`: its own
 * origin ({@link requestOrigin}) and `req.originalUrl`. Undefined without a usable host. A page that sends the
 * browser to sign in elsewhere names itself this way in `return_to`: a bare path would be resolved against the
 * login page's idea of home (the redirect policy's default URL), another site than the one that sent it.
 *
 * @example
 * res.redirect(303, `${loginUrl}?return_to=${encodeURIComponent(requestUrl(req) ?? '')}`);
 */
export function requestUrl(req: Request): string | undefined {
  const origin = requestOrigin(req);
  return origin === undefined ? undefined : `${origin}${req.originalUrl}`;
}
