import express, { type Request, type Response, Router } from 'express';
import { eventsFor } from '../events/event-source';
import { mountActivity } from './activity/activity-routes';
import { BadRequestError, UnauthorizedError } from '../http/errors';
import { guarded } from '../http/handlers';
import { logout } from '../session/logout';
import { requestOrigin } from '../util/request-origin';
import { allowSameOriginReferrer, extendFormAction, sendLoginPage } from './login-page';
import { upstreamLogoutUrl } from '../oidc/logout';
import { LoginThrottle } from './throttle/login-throttle';
import { passwordLogin } from './password-login';
import { recentFactorRedirect } from './recent-factor';
import { resolvePortalOptions, type LoginPortalOptions } from './portal-options';
import { sendKitStylesheet } from '../http/pages/kit-stylesheet';
import { PORTAL_JS, renderSessionsPage } from './portal-pages';
import { oneString, requireSameOrigin, safeReturnTo, ssoContext } from './portal-request';
import { passkeyRoutes } from './passkeys/passkey-routes';
import { accountLinks, mountAccountPages } from './accounts/account-routes';
import { mountSignOut } from './sign-out-routes';
import { mountStepUp } from './step-up/step-up-routes';
import { mountTwoFactorSettings } from './two-factor/two-factor-routes';

export type { LoginPortalOptions, PortalLoginLink } from './portal-options';

/**
 * The central login portal, an Express Router for the `auth.<domain>` app:
 * `GET /login` (accessible password form, QR and OIDC links, `return_to` carried when safe), `POST /login`
 * (same-origin only, throttled without locking users out: browsers that signed in before keep their own budget,
 * new ones are limited per network and per account; one generic failure message, a fresh session id, 302 to
 * `return_to`), `POST /logout` (this browser, or with `scope=everywhere` every session of the user; on to the identity
 * provider's end-session page when the session came through one), `GET /sessions` (the user's signed-in browsers,
 * with "Sign out everywhere") and `POST /sessions/revocations`.
 * With `twoFactor`, also the step-up page (`GET|POST /step-up`) and the factor settings (`/two-factor`,
 * `/two-factor/totp`, `/two-factor/recovery-codes`).
 * Mount it after `ssoSession()` and `securityHeaders()`; mount `errorHandler()` after it.
 *
 * @example
 * app.use(securityHeaders());
 * app.use(sessions);
 * app.use(loginPortal({ users: fileUserDirectory('users.json'), store, providers: [{ href: '/login/corp', label: 'Sign in with Corp' }] }));
 * app.use(errorHandler({ html: true }));
 */
export function loginPortal(options: LoginPortalOptions): Router {
  const settings = resolvePortalOptions(options);
  const throttle = new LoginThrottle(settings.store, settings.throttle);
  const { assetsPath, allowedOrigins } = settings;
  const router = Router();
  const parseForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });

  router.get(`${assetsPath}/portal.css`, sendKitStylesheet);
  router.get(`${assetsPath}/portal.js`, function portalScript(_req: Request, res: Response) {
    res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(PORTAL_JS);
  });

  router.get('/login', function showLoginPage(req: Request, res: Response) {
    const returnTo = safeReturnTo(req, req.query.return_to);
    if (req.user && returnTo && req.query.prompt !== 'login') {
      // Already signed in on the parent domain: single sign-on means no second password prompt, unless the
      // caller (the OpenID provider for prompt=login or max_age) asks for a fresh authentication.
      res.redirect(303, returnTo);
      return;
    }
    sendLoginPage(settings, req, res, 200, { returnTo });
  });

  router.post('/login', parseForm, guarded(passwordLogin(settings, throttle)));
  if (settings.passkeys) router.use(passkeyRoutes(settings, settings.passkeys));

  if (settings.twoFactor !== undefined) {
    mountStepUp(router, settings, settings.twoFactor, parseForm);
    mountTwoFactorSettings(router, settings, settings.twoFactor, parseForm);
  }

  mountSignOut(router, settings, parseForm);
  mountActivity(router, settings);
  if (settings.accounts) mountAccountPages(router, settings, settings.accounts, parseForm);

  router.get(
    '/sessions',
    guarded(async function showSessions(req: Request, res: Response) {
      const sso = ssoContext(req);
      if (!req.user) {
        const origin = requestOrigin(req);
        const here = origin === undefined ? '' : `?return_to=${encodeURIComponent(`${origin}${req.originalUrl.split('?')[0]}`)}`;
        res.redirect(303, `${req.baseUrl}/login${here}`);
        return;
      }
      const sessions = await sso.manager.listSessions(req.user.id, req.sessionID);
      // Signing out may go on to the identity provider's end-session page: Chrome applies form-action to that
      // redirect, so its origin is allowed on this page, which holds the sign-out forms.
      const upstream = upstreamLogoutUrl(req);
      if (upstream !== undefined) extendFormAction(res, [new URL(upstream).origin]);
      allowSameOriginReferrer(res);
      res.setHeader('Cache-Control', 'no-store');
      res.type('html').send(
        renderSessionsPage({
          title: 'Your sessions',
          assetsPath,
          userName: req.user.name,
          revokeAction: `${req.baseUrl}/sessions/revocations`,
          logoutAction: `${req.baseUrl}/logout`,
          ...(settings.passkeys ? { passkeysUrl: `${req.baseUrl}/passkeys` } : {}),
          activityUrl: `${req.baseUrl}/activity`,
          ...(settings.accounts && req.user.source === settings.directorySource
            ? { accountLinks: accountLinks(req, settings.accounts) }
            : {}),
          ...(req.query.revoked === '1' ? { notice: 'The session was signed out.' } : {}),
          ...(req.query.others === '1' ? { notice: 'Your other sessions were signed out.' } : {}),
          sessions: sessions.map((s) => ({
            handle: s.id,
            userAgent: s.userAgent ?? '',
            ip: s.ip ?? '',
            lastSeenAt: s.lastSeenAt,
            createdAt: s.createdAt,
            method: s.method,
            current: s.current,
          })),
        }),
      );
    }),
  );

  router.post(
    '/sessions/revocations',
    parseForm,
    guarded(async function revokeSession(req: Request, res: Response) {
      requireSameOrigin(req, allowedOrigins);
      const sso = ssoContext(req);
      if (!req.user) throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in to manage your sessions.' });
      const handle = oneString((req.body as Record<string, unknown> | undefined)?.session);
      if (!handle || handle.length > 256) throw new BadRequestError({ detail: 'Name the session to sign out.' });
      const ownHandle = sso.manager.handleOf(req.sessionID);
      // Another session ends only after a recent factor (ASVS 5.0 7.5.2); this browser's own may always sign out.
      const confirm = handle === ownHandle ? undefined : recentFactorRedirect(req, settings, '/sessions');
      if (confirm !== undefined) {
        res.redirect(303, confirm);
        return;
      }
      const revoked = await sso.manager.revokeSession(req.user.id, handle);
      if (revoked && handle !== ownHandle) {
        eventsFor(req, settings.events)?.emit('session.ended', { reason: 'revoked', userId: req.user.id, sessionHandle: handle }, req);
      }
      if (revoked && handle === ownHandle) {
        // This browser's own session is gone from the store; clear its cookie as a logout would.
        await logout(req, res);
        res.redirect(303, `${req.baseUrl}/login`);
        return;
      }
      res.redirect(303, `${req.baseUrl}/sessions${revoked ? '?revoked=1' : ''}`);
    }),
  );

  return router;
}
