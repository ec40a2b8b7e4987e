import type { Request, RequestHandler, Response, Router } from 'express';
import { eventsFor } from '../../events/event-source';
import { BadRequestError } from '../../http/errors';
import { renderQrSvg } from '../../qr/qr-pages';
import { SealedSecretError } from '../../credentials/secret-sealer';
import { authenticationOf } from '../../session/authentication';
import { raiseSessionAuthentication } from '../../session/raise-authentication';
import { meetsRequirement, type AuthenticationRequirement } from '../../session/step-up';
import type { SessionUser } from '../../session/types';
import { allowSameOriginReferrer } from '../login-page';
import type { PortalSettings } from '../portal-options';
import { oneString, requireSameOrigin, safeReturnTo, ssoContext } from '../portal-request';
import { tooManyAttempts } from '../password-login';
import { asyncRoute, hereUrl, portalUrl } from '../step-up/step-up-request';
import { requestOrigin } from '../../util/request-origin';
import type { TwoFactorSettings } from './two-factor-options';
import { renderRecoveryCodesPage, renderTotpEnrolmentPage, renderTwoFactorPage } from './two-factor-pages';

/** The associated data of a secret waiting for its first code: never opens as a stored secret, nor the reverse. */
const pendingOwner = (userId: string): string => `${userId}#pending-totp`;

/**
 * Mounts the factor settings: `GET /two-factor` (status and actions), `GET|POST /two-factor/totp` (enrol or replace
 * the authenticator app: a recent sign-in is required, and replacing an app needs a fresh second factor, so a
 * stolen password alone cannot swap it; the secret is saved only after one right code, and ten recovery codes
 * are shown once), `POST /two-factor/totp/remove` (turn the app off, with its recovery codes, after a fresh second
 * factor), `POST /two-factor/recovery-codes` (new codes, after a fresh second factor).
 *
 * @example
 * mountTwoFactorSettings(router, settings, twoFactor, parseForm);
 */
export function mountTwoFactorSettings(
  router: Router,
  settings: PortalSettings,
  twoFactor: TwoFactorSettings,
  parseForm: RequestHandler,
): void {
  const recent = twoFactor.recentLoginSeconds;

  /** What changing the user's factors needs now: a recent login, and a fresh second factor once one exists. */
  async function changeRequirement(user: SessionUser): Promise<AuthenticationRequirement> {
    return (await twoFactor.totp.isEnrolled(user.id)) ? { acr: '2fa', maxAgeSeconds: recent } : { acr: '1fa', maxAgeSeconds: recent };
  }

  /** A redirect to sign in or step up first, or undefined when the session may change the user's factors. */
  async function gate(req: Request, comeBack: string): Promise<string | undefined> {
    const user = req.user;
    if (!user) return portalUrl(req, '/login', { return_to: comeBack });
    const requirement = await changeRequirement(user);
    if (meetsRequirement(authenticationOf(user), requirement, Math.floor(Date.now() / 1000))) return undefined;
    return portalUrl(req, '/step-up', { return_to: comeBack, acr: requirement.acr, max_age: String(requirement.maxAgeSeconds) });
  }

  async function showEnrolment(req: Request, res: Response, status: number, returnTo: string, secret: string, error?: string) {
    const user = req.user as SessionUser;
    allowSameOriginReferrer(res);
    res.status(status).setHeader('Cache-Control', 'no-store');
    res.type('html').send(
      renderTotpEnrolmentPage({
        assetsPath: settings.assetsPath,
        action: `${req.baseUrl}/two-factor/totp`,
        returnTo,
        qrSvg: await renderQrSvg(twoFactor.totp.uri(secret, user.name || user.subject)),
        secret,
        sealedPending: twoFactor.sealer.seal(pendingOwner(user.id), secret),
        ...(error ? { error } : {}),
      }),
    );
  }

  router.get(
    '/two-factor',
    asyncRoute(async function showTwoFactor(req, res) {
      const user = req.user;
      if (!user) {
        res.redirect(303, portalUrl(req, '/login', { return_to: hereUrl(req) }));
        return;
      }
      allowSameOriginReferrer(res);
      res.setHeader('Cache-Control', 'no-store');
      res.type('html').send(
        renderTwoFactorPage({
          assetsPath: settings.assetsPath,
          userName: user.name,
          totpEnrolled: await twoFactor.totp.isEnrolled(user.id),
          remainingRecoveryCodes: await twoFactor.recovery.remaining(user.id),
          enrolUrl: `${req.baseUrl}/two-factor/totp`,
          regenerateAction: `${req.baseUrl}/two-factor/recovery-codes`,
          removeAction: `${req.baseUrl}/two-factor/totp/remove`,
          logoutAction: `${req.baseUrl}/logout`,
        }),
      );
    }),
  );

  router.get(
    '/two-factor/totp',
    asyncRoute(async function showTotpEnrolment(req, res) {
      const returnTo = safeReturnTo(req, req.query.return_to);
      const elsewhere = await gate(req, hereUrl(req));
      if (elsewhere !== undefined) {
        res.setHeader('Cache-Control', 'no-store');
        res.redirect(303, elsewhere);
        return;
      }
      await showEnrolment(req, res, 200, returnTo, twoFactor.totp.newSecret());
    }),
  );

  router.post(
    '/two-factor/totp',
    parseForm,
    asyncRoute(async function submitTotpEnrolment(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const returnTo = safeReturnTo(req, body.return_to);
      const enrolPage = `${requestBase(req)}${req.baseUrl}/two-factor/totp${returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''}`;
      const elsewhere = await gate(req, enrolPage);
      if (elsewhere !== undefined) {
        res.redirect(303, elsewhere);
        return;
      }
      const user = req.user as SessionUser;
      let secret: string;
      try {
        secret = twoFactor.sealer.open(pendingOwner(user.id), oneString(body.pending) ?? '');
      } catch (error) {
        if (error instanceof SealedSecretError) throw new BadRequestError({ code: 'invalid_request', detail: 'Start the setup again.' });
        throw error;
      }
      const decision = await twoFactor.attempt(req, user.id);
      if (!decision.allowed) {
        eventsFor(req, settings.events)?.emit(
          'request.throttled',
          { reason: 'second_factor', method: 'totp_enrolment', retryAfterSeconds: decision.retryAfterSeconds },
          req,
        );
        res.setHeader('Retry-After', String(decision.retryAfterSeconds));
        await showEnrolment(req, res, 429, returnTo, secret, tooManyAttempts(decision.retryAfterSeconds));
        return;
      }
      if (!(await twoFactor.totp.enrol(user.id, secret, oneString(body.code) ?? ''))) {
        await showEnrolment(req, res, 401, returnTo, secret, 'That code did not work. Check the time on your phone and try the next code.');
        return;
      }
      await twoFactor.recordSuccess(req, res, decision);
      const codes = await twoFactor.recovery.regenerate(user.id);
      // The code just typed proves the app: the session now holds two factors.
      await raiseSessionAuthentication(req, 'otp');
      const events = eventsFor(req, settings.events);
      events?.emit('factor.added', { reason: 'enrolled', factor: 'totp' }, req);
      events?.emit('factor.added', { reason: 'enrolled', factor: 'recovery_codes', remaining: codes.length }, req);
      await settings.accounts?.notices.factorChanged(req, 'authenticator_app', 'added');
      showCodes(req, res, codes, returnTo);
    }),
  );

  router.post(
    '/two-factor/totp/remove',
    parseForm,
    asyncRoute(async function removeTotp(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const settingsPage = `${requestBase(req)}${req.baseUrl}/two-factor`;
      // While an app is enrolled this asks a fresh second factor: a stolen password or an old session alone
      // cannot turn it off. With none enrolled there is nothing to remove, and the settings page says so.
      const elsewhere = await gate(req, settingsPage);
      if (elsewhere !== undefined) {
        res.redirect(303, elsewhere);
        return;
      }
      const user = req.user as SessionUser;
      await twoFactor.totp.remove(user.id);
      // The codes back up the app: left behind, they would still pass as a second factor on their own.
      await twoFactor.recovery.clear(user.id);
      const events = eventsFor(req, settings.events);
      events?.emit('factor.removed', { reason: 'self_service', factor: 'totp' }, req);
      events?.emit('factor.removed', { reason: 'self_service', factor: 'recovery_codes' }, req);
      await settings.accounts?.notices.factorChanged(req, 'authenticator_app', 'removed');
      res.redirect(303, settingsPage);
    }),
  );

  router.post(
    '/two-factor/recovery-codes',
    parseForm,
    asyncRoute(async function regenerateRecoveryCodes(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const user = req.user;
      const settingsPage = `${requestBase(req)}${req.baseUrl}/two-factor`;
      if (!user) {
        res.redirect(303, portalUrl(req, '/login', { return_to: settingsPage }));
        return;
      }
      const requirement: AuthenticationRequirement = { acr: '2fa', maxAgeSeconds: recent };
      if (!meetsRequirement(authenticationOf(user), requirement, Math.floor(Date.now() / 1000))) {
        res.redirect(303, portalUrl(req, '/step-up', { return_to: settingsPage, acr: '2fa', max_age: String(recent) }));
        return;
      }
      if (!(await twoFactor.totp.isEnrolled(user.id))) {
        throw new BadRequestError({ code: 'invalid_request', detail: 'Set up an authenticator app first.' });
      }
      const codes = await twoFactor.recovery.regenerate(user.id);
      eventsFor(req, settings.events)?.emit('factor.added', { reason: 'enrolled', factor: 'recovery_codes', remaining: codes.length }, req);
      await settings.accounts?.notices.factorChanged(req, 'recovery_codes', 'replaced');
      showCodes(req, res, codes, settingsPage);
    }),
  );

  function showCodes(req: Request, res: Response, codes: readonly string[], continueUrl: string): void {
    allowSameOriginReferrer(res);
    res.status(200).setHeader('Cache-Control', 'no-store');
    res.type('html').send(
      renderRecoveryCodesPage({
        assetsPath: settings.assetsPath,
        codes,
        continueUrl: continueUrl || ssoContext(req).redirects.defaultUrl,
        logoutAction: `${req.baseUrl}/logout`,
      }),
    );
  }
}

// Only after requireSameOrigin, which refuses a request without a usable host: the origin is always there.
function requestBase(req: Request): string {
  return requestOrigin(req) ?? '';
}
