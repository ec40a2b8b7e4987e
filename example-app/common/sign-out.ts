/**
 * "Sign out everywhere" on the demo's apps: every session of the user ends, on every app of the domain, and when
 * the session came through the demo identity provider the browser goes on to its end-session page (RP-initiated
 * logout), so the next "Sign in with the Demo IdP" asks for a password again. Otherwise back to the portal.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { logoutEverywhere, upstreamLogoutUrl } from 'express-sso-kit';
import { origin, type DemoConfig } from './config';

/**
 * The `POST /logout` route of shop and admin.
 *
 * @example
 * app.post('/logout', signOutEverywhere(config));
 */
export function signOutEverywhere(config: DemoConfig): RequestHandler {
  const login = `${origin(config, 'auth')}/login`;
  return function signOutEverywhereRoute(req: Request, res: Response, next: NextFunction) {
    // Read first: the ID token the provider takes as a hint lives in the session that is about to end.
    const upstream = upstreamLogoutUrl(req);
    const ended = req.user ? logoutEverywhere(req) : Promise.resolve(0);
    ended.then(() => res.set('Cache-Control', 'no-store').redirect(303, upstream ?? login), next);
  };
}

/**
 * Where the apps' forms may send the browser (CSP `form-action`): their own origin, the portal (the sign-in and
 * sign-out pages) and the demo identity provider (its end-session page, after "Sign out everywhere"; Chrome checks
 * form-action on the redirects that answer a form).
 *
 * @example
 * securityHeaders({ contentSecurityPolicy: { directives: { formAction: appFormTargets(config) } } });
 */
export function appFormTargets(config: DemoConfig): string[] {
  return ["'self'", origin(config, 'auth'), origin(config, 'idp')];
}
