import type { Request } from 'express';
import { authenticationOf } from '../session/authentication';
import { meetsRequirement } from '../session/step-up';
import type { SessionUser } from '../session/types';
import { requestOrigin } from '../util/request-origin';
import type { PortalSettings } from './portal-options';

/** How recent a factor must be to end another session when the portal has no `twoFactor` to say otherwise. */
const RECENT_FACTOR_SECONDS = 300;

/**
 * Where to confirm it is the user before this request may end another of their sessions, or undefined when a factor
 * was presented recently enough (ASVS 5.0 7.5.2): a stolen session must not be able to sign its owner out of every
 * other browser while keeping itself. With `twoFactor` that is the step-up page asking the password again (one
 * factor within `recentLoginSeconds`); without it, the login page with `prompt=login`. Either comes back to `back`.
 *
 * @example
 * const confirm = recentFactorRedirect(req, settings, '/sessions');
 * if (confirm !== undefined) return res.redirect(303, confirm);
 */
export function recentFactorRedirect(req: Request, settings: PortalSettings, back: string): string | undefined {
  const recent = settings.twoFactor?.recentLoginSeconds ?? RECENT_FACTOR_SECONDS;
  const now = Math.floor(Date.now() / 1000);
  if (meetsRequirement(authenticationOf(req.user as SessionUser), { acr: '1fa', maxAgeSeconds: recent }, now)) return undefined;
  const origin = requestOrigin(req);
  const returnTo = origin === undefined ? '' : `&return_to=${encodeURIComponent(`${origin}${req.baseUrl}${back}`)}`;
  return settings.twoFactor
    ? `${req.baseUrl}/step-up?acr=1fa&max_age=${recent}${returnTo}`
    : `${req.baseUrl}/login?prompt=login${returnTo}`;
}
