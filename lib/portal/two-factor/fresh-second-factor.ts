import type { Request } from 'express';
import type { CredentialStore } from '../../credentials/credential-store';
import { authenticationOf } from '../../session/authentication';
import { meetsRequirement } from '../../session/step-up';
import type { SessionUser } from '../../session/types';
import type { PortalSettings } from '../portal-options';
import type { SecondFactor } from './second-factor';

/** Where a user's second factors are found: the step-up methods and the passkey store. */
export interface SecondFactorSources {
  methods?: readonly SecondFactor[] | undefined;
  passkeys?: { credentials: Pick<CredentialStore, 'listPasskeys'> } | undefined;
}

/**
 * Whether the user has a second factor: a passkey, or any step-up method enrolled (an authenticator app, recovery
 * codes).
 *
 * @example
 * await hasSecondFactor({ methods: settings.twoFactor?.methods, passkeys: settings.passkeys }, user.id);
 */
export async function hasSecondFactor(sources: SecondFactorSources, userId: string): Promise<boolean> {
  if (sources.passkeys && (await sources.passkeys.credentials.listPasskeys(userId)).length > 0) return true;
  for (const method of sources.methods ?? []) {
    if (method.id !== 'passkey' && (await method.isAvailable(userId))) return true;
  }
  return false;
}

/**
 * How recent a second factor must be for a change that affects authentication: the factor settings' window, or the
 * passkeys' when the portal has passkeys only.
 */
export function recentFactorSeconds(settings: Pick<PortalSettings, 'twoFactor' | 'passkeys'>): number {
  return settings.twoFactor?.recentLoginSeconds ?? settings.passkeys?.recentLoginSeconds ?? 300;
}

/**
 * Whether the session must show a fresh second factor before changing something that affects authentication (ASVS
 * 7.5.1): true for a user who has one and has not proven it within `withinSeconds`; a password alone, or an old
 * session, is then not full re-authentication.
 *
 * @example
 * if (await needsFreshSecondFactor(settings, req.user, 300)) res.redirect(303, stepUpUrl);
 */
export async function needsFreshSecondFactor(
  settings: Pick<PortalSettings, 'twoFactor' | 'passkeys'>,
  user: SessionUser,
  withinSeconds: number,
): Promise<boolean> {
  if (!(await hasSecondFactor({ methods: settings.twoFactor?.methods, passkeys: settings.passkeys }, user.id))) return false;
  return !meetsRequirement(authenticationOf(user), { acr: '2fa', maxAgeSeconds: withinSeconds }, Math.floor(Date.now() / 1000));
}

/**
 * Where to prove the second factor and come back to `returnTo`: the step-up page, or a new sign-in (with a passkey)
 * when the portal has passkeys but no step-up page.
 *
 * @example
 * res.redirect(303, secondFactorUrl(req, settings, `${origin}/email`, 300));
 */
export function secondFactorUrl(
  req: Request,
  settings: Pick<PortalSettings, 'twoFactor'>,
  returnTo: string,
  withinSeconds: number,
): string {
  const back = returnTo === '' ? '' : `&return_to=${encodeURIComponent(returnTo)}`;
  return settings.twoFactor ? `${req.baseUrl}/step-up?acr=2fa&max_age=${withinSeconds}${back}` : `${req.baseUrl}/login?prompt=login${back}`;
}
