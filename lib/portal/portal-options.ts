import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { DEFAULT_DIRECTORY_SOURCE, sourceProblem } from '../session/identity';
import { compileAllowedOrigins } from '../session/csrf-guard';
import type { KeyValueStore } from '../store/port';
import { checkOptions, KIT_STORE_OPTION, OptionsError, type OptionSchema } from '../util/options';
import { resolveThrottleOptions, type LoginThrottleOptions } from './throttle/login-throttle-options';
import { passkeyFactor } from './passkeys/passkey-factor';
import { resolvePasskeyOptions, type PasskeySettings, type PortalPasskeyOptions } from './passkeys/passkey-options';
import type { LoginLink } from './portal-pages';
import type { UserDirectory } from './user-directory';
import { resolveAccountOptions, type PortalAccountOptions } from './accounts/account-options';
import { accountRuntime, type AccountRuntime } from './accounts/account-runtime';
import { resolveTwoFactor, type PortalTwoFactorOptions, type TwoFactorSettings } from './two-factor/two-factor-options';

/** A "Sign in with …" link: the path (or URL) of an `oidcLogin` or `qrLogin` route and its label. */
export interface PortalLoginLink {
  href: string;
  label: string;
}

/** Options of {@link loginPortal}. */
export interface LoginPortalOptions {
  /** Where passwords are checked: {@link fileUserDirectory}, {@link redisUserDirectory} or your own. */
  users: UserDirectory;
  /** The kit store the guessing counters live in (the same Redis as the sessions). */
  store: KeyValueStore;
  /**
   * Throttling policy ({@link LoginThrottleOptions}). Default: a browser that signed in as the user before is limited
   * only by its own failures (10 per hour, then its device token is revoked); new browsers get 5 failures per
   * account and network per 15 minutes, 10 per account per hour from everywhere, 50 per network per 15 minutes.
   */
  throttle?: LoginThrottleOptions;
  /** Heading and title of the login page. Default `Sign in`. */
  title?: string;
  /** Link to the QR login route (`qrLogin`'s login path), e.g. `{ href: '/login/qr', label: 'Scan a QR code' }`. */
  qrLogin?: PortalLoginLink;
  /** Links to `oidcLogin` routes, e.g. `[{ href: '/login/corp', label: 'Sign in with Corp' }]`. */
  providers?: readonly PortalLoginLink[];
  /** Origins besides the portal's own whose pages may post to it (login, logout, revoke). Default none. */
  allowedOrigins?: readonly string[];
  /** Where the router serves its CSS and JS. Default `/portal-assets`. */
  assetsPath?: string;
  /**
   * Passkeys: sign in without a password, and `GET /passkeys` where users add (after a recent login), rename and
   * remove theirs. `{ credentials }` is where they are kept (a `CredentialStore` such as `new KeyValueCredentialStore(store)`).
   * Default none.
   */
  passkeys?: PortalPasskeyOptions;
  /**
   * Second factors: an authenticator app (TOTP) and recovery codes, the step-up page (`/step-up`) that routes with
   * `requireSession({ acr: '2fa' })` send users to, and the settings page `/two-factor`. Default: none.
   */
  twoFactor?: PortalTwoFactorOptions;
  /**
   * Self-service accounts (with a writable `users` directory): `GET|POST /password` (change), and with a `mailer`
   * `GET|POST /password/forgot` and `/password/reset` (reset by a mailed link), `GET|POST /email` and `/email/verify`
   * (address change confirmed by a link to the new address), and notices of credential changes and new sign-ins.
   * `{ portalUrl }` is the portal's public URL, which links in mail are built on. Default none.
   */
  accounts?: PortalAccountOptions;
  /**
   * Where sign-ins, failures and throttled attempts are recorded. Default the events of `ssoSession` (on
   * `req.sso`), so an app that gave them there gives nothing here.
   */
  events?: SecurityEvents;
}

/** The portal's settings, checked and with defaults applied. */
export interface PortalSettings {
  users: UserDirectory;
  directorySource: string;
  store: KeyValueStore;
  throttle: LoginThrottleOptions;
  title: string;
  qrLink: LoginLink | undefined;
  providerLinks: LoginLink[];
  allowedOrigins: ReadonlySet<string>;
  assetsPath: string;
  passkeys: PasskeySettings | undefined;
  twoFactor: TwoFactorSettings | undefined;
  events: SecurityEvents | undefined;
  /** The account pages' settings, notifier and reset links; undefined without `accounts`. */
  accounts: AccountRuntime | undefined;
}

const LINK_EXAMPLE = "{ href: '/login/…', label: 'Sign in with …' }";

function linkProblem(link: Partial<PortalLoginLink>): string | undefined {
  if (typeof link.href !== 'string' || typeof link.label !== 'string' || link.label.trim() === '') {
    return `must be ${LINK_EXAMPLE}, got ${JSON.stringify(link)}`;
  }
  if (!/^\/(?!\/)/.test(link.href) && !/^https?:\/\//.test(link.href)) {
    return `href must be a path starting with "/" or an http(s) URL, got "${link.href}"`;
  }
  return undefined;
}

function usersProblem(users: Partial<UserDirectory>): string | undefined {
  return typeof users.verifyPassword === 'function' && typeof users.findById === 'function'
    ? undefined
    : 'must be a UserDirectory ({ verifyPassword, findById }), e.g. fileUserDirectory("users.json")';
}

const SCHEMA: OptionSchema = {
  users: { type: 'object', required: true, expected: 'a UserDirectory, e.g. fileUserDirectory("users.json")', check: usersProblem },
  store: KIT_STORE_OPTION,
  throttle: { type: 'object', expected: '{ perAccountAndNetwork, perAccount, perNetwork, perDevice, … }' },
  title: { type: 'string', check: (title: string) => (title.trim() === '' ? 'must not be empty' : undefined) },
  qrLogin: { type: 'object', expected: LINK_EXAMPLE, check: linkProblem },
  providers: { type: 'array', expected: `an array of ${LINK_EXAMPLE}` },
  allowedOrigins: { type: 'string[]', expected: 'an array of origins like "https://admin.example.test"' },
  assetsPath: {
    type: 'string',
    check: (path: string) =>
      /^\/[A-Za-z0-9/_-]*[A-Za-z0-9_-]$/.test(path) ? undefined : `must be a path like "/portal-assets", got "${path}"`,
  },
  passkeys: { type: 'object', expected: '{ credentials } (a CredentialStore such as new KeyValueCredentialStore(store))' },
  twoFactor: { type: 'object', expected: '{ credentials, sealingKey, issuer }' },
  events: EVENTS_OPTION,
  accounts: { type: 'object', expected: "{ portalUrl: 'https://auth.example.test', mailer, passwordPolicy, … }" },
};

/**
 * Checks `loginPortal`'s options by the kit's one options rule (the throttle's too) and applies the defaults.
 * The caller's objects are only read.
 *
 * @example
 * const settings = resolvePortalOptions({ users, store });
 */
export function resolvePortalOptions(options: LoginPortalOptions): PortalSettings {
  checkOptions('loginPortal', options as unknown, SCHEMA);
  // The directory's users are identities of the directory: its ids never meet another source's subjects.
  const badSource = options.users.source === undefined ? undefined : sourceProblem(options.users.source);
  if (badSource !== undefined) throw new OptionsError(`loginPortal: users.source ${badSource}`);
  (options.providers ?? []).forEach((link: unknown, i) => {
    const problem = link !== null && typeof link === 'object' ? linkProblem(link) : `must be ${LINK_EXAMPLE}`;
    if (problem !== undefined) throw new OptionsError(`loginPortal: providers[${i}] ${problem}`);
  });
  const throttle = options.throttle ?? {};
  const passkeys = options.passkeys === undefined ? undefined : resolvePasskeyOptions(options.passkeys, options.store);
  // With both, a passkey is one more way through the step-up page (a copy of the options: the caller's stay as given).
  const twoFactor =
    options.twoFactor === undefined || passkeys === undefined
      ? options.twoFactor
      : {
          ...options.twoFactor,
          methods: [...(options.twoFactor.methods ?? []), passkeyFactor(passkeys, options.assetsPath ?? '/portal-assets')],
        };
  resolveThrottleOptions('loginPortal throttle', throttle);
  let allowedOrigins: ReadonlySet<string>;
  try {
    allowedOrigins = compileAllowedOrigins(options.allowedOrigins, 'loginPortal');
  } catch (error) {
    throw new OptionsError((error as Error).message);
  }
  const link = (l: PortalLoginLink): LoginLink => ({ href: l.href, label: l.label });
  const accounts = options.accounts === undefined ? undefined : resolveAccountOptions(options.accounts, options.users);
  const settings: PortalSettings = {
    users: options.users,
    directorySource: options.users.source ?? DEFAULT_DIRECTORY_SOURCE,
    store: options.store,
    throttle,
    title: options.title ?? 'Sign in',
    qrLink: options.qrLogin === undefined ? undefined : link(options.qrLogin),
    providerLinks: (options.providers ?? []).map(link),
    allowedOrigins,
    assetsPath: options.assetsPath ?? '/portal-assets',
    passkeys,
    twoFactor: twoFactor === undefined ? undefined : resolveTwoFactor(twoFactor, options.store, throttle),
    events: eventsOption('loginPortal', options.events),
    accounts: undefined,
  };
  if (accounts) settings.accounts = accountRuntime(settings, accounts);
  return settings;
}
