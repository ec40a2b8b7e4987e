import type { ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { requestOrigin } from '../util/request-origin';
import type { PortalSettings } from './portal-options';
import { ssoContext } from './portal-request';
import { renderLoginPage } from './portal-pages';

/** What one rendering of the login page shows besides the portal's fixed links. */
export interface LoginPageState {
  /** The sanitized return_to ('' for none). */
  returnTo: string;
  error?: string;
  username?: string;
}

/**
 * The portal's forms post to the portal itself, and the POST handlers check `Origin`. Under `no-referrer` browsers
 * send `Origin: null` on form posts, which the check must refuse; so the portal's pages set `same-origin` themselves
 * (as `securityHeaders()` does), whatever helmet setup the app has: full referrers to the portal itself, nothing to
 * other sites, so `return_to` never leaks.
 *
 * @example
 * allowSameOriginReferrer(res);
 */
export function allowSameOriginReferrer(res: Response): void {
  res.setHeader('Referrer-Policy', 'same-origin');
}

/**
 * Adds origins to the `form-action` directive of the CSP already on the response (from `securityHeaders()`).
 * Chrome applies `form-action` to the redirect that answers a form POST, so a login that redirects to
 * `https://shop.example.test` needs that origin listed on the page holding the form. Only origins of targets the
 * redirect policy accepted are ever added, one exact origin at a time.
 *
 * @example
 * extendFormAction(res, ['https://shop.example.test']);
 */
export function extendFormAction(res: Pick<ServerResponse, 'getHeader' | 'setHeader'>, origins: readonly string[]): void {
  const current = res.getHeader('Content-Security-Policy');
  if (typeof current !== 'string' || origins.length === 0) return;
  const directives = current
    .split(';')
    .map((d) => d.trim())
    .filter(Boolean);
  const index = directives.findIndex((d) => d.toLowerCase().startsWith('form-action'));
  if (index === -1) return; // No form-action restriction: nothing to widen.
  directives[index] = `${directives[index]} ${origins.join(' ')}`;
  res.setHeader('Content-Security-Policy', directives.join('; '));
}

function withReturnTo(href: string, returnTo: string): string {
  if (!returnTo) return href;
  return `${href}${href.includes('?') ? '&' : '?'}return_to=${encodeURIComponent(returnTo)}`;
}

/**
 * Renders the login page with `status`: the password form, the QR and provider links (carrying a safe return_to),
 * an optional error announced with role="alert", never cached.
 *
 * @example
 * sendLoginPage(settings, req, res, 401, { returnTo, error: 'Wrong username or password', username });
 */
export function sendLoginPage(settings: PortalSettings, req: Request, res: Response, status: number, page: LoginPageState): void {
  const { redirects } = ssoContext(req);
  const target = page.returnTo || redirects.defaultUrl;
  const own = requestOrigin(req);
  extendFormAction(
    res,
    [...new Set([new URL(target).origin, new URL(redirects.defaultUrl).origin])].filter((origin) => origin !== own),
  );
  allowSameOriginReferrer(res);
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.type('html').send(
    renderLoginPage({
      title: settings.title,
      assetsPath: settings.assetsPath,
      formAction: `${req.baseUrl}/login`,
      returnTo: page.returnTo,
      ...(page.error ? { error: page.error } : {}),
      ...(page.username ? { username: page.username } : {}),
      ...(settings.qrLink ? { qrLink: { label: settings.qrLink.label, href: withReturnTo(settings.qrLink.href, page.returnTo) } } : {}),
      providerLinks: settings.providerLinks.map((link) => ({ label: link.label, href: withReturnTo(link.href, page.returnTo) })),
      ...(settings.accounts?.resets ? { forgotPasswordUrl: `${req.baseUrl}/password/forgot` } : {}),
      ...(settings.passkeys
        ? { passkeys: { optionsUrl: `${req.baseUrl}/passkeys/sign-in/options`, signInUrl: `${req.baseUrl}/passkeys/sign-in` } }
        : {}),
    }),
  );
}
