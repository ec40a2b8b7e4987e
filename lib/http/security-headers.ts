import helmet, { type HelmetOptions } from 'helmet';
import type { RequestHandler } from 'express';

/** Options of {@link securityHeaders}: anything helmet takes, merged over the kit's preset. */
export type SecurityHeadersOptions = HelmetOptions;

/**
 * helmet with the kit's preset: a strict Content-Security-Policy without inline scripts (the kit's pages need
 * none), `frame-ancestors 'none'` against clickjacking of the login and QR pages, HSTS, and no referrer across
 * origins so a code or `return_to` in a URL never leaks.
 *
 * @example
 * app.use(securityHeaders());
 */
export function securityHeaders(options: SecurityHeadersOptions = {}): RequestHandler {
  const preset: HelmetOptions = {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
      },
    },
    // same-origin rather than no-referrer: under no-referrer browsers send `Origin: null` with same-origin form
    // posts, which the kit's CSRF origin check must refuse. Other sites still get no referrer.
    referrerPolicy: { policy: 'same-origin' },
    strictTransportSecurity: { maxAge: 31536000, includeSubDomains: true },
  };
  return helmet({ ...preset, ...options } as HelmetOptions);
}
