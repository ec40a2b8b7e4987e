import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { sourceProblem } from '../session/identity';
import type { LoginUser } from '../session/types';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { isLoopbackHost } from './app-registry';
import type { QrProviderClientSettings, QrUserinfo } from './qr-login-client';

/** What `mapUser` returns: the profile of the QR identity, never its id. */
export type QrUserProfile = Pick<LoginUser, 'name' | 'roles' | 'attributes'>;

/** Options of `qrLogin`. */
export interface QrLoginOptions {
  /** The provider's base URL, e.g. `https://idp.example.test` (https; http only for loopback development). */
  providerUrl: string;
  /** This app's appid at the provider. */
  appid: string;
  /** This app's secret at the provider (at least 32 characters). Sent only to the provider, never logged. */
  secret: string;
  /** This app's callback URL, exactly as registered at the provider. */
  redirectUri: string;
  /** How the code is exchanged: `POST` (form body, the default) or `GET` with a query, which WeChat itself requires. */
  exchangeMethod?: 'POST' | 'GET';
  /**
   * How the access token travels to `/sns/userinfo`: the `Authorization` header (default, keeps it out of URLs and
   * logs) or the `access_token` query parameter, which WeChat itself requires.
   */
  userinfoTokenIn?: 'header' | 'query';
  /**
   * Maps the provider's profile to the user's name, roles and attributes. The identity is always
   * (`qr:<providerUrl>#<appid>`, openid); map it onto a local account with `ssoSession({ linkAccount })`.
   * Default: name = nickname, no roles, attributes `{ openid, unionid?, user_id? }` (`user_id`: the provider
   * directory's id of the user, which the kit's provider releases only to apps registered with `releaseUserId`).
   */
  mapUser?: (userinfo: QrUserinfo) => QrUserProfile | Promise<QrUserProfile>;
  /** How long one provider call may take, in seconds (fractions allowed). Default 5; then the callback answers 503. */
  timeoutSeconds?: number;
  /** How long a started login stays completable in this browser. Default 600 s (the provider's QR lives ≤ 300 s). */
  stateLifetimeSeconds?: number;
  /** How many QR logins one browser may have in flight (tabs); the oldest is dropped beyond. Default 5. */
  maxPendingLogins?: number;
  /** Where QR sign-ins and refused callbacks are recorded. Default the events of `ssoSession` (on `req.sso`). */
  events?: SecurityEvents;
}

/** The relying app's settings once validated, with every default applied. */
export interface ResolvedQrLoginOptions {
  settings: QrProviderClientSettings;
  stateLifetimeMs: number;
  maxPending: number;
  redirectUri: string;
  /** The identity source of every login: `qr:<providerUrl>#<appid>`. */
  source: string;
  events: SecurityEvents | undefined;
}

function httpsOrLoopbackProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be an absolute URL like "https://idp.example.test", got ${JSON.stringify(value)}`;
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    return `must use https (http only for loopback development), got "${value}"`;
  }
  if (url.hash || url.search) return `must have no query or fragment, got "${value}"`;
  return undefined;
}

function oneOf(...values: string[]) {
  return (value: string) => (values.includes(value) ? undefined : `must be ${values.map((v) => `"${v}"`).join(' or ')}, got "${value}"`);
}

function wholeIn(min: number, max: number, unit: string) {
  return (value: number) =>
    value < min || value > max ? `must be a whole number of ${unit} from ${min} to ${max}, got ${value}` : undefined;
}

const SCHEMA: OptionSchema = {
  providerUrl: { type: 'string', required: true, expected: "the provider's https URL", check: httpsOrLoopbackProblem },
  appid: {
    type: 'string',
    required: true,
    expected: 'the app id registered at the provider',
    check: (appid: string) => (/^[A-Za-z0-9_.-]{1,64}$/.test(appid) ? undefined : 'must be the app id registered at the provider'),
  },
  secret: {
    type: 'string',
    required: true,
    expected: 'the app secret, at least 32 characters; read it from the environment, e.g. process.env.QR_SECRET',
    check: (secret: string) =>
      secret.length < 32
        ? 'must be the app secret (at least 32 characters); read it from the environment, e.g. process.env.QR_SECRET'
        : undefined,
  },
  redirectUri: { type: 'string', required: true, expected: 'the callback URL registered at the provider', check: httpsOrLoopbackProblem },
  exchangeMethod: { type: 'string', expected: '"POST" or "GET"', check: oneOf('POST', 'GET') },
  userinfoTokenIn: { type: 'string', expected: '"header" or "query"', check: oneOf('header', 'query') },
  mapUser: { type: 'function', expected: 'a function (userinfo) => ({ name, roles?, attributes? })' },
  timeoutSeconds: {
    type: 'number',
    expected: 'a number of seconds from 0.1 to 60',
    check: (value: number) => (value < 0.1 || value > 60 ? `must be a number of seconds from 0.1 to 60, got ${value}` : undefined),
  },
  stateLifetimeSeconds: { type: 'integer', expected: 'a whole number of seconds from 60 to 3600', check: wholeIn(60, 3600, 'seconds') },
  maxPendingLogins: { type: 'integer', expected: 'a whole number from 1 to 20', check: wholeIn(1, 20, 'logins') },
  events: EVENTS_OPTION,
};

/**
 * Checks the options of `qrLogin` when it is called (the kit's one options rule) and resolves every default once.
 *
 * @example
 * const { settings, source } = resolveQrLoginOptions(options);
 */
export function resolveQrLoginOptions(options: QrLoginOptions): ResolvedQrLoginOptions {
  checkOptions('qrLogin', options, SCHEMA);
  const providerUrl = new URL(options.providerUrl).href.replace(/\/$/, '');
  // The provider URL names the identity source of every login (`qr:<providerUrl>#<appid>`).
  const source = `qr:${providerUrl}#${options.appid}`;
  if (sourceProblem(source) !== undefined) {
    throw new OptionsError(
      `qrLogin: providerUrl must be at most 440 characters without "|" (it names the identity source "qr:<providerUrl>#<appid>"), got "${options.providerUrl}"`,
    );
  }
  return {
    settings: {
      providerUrl,
      appid: options.appid,
      secret: options.secret,
      exchangeMethod: options.exchangeMethod ?? 'POST',
      userinfoTokenIn: options.userinfoTokenIn ?? 'header',
      timeoutMs: Math.round((options.timeoutSeconds ?? 5) * 1000),
    },
    stateLifetimeMs: (options.stateLifetimeSeconds ?? 600) * 1000,
    maxPending: options.maxPendingLogins ?? 5,
    redirectUri: options.redirectUri,
    source,
    events: eventsOption('qrLogin', options.events),
  };
}
