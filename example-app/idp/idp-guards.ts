/**
 * What the identity provider checks before oidc-provider sees a request: its own host only, a path that decodes,
 * and the headers of its pages.
 */
import { Router, type NextFunction, type Request, type Response } from 'express';
import { BadRequestError } from 'express-sso-kit';

/**
 * The provider's guards, for `app.use` ahead of its routes.
 *
 * @example
 * app.use(idpGuards('https://idp.example.test', 'https://auth.example.test'));
 */
export function idpGuards(idpOrigin: string, auth: string): Router {
  const router = Router();
  // oidc-provider builds its URLs from the Host (and, behind a proxy, X-Forwarded-Host): only the provider's own
  // public host reaches it, as the front door guarantees, and a forwarded host is never taken.
  const ownHost = new URL(idpOrigin).host;
  router.use(function onlyOwnHost(req: Request, _res: Response, next: NextFunction) {
    delete req.headers['x-forwarded-host'];
    next(
      req.headers.host?.toLowerCase() === ownHost
        ? undefined
        : new BadRequestError({ code: 'unknown_host', detail: 'This is not a host of the identity provider.' }),
    );
  });
  // A path that does not decode names nothing: 400 malformed_uri, as the kit's sites answer, not oidc-provider's 404.
  router.use(function wellFormedPath(req: Request, _res: Response, next: NextFunction) {
    try {
      decodeURIComponent(req.path);
      next();
    } catch {
      next(new BadRequestError({ code: 'malformed_uri', detail: 'The request URL contains a malformed percent-encoding.' }));
    }
  });
  // The login form posts here; the provider then redirects to the portal's callback, which redirects on to the
  // page the user came from. Chrome checks form-action on that whole redirect chain, so the domain's sites are listed.
  const relyingParties = auth.replace('//auth.', '//*.');
  router.use(function idpPageHeaders(_req: Request, res: Response, next: NextFunction) {
    res.setHeader(
      'Content-Security-Policy',
      `default-src 'self'; style-src 'self'; script-src 'self'; form-action 'self' ${relyingParties}; frame-ancestors 'none'; base-uri 'none'; object-src 'none'`,
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    next();
  });
  return router;
}
