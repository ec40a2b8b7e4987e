import type { Request } from 'express';

// A host as it may appear in a Host header: a DNS name or IPv4 address, or a bracketed IPv6 address, and a port.
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;

type TrustFunction = (address: string | undefined, hop: number) => boolean;

/**
 * The host (with its port) the client asked for: `X-Forwarded-Host` when `trust proxy` trusts the peer, else the
 * `Host` header. The same on Express 4 and 5 (Express 4's `req.host` drops the port, Express 5's keeps it), and
 * undefined for a request without a usable host (an HTTP/1.0 request without `Host`, or a malformed one).
 *
 * @example
 * requestHost(req); // 'shop.example.test:8443'
 */
export function requestHost(req: Request): string | undefined {
  const trust = req.app?.get('trust proxy fn') as TrustFunction | undefined;
  let value: string | undefined;
  const forwarded = req.headers['x-forwarded-host'];
  if (typeof forwarded === 'string' && forwarded !== '' && trust?.(req.socket?.remoteAddress, 0) === true) {
    const comma = forwarded.indexOf(',');
    value = (comma === -1 ? forwarded : forwarded.slice(0, comma)).trim();
  } else {
    value = req.headers.host;
  }
  if (typeof value !== 'string' || value.length === 0 || value.length > 261) return undefined;
  const host = value.toLowerCase();
  return HOST.test(host) ? host : undefined;
}

/**
 * The request's own origin, `https://shop.example.test:8443`, from the protocol Express trusts (`req.protocol`,
 * which honours `trust proxy` the same way on Express 4 and 5) and {@link requestHost}. Default ports are
 * dropped, as browsers do in `Origin`. Undefined without a usable host.
 *
 * @example
 * requestOrigin(req); // 'https://shop.example.test'
 */
export function requestOrigin(req: Request): string | undefined {
  const host = requestHost(req);
  if (host === undefined) return undefined;
  const protocol = req.protocol === 'https' ? 'https' : 'http';
  const defaultPort = protocol === 'https' ? ':443' : ':80';
  return `${protocol}://${host.endsWith(defaultPort) ? host.slice(0, -defaultPort.length) : host}`;
}
