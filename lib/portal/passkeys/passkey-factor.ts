import type { Request } from 'express';
import { PasskeyVerificationError } from '../../credentials/passkey-ceremonies';
import { debugChannel } from '../../util/debug';
import type { PasskeySettings } from './passkey-options';
import { ssoContext } from '../portal-request';
import type { SecondFactor } from '../two-factor/second-factor';

const debug = debugChannel('portal');
const MAX_RESPONSE = 8192;

/**
 * The passkey as a second factor on the step-up page (added to `twoFactor`'s methods when the portal has both
 * `passkeys` and `twoFactor`). The page script asks `passkeys/step-up/options` (relative to the step-up page) for
 * a challenge limited to the signed-in user's passkeys, lets the browser sign it, and posts the response in the
 * `passkey_response` field. The assertion must come from one of that user's own passkeys; its `amr` (`hwk` or
 * `swk`, with `user` when verified) is what the session records.
 *
 * @example
 * const methods = [passkeyFactor(passkeySettings, '/portal-assets')];
 */
export function passkeyFactor(settings: PasskeySettings, assetsPath: string): SecondFactor {
  return {
    id: 'passkey',
    // The browser helper and the code that signs the step-up challenge, served by the portal itself.
    scripts: [`${assetsPath}/passkeys.js`],
    label: 'Use a passkey',
    amr: 'hwk',
    level: 'phr',
    isAvailable: async (userId) => (await settings.credentials.listPasskeys(userId)).length > 0,
    renderFields: () =>
      '<p>Your browser asks for your passkey (fingerprint, face or device PIN) when you continue.</p>' +
      '<input type="hidden" name="passkey_response" value="" data-passkey-step-up="passkeys/step-up/options">',
    async verify(userId: string, form: Record<string, unknown>, req: Request) {
      const text = form.passkey_response;
      if (typeof text !== 'string' || text === '' || text.length > MAX_RESPONSE) return false;
      let response: unknown;
      try {
        response = JSON.parse(text);
      } catch {
        return false;
      }
      try {
        const assertion = await settings.ceremonies(ssoContext(req).cookie.domain).verifyAuthentication(response, userId);
        return { amr: assertion.amr };
      } catch (error) {
        if (!(error instanceof PasskeyVerificationError)) throw error;
        debug('refused a passkey step-up: %s', error.reason);
        return false;
      }
    },
  };
}
