import type { Request, RequestHandler, Router } from 'express';
import { eventsFor } from '../events/event-source';
import { BadRequestError } from '../http/errors';
import { upstreamLogoutUrl } from '../oidc/logout';
import { logout, logoutEverywhere } from '../session/logout';
import { asyncRoute } from './step-up/step-up-request';
import type { PortalSettings } from './portal-options';
import { oneString, requireSameOrigin, ssoContext } from './portal-request';
import { recentFactorRedirect } from './recent-factor';

/**
 * What the sign-out form's `scope` may say: this browser (the default), every session of the user, or every session
 * of the user but this one (offered after a sign-in method changed, ASVS 5.0 7.4.3).
 */
const SCOPES = ['browser', 'everywhere', 'others'] as const;

/**
 * Mounts `POST /logout`: `scope=browser` (the default) ends this browser's session, `scope=everywhere` every session
 * of the user on every app of the domain (`logoutEverywhere`), `scope=others` every session of the user but this one,
 * which stays signed in (303 to the sessions page). Same origin only. When the session logged in through
 * an identity provider that offers RP-initiated logout, the browser goes on to the provider's end-session page (so
 * the next "Sign in with …" asks again), else to the login page.
 *
 * @example
 * mountSignOut(router, settings, parseForm);
 */
export function mountSignOut(router: Router, settings: PortalSettings, parseForm: RequestHandler): void {
  router.post(
    '/logout',
    parseForm,
    asyncRoute(async function submitLogout(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const scope = oneString((req.body as Record<string, unknown> | undefined)?.scope) ?? 'browser';
      if (!SCOPES.includes(scope as (typeof SCOPES)[number])) {
        throw new BadRequestError({ code: 'invalid_request', detail: 'scope must be browser, everywhere or others.' });
      }
      if (scope === 'others') {
        // Ending the other sessions while keeping this one needs a recent factor (ASVS 5.0 7.5.2).
        const confirm = req.user ? recentFactorRedirect(req, settings, '/sessions') : undefined;
        if (confirm !== undefined) {
          res.redirect(303, confirm);
          return;
        }
        await signOutOthers(req, settings);
        res.setHeader('Cache-Control', 'no-store');
        res.redirect(303, req.user ? `${req.baseUrl}/sessions?others=1` : `${req.baseUrl}/login`);
        return;
      }
      // Read while the session still holds the ID token the provider wants as a hint.
      const upstream = upstreamLogoutUrl(req);
      if (scope === 'everywhere' && req.user) await logoutEverywhere(req);
      else await logout(req, res);
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(303, upstream ?? `${req.baseUrl}/login`);
    }),
  );
}

/** Ends every session of the signed-in user except this request's, on every app, each recorded as revoked. */
async function signOutOthers(req: Request, settings: PortalSettings): Promise<void> {
  const user = req.user;
  if (!user) return;
  const manager = ssoContext(req).manager;
  for (const session of await manager.listSessions(user.id, req.sessionID)) {
    if (session.current) continue;
    if (await manager.revokeSession(user.id, session.id)) {
      eventsFor(req, settings.events)?.emit('session.ended', { reason: 'revoked', userId: user.id, sessionHandle: session.id }, req);
    }
  }
}
