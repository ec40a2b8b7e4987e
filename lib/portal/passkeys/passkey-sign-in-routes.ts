import type { NextFunction, Request, Response, Router } from 'express';
import express from 'express';
import { PasskeyVerificationError, type PasskeyAssertion } from '../../credentials/passkey-ceremonies';
import { eventsFor } from '../../events/event-source';
import { signInAttempt } from '../../events/sign-in-attempt';
import { BadRequestError, ConflictError, TooManyRequestsError, UnauthorizedError } from '../../http/errors';
import { guarded } from '../../http/handlers';
import { establishLogin } from '../../session/establish-login';
import { parseIdentityId } from '../../session/identity';
import { debugChannel } from '../../util/debug';
import { clientNetwork } from '../throttle/client-network';
import type { PasskeySettings } from './passkey-options';
import { PasskeyThrottle } from './passkey-throttle';
import type { PortalSettings } from '../portal-options';
import { requireSameOrigin, safeReturnTo, ssoContext } from '../portal-request';

const debug = debugChannel('portal');
const REFUSED = 'This passkey could not sign you in.';

/**
 * Maps a refused ceremony to the problem the browser gets: one generic message, the reason only in the debug log.
 *
 * @example
 * await ceremonies.verifyRegistration(userId, response, name).catch((error) => { throw refusedProblem(error); });
 */
export function refusedProblem(error: unknown): unknown {
  if (!(error instanceof PasskeyVerificationError)) return error;
  debug('refused a passkey: %s', error.reason);
  if (error.reason === 'malformed')
    return new BadRequestError({ code: 'invalid_passkey_response', detail: 'The passkey response is malformed.' });
  if (error.reason === 'already_registered')
    return new ConflictError({ code: 'passkey_exists', detail: 'This passkey is already registered.' });
  return new UnauthorizedError({ code: 'passkey_refused', detail: REFUSED });
}

/**
 * Mounts the passkey sign-in routes: `POST /passkeys/sign-in/options` (a challenge for any of the domain's passkeys,
 * limited per network), `POST /passkeys/sign-in` (verifies the assertion, throttled per network, and signs its
 * stored owner in if still an enabled user of the directory) and `POST /passkeys/step-up/options` (a challenge for
 * the signed-in user's own passkeys, for the step-up page). Every route is same-origin only.
 *
 * @example
 * mountPasskeySignIn(router, portalSettings, passkeySettings);
 */
export function mountPasskeySignIn(router: Router, portal: PortalSettings, settings: PasskeySettings): void {
  const json = express.json({ limit: '32kb', strict: true });
  const throttle = new PasskeyThrottle(portal.store, settings.throttle);
  // Counts every challenge asked for (none is "taken back"): a plain rate per network.
  const challengeRate = new PasskeyThrottle(portal.store, { failures: settings.challengesPerMinute, windowSeconds: 60 });
  const network = (req: Request) => clientNetwork(req.ip ?? req.socket.remoteAddress ?? '');
  const { allowedOrigins } = portal;
  const ceremonies = (req: Request) => settings.ceremonies(ssoContext(req).cookie.domain);

  router.post(
    '/passkeys/step-up/options',
    guarded(async function stepUpOptions(req: Request, res: Response) {
      requireSameOrigin(req, allowedOrigins);
      // A second factor for the signed-in user: only that user's passkeys are offered, and only they verify.
      if (!req.user) throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in first.' });
      res.setHeader('Cache-Control', 'no-store');
      res.json(await ceremonies(req).authenticationOptions(req.user.id));
    }),
  );

  router.post(
    '/passkeys/sign-in/options',
    guarded(async function signInOptions(req: Request, res: Response) {
      requireSameOrigin(req, allowedOrigins);
      const rate = await challengeRate.attempt([`challenges:${network(req)}`]);
      if (!rate.allowed) {
        eventsFor(req, portal.events)?.emit(
          'request.throttled',
          { reason: 'passkey', method: 'passkey_challenge', retryAfterSeconds: rate.retryAfterSeconds },
          req,
        );
        throw new TooManyRequestsError(rate.retryAfterSeconds, { detail: 'Too many passkey requests. Try again later.' });
      }
      res.setHeader('Cache-Control', 'no-store');
      res.json(await ceremonies(req).authenticationOptions());
    }),
  );

  router.post(
    '/passkeys/sign-in',
    json,
    guarded(async function signIn(req: Request, res: Response, next: NextFunction) {
      requireSameOrigin(req, allowedOrigins);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const returnTo = safeReturnTo(req, body.return_to);
      const events = eventsFor(req, portal.events);
      const signIn = signInAttempt(req, events, 'passkey');
      const attempt = await throttle.attempt([`network:${network(req)}`]);
      if (!attempt.allowed) {
        events?.emit('request.throttled', { reason: 'passkey', method: 'passkey', retryAfterSeconds: attempt.retryAfterSeconds }, req);
        signIn.failed(undefined);
        throw new TooManyRequestsError(attempt.retryAfterSeconds, { detail: 'Too many failed passkey attempts. Try again later.' });
      }
      let assertion: PasskeyAssertion;
      try {
        assertion = await ceremonies(req).verifyAuthentication(body.response);
      } catch (error) {
        signIn.failed(error instanceof PasskeyVerificationError ? 'passkey_rejected' : undefined);
        next(refusedProblem(error));
        return;
      }
      // The credential signs in its stored owner, who must still be an enabled user of this portal's directory.
      const identity = parseIdentityId(assertion.passkey.userId);
      const user = identity?.source === portal.directorySource ? await portal.users.findById(identity.subject) : null;
      if (!identity || !user || user.disabled === true) {
        debug('refused a passkey sign-in: its owner is not an enabled user of the directory');
        signIn.failed('account_disabled');
        throw new UnauthorizedError({ code: 'passkey_refused', detail: REFUSED });
      }
      await attempt.succeeded();
      await establishLogin(req, {
        source: identity.source,
        subject: identity.subject,
        name: user.name,
        roles: user.roles,
        method: 'passkey',
        // Passwordless sign-in requires user verification: possession of the key plus the PIN or biometrics that
        // unlocked it, bound to the origin, so it stands for two factors at the phishing-resistant level.
        authentication: { amr: assertion.amr, acr: 'phr' },
        ...(user.attributes ? { attributes: user.attributes } : {}),
      });
      signIn.succeeded();
      events?.emit('factor.used', { reason: 'signin', factor: 'passkey' }, req);
      res.setHeader('Cache-Control', 'no-store');
      res.json({ redirect: returnTo || ssoContext(req).redirects.defaultUrl });
    }),
  );
}
