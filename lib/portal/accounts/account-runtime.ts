import { eventsFor } from '../../events/event-source';
import { PasskeyThrottle } from '../passkeys/passkey-throttle';
import type { PortalSettings } from '../portal-options';
import { AccountNotices } from './account-notices';
import type { AccountSettings } from './account-options';
import { PasswordResetLinks } from './password-reset-links';

/** What the account routes share: the settings, the notifier, the reset links and the throttles. */
export interface AccountRuntime {
  settings: AccountSettings;
  notices: AccountNotices;
  /** Reset links, when a mailer is configured. */
  resets: PasswordResetLinks | undefined;
  /** Wrong current passwords at the password change and address change forms, per user: 10 per 15 minutes. */
  changeThrottle: PasskeyThrottle;
  /** Reset requests, per typed address and per network. */
  requestThrottles: { perAddress: PasskeyThrottle; perNetwork: PasskeyThrottle };
}

/**
 * Builds the account routes' shared parts from the portal's settings.
 *
 * @example
 * const runtime = accountRuntime(settings, settings.accounts);
 */
export function accountRuntime(portal: PortalSettings, settings: AccountSettings): AccountRuntime {
  const { store } = portal;
  const resets = settings.mailer
    ? new PasswordResetLinks({
        users: settings.users,
        store,
        mailer: settings.mailer,
        resetUrl: `${settings.portalUrl}/password/reset`,
        lifetimeSeconds: settings.linkLifetimeSeconds,
        ...(portal.events ? { events: portal.events } : {}),
      })
    : undefined;
  return {
    settings,
    resets,
    notices: new AccountNotices({
      users: settings.users,
      store,
      mailer: settings.mailer,
      notices: settings.notices,
      sessionsUrl: `${settings.portalUrl}/sessions`,
      directorySource: portal.directorySource,
      events: (req) => (req ? eventsFor(req, portal.events) : portal.events),
    }),
    changeThrottle: new PasskeyThrottle(store, { failures: 10, windowSeconds: 900 }),
    requestThrottles: {
      perAddress: new PasskeyThrottle(store, settings.resetsPerAddress),
      perNetwork: new PasskeyThrottle(store, settings.resetsPerNetwork),
    },
  };
}
