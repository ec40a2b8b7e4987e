import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { NotFoundError } from '../lib/http';

/** Options of {@link hostRouter}. */
export interface HostRouterOptions {
  /** Parent domain; `shop` serves `shop.<domain>`. */
  domain: string;
  /** Handlers by subdomain label. */
  sites: Record<string, RequestHandler>;
  /**
   * Answers requests addressed to a loopback address (`127.0.0.1`, `localhost`, `[::1]`): the demo's back channel
   * from its relying parties to its identity provider.
   */
  loopback?: RequestHandler;
}

/**
 * Routes by the Host header, so one process on one port serves every demo site. The Host header is taken as the
 * browser sent it (the proxy in front keeps it), lower-cased and without its port; anything else is a 404.
 *
 * @example
 * app.use(hostRouter({ domain: 'sso.localhost', sites: { auth: portalApp, shop: shopApp } }));
 */
export function hostRouter(options: HostRouterOptions): RequestHandler {
  const suffix = `.${options.domain.toLowerCase()}`;
  const sites = new Map(Object.entries(options.sites).map(([label, handler]) => [label.toLowerCase(), handler]));
  return function hostRouterMiddleware(req: Request, res: Response, next: NextFunction) {
    const host = (req.headers.host ?? '').toLowerCase();
    const hostname = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : (host.split(':')[0] ?? '');
    if (options.loopback && (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]')) {
      options.loopback(req, res, next);
      return;
    }
    const site = hostname.endsWith(suffix) ? sites.get(hostname.slice(0, -suffix.length)) : undefined;
    if (!site) {
      next(new NotFoundError({ detail: `No demo site answers for host "${hostname}".` }));
      return;
    }
    site(req, res, next);
  };
}
