import { PasskeyCeremonies } from '../../credentials/passkey-ceremonies';
import { PASSKEY_RECORDS_OPTION, type PasskeyRecords } from '../../credentials/passkey-records';
import type { KeyValueStore } from '../../store/port';
import { validateCookieDomain } from '../../session/cookie-domain';
import { checkOptions, within, type OptionSchema } from '../../util/options';
import type { ThrottleLimit } from '../throttle/login-throttle-options';

/** Options of the portal's passkeys, `loginPortal({ passkeys: { credentials } })`. */
export interface PortalPasskeyOptions {
  /** Where passkeys are kept: a `CredentialStore`: `new KeyValueCredentialStore(store)` or `new PostgresCredentialStore(...)`. */
  credentials: PasskeyRecords;
  /** The relying-party id. Default: the session cookie's parent domain, so one passkey serves every subdomain. */
  rpId?: string;
  /** The name authenticators show next to the account. Default: the relying-party id. */
  rpName?: string;
  /** How recent the login must be to add a passkey, in seconds. Default 600 (ten minutes). */
  recentLoginSeconds?: number;
  /** How long a sign-in or registration challenge stays valid, in seconds. Default 300. */
  challengeTimeoutSeconds?: number;
  /** Failed passkey sign-ins allowed per network (IPv6 per /64) within a window. Default 10 per 900 seconds. */
  throttle?: ThrottleLimit;
  /**
   * Sign-in challenges one network (IPv6 per /64) may ask for per minute; each is kept in the store until it expires,
   * so an unbounded number would let anyone fill it. Default 120 (the login page asks one per view).
   */
  challengesPerMinute?: number;
}

/** The portal's passkey settings, checked and with defaults applied. */
export interface PasskeySettings {
  credentials: PasskeyRecords;
  rpId: string | undefined;
  rpName: string | undefined;
  recentLoginSeconds: number;
  challengeTimeoutSeconds: number;
  throttle: ThrottleLimit;
  challengesPerMinute: number;
  /** The ceremonies for a parent domain (the session cookie's, unless `rpId` is set), built once per domain. */
  ceremonies(cookieDomain: string): PasskeyCeremonies;
}

const SECONDS = (min: number, max: number) =>
  ({ type: 'integer', expected: `a number of seconds from ${min} to ${max}`, check: within(min, max) }) as const;

const SCHEMA: OptionSchema = {
  credentials: PASSKEY_RECORDS_OPTION,
  rpId: { type: 'string', expected: 'your parent domain, e.g. "example.com"' },
  rpName: { type: 'string', check: (name: string) => (name.trim() === '' ? 'must not be empty' : undefined) },
  recentLoginSeconds: SECONDS(30, 86_400),
  challengeTimeoutSeconds: SECONDS(30, 900),
  challengesPerMinute: { type: 'integer', expected: 'a whole number from 1 to 100000', check: within(1, 100_000) },
  throttle: {
    type: 'object',
    expected: '{ failures, windowSeconds }',
    members: { failures: { type: 'integer', required: true, check: within(1, 10_000) }, windowSeconds: SECONDS(1, 86_400) },
  },
};

/**
 * Checks the portal's `passkeys` option by the kit's one options rule and applies the defaults.
 *
 * @example
 * const passkeys = resolvePasskeyOptions({ credentials: new KeyValueCredentialStore(store) }, store);
 */
export function resolvePasskeyOptions(options: PortalPasskeyOptions, store: KeyValueStore): PasskeySettings {
  checkOptions('loginPortal passkeys', options, SCHEMA);
  const rpId = options.rpId === undefined ? undefined : validateCookieDomain(options.rpId, 'loginPortal: passkeys.rpId');
  const challengeTimeoutSeconds = options.challengeTimeoutSeconds ?? 300;
  const byDomain = new Map<string, PasskeyCeremonies>();
  return {
    credentials: options.credentials,
    rpId,
    rpName: options.rpName,
    recentLoginSeconds: options.recentLoginSeconds ?? 600,
    challengeTimeoutSeconds,
    throttle: { failures: options.throttle?.failures ?? 10, windowSeconds: options.throttle?.windowSeconds ?? 900 },
    challengesPerMinute: options.challengesPerMinute ?? 120,
    ceremonies(cookieDomain) {
      const domain = rpId ?? cookieDomain;
      let found = byDomain.get(domain);
      if (found === undefined) {
        const rpName = options.rpName ?? domain;
        found = new PasskeyCeremonies({ store, passkeys: options.credentials, rpId: domain, rpName, challengeTimeoutSeconds });
        byDomain.set(domain, found);
      }
      return found;
    },
  };
}
