import { passwordPolicy, type PasswordPolicy } from '../../accounts/password-policy';
import { isWritableUserDirectory, type WritableUserDirectory } from '../../accounts/writable-user-directory';
import type { Mailer } from '../../mail/mailer';
import { checkOptions, OptionsError, within, type OptionSchema } from '../../util/options';
import type { UserDirectory } from '../user-directory';
import type { ThrottleLimit } from '../throttle/login-throttle-options';

/** The notices the portal mails to a user, by kind; each can be turned off. */
export type AccountNoticeKind = 'passwordChanged' | 'emailChanged' | 'factorChanged' | 'newSignIn';

/** Options of `loginPortal({ accounts })`: self-service password change, reset by email, address change and notices. */
export interface PortalAccountOptions {
  /**
   * The portal's own absolute URL as users reach it, e.g. `https://auth.example.test` (with the mount path, if any).
   * Links in mail are built on it, never on the request's Host header, so a forged Host cannot send a user a reset
   * link to another site.
   */
  portalUrl: string;
  /** Sends reset links, verification links and notices. Without it, only the password change page is offered. */
  mailer?: Mailer;
  /** The rules a new password must pass. Default `passwordPolicy()` (8 characters, the 100,000 common passwords refused). */
  passwordPolicy?: PasswordPolicy;
  /** How long a reset or verification link works: 300 to 3600 seconds. Default 900 (15 minutes). */
  linkLifetimeSeconds?: number;
  /** Whether "Sign me out everywhere else" starts checked on the password change form. Default true. */
  endOtherSessionsByDefault?: boolean;
  /**
   * Which notices are mailed (with a `mailer`): `{ newSignIn: false }` turns one kind off. Default every kind on:
   * password, address and sign-in-method changes, and a sign-in from a browser and network never seen for the account.
   */
  notifications?: Partial<Record<AccountNoticeKind, boolean>>;
  /** Reset requests allowed per typed address. Default 3 per 15 minutes. */
  resetsPerAddress?: ThrottleLimit;
  /** Reset requests allowed per client network. Default 20 per 15 minutes. */
  resetsPerNetwork?: ThrottleLimit;
}

/** The account settings, checked and with defaults applied. */
export interface AccountSettings {
  users: WritableUserDirectory;
  portalUrl: string;
  mailer: Mailer | undefined;
  policy: PasswordPolicy;
  linkLifetimeSeconds: number;
  endOtherSessionsByDefault: boolean;
  notices: Record<AccountNoticeKind, boolean>;
  resetsPerAddress: ThrottleLimit;
  resetsPerNetwork: ThrottleLimit;
}

const LIMIT: OptionSchema = {
  failures: { type: 'integer', required: true, check: within(1, 100_000) },
  windowSeconds: { type: 'integer', required: true, check: within(1, 86_400) },
};

const SCHEMA: OptionSchema = {
  portalUrl: {
    type: 'string',
    required: true,
    expected: 'the absolute URL of the portal, like "https://auth.example.test"',
    check: (url: string) => {
      try {
        const parsed = new URL(url);
        if (parsed.protocol !== 'https:' && parsed.hostname !== 'localhost' && !parsed.hostname.endsWith('.localhost')) {
          return `must be an https URL (links in mail carry single-use secrets), got "${url}"`;
        }
        return parsed.search || parsed.hash ? `must have no query or fragment, got "${url}"` : undefined;
      } catch {
        return `must be an absolute URL like "https://auth.example.test", got "${url}"`;
      }
    },
  },
  mailer: {
    type: 'object',
    expected: 'a Mailer from mailer({ smtp, from, siteName })',
    check: (value: { send?: unknown }) => (typeof value.send === 'function' ? undefined : 'must be a Mailer from mailer({...})'),
  },
  passwordPolicy: {
    type: 'object',
    expected: 'a PasswordPolicy from passwordPolicy({...})',
    check: (value: { check?: unknown }) =>
      typeof value.check === 'function' ? undefined : 'must be a PasswordPolicy from passwordPolicy()',
  },
  linkLifetimeSeconds: { type: 'integer', check: within(300, 3600) },
  endOtherSessionsByDefault: { type: 'boolean' },
  notifications: {
    type: 'object',
    members: {
      passwordChanged: { type: 'boolean' },
      emailChanged: { type: 'boolean' },
      factorChanged: { type: 'boolean' },
      newSignIn: { type: 'boolean' },
    },
  },
  resetsPerAddress: { type: 'object', members: LIMIT },
  resetsPerNetwork: { type: 'object', members: LIMIT },
};

/**
 * Checks `loginPortal`'s `accounts` option and applies the defaults; the directory must be writable.
 *
 * @example
 * const accounts = resolveAccountOptions(options.accounts, options.users);
 */
export function resolveAccountOptions(options: PortalAccountOptions, users: UserDirectory): AccountSettings {
  checkOptions('loginPortal accounts', options as unknown, SCHEMA);
  if (!isWritableUserDirectory(users)) {
    throw new OptionsError(
      'loginPortal: accounts needs a writable user directory (redisUserDirectory, postgresUserDirectory or memoryUserDirectory); ' +
        'fileUserDirectory is read-only',
    );
  }
  const on = options.mailer !== undefined;
  const kinds = options.notifications ?? {};
  return {
    users,
    portalUrl: options.portalUrl.replace(/\/+$/, ''),
    mailer: options.mailer,
    policy: options.passwordPolicy ?? passwordPolicy(),
    linkLifetimeSeconds: options.linkLifetimeSeconds ?? 900,
    endOtherSessionsByDefault: options.endOtherSessionsByDefault ?? true,
    notices: {
      passwordChanged: on && kinds.passwordChanged !== false,
      emailChanged: on && kinds.emailChanged !== false,
      factorChanged: on && kinds.factorChanged !== false,
      newSignIn: on && kinds.newSignIn !== false,
    },
    resetsPerAddress: options.resetsPerAddress ?? { failures: 3, windowSeconds: 900 },
    resetsPerNetwork: options.resetsPerNetwork ?? { failures: 20, windowSeconds: 900 },
  };
}
