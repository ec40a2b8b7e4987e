import type { Request } from 'express';
import type { Account } from '../../accounts/writable-user-directory';
import { authenticationOf } from '../../session/authentication';
import { identityId } from '../../session/identity';
import { freshFactors } from '../../session/step-up';
import type { PortalSettings } from '../portal-options';
import type { SecondFactor } from '../two-factor/second-factor';

/** The second factors a reset must pass for one account (ASVS 6.4.3). */
export interface ResetFactors {
  /** The account's id as sessions and credentials name it (`<source>|<id>`). */
  userKey: string;
  /** Factors the reset form can take (an authenticator app code, a recovery code). */
  methods: SecondFactor[];
  /** The account has a passkey: it can prove itself by signing in with it. */
  hasPasskey: boolean;
  /** Nothing more to prove: no second factor, or this browser proved one for this account within the link's lifetime. */
  satisfied: boolean;
}

const FACTOR_METHODS = new Set(['otp', 'hwk', 'swk']);

/**
 * What a reset link's account must still prove: a user with an authenticator app or a passkey never gets a new
 * password from a mailbox alone. A passkey is proven by signing in with it (then the session holds a fresh `hwk` or
 * `swk`); an app code or a recovery code on the reset form itself.
 *
 * @example
 * const factors = await resetFactors(settings, req, account, 900);
 * if (!factors.satisfied && factors.methods.length === 0) showPasskeySignIn();
 */
export async function resetFactors(settings: PortalSettings, req: Request, account: Account, withinSeconds: number): Promise<ResetFactors> {
  const userKey = identityId({ source: settings.directorySource, subject: account.id });
  const candidates = (settings.twoFactor?.methods ?? []).filter((method) => method.id !== 'passkey');
  const available = await Promise.all(candidates.map(async (method) => ((await method.isAvailable(userKey)) ? method : undefined)));
  const methods = available.filter((method): method is SecondFactor => method !== undefined);
  const hasPasskey = settings.passkeys ? (await settings.passkeys.credentials.listPasskeys(userKey)).length > 0 : false;
  const now = Math.floor(Date.now() / 1000);
  const provenHere =
    req.user?.id === userKey && freshFactors(authenticationOf(req.user), withinSeconds, now).some((f) => FACTOR_METHODS.has(f.method));
  return { userKey, methods, hasPasskey, satisfied: provenHere || (methods.length === 0 && !hasPasskey) };
}
