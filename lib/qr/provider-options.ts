import type { RequestHandler } from 'express';
import { DEFAULT_DIRECTORY_SOURCE, sourceProblem } from '../session/identity';
import type { KeyValueStore } from '../store/port';
import type { QrAppRegistration } from './app-registry';
import type { QrTokenIssuer, QrUserDirectory } from './provider-ports';

/** Rate limits of what a stranger can reach, per minute. */
export interface QrRateLimits {
  /** QR login requests one client IP (an IPv6 /56) may create per minute. Default 30. */
  qrconnectPerMinute?: number;
  /** Token, refresh and userinfo calls per appid per minute. Default 600. */
  tokenPerMinute?: number;
}

/** Options of `qrLoginProvider`. */
export interface QrLoginProviderOptions {
  /** Where requests, codes and counters live; a RedisStore so every instance sees every request. */
  store: KeyValueStore;
  /** The relying apps allowed to use QR login. */
  apps: readonly QrAppRegistration[];
  /** Where `/sns/userinfo` reads profiles. */
  users: QrUserDirectory;
  /** The token service (see `qrTokenIssuer()` to adapt the kit's `TokenService`). */
  tokens: QrTokenIssuer;
  /**
   * Authenticates the phone app's user on the `/sns/qr-logins` API, e.g. `requireBearer({ … })`; the user is
   * `req.auth.claims.sub`. Without it only the provider's own session (`req.session.user`) is accepted.
   */
  authenticateApp?: RequestHandler;
  /**
   * The provider's public origin (e.g. `https://idp.example.test`), used in the URL inside the QR code and for the
   * same-origin check of the confirmation form. Default: derived from the request (set Express's `trust proxy`).
   */
  publicUrl?: string;
  /**
   * Secret keying the openid HMAC (≥ 32 bytes). Default: one random secret created on first use and kept in the
   * store, shared by all instances; set it explicitly so openids survive losing the store.
   */
  openidSecret?: string | Buffer;
  /** How long a QR code can be scanned and confirmed, 120–300 s (spec §8: 2–5 minutes). Default 180. */
  qrValiditySeconds?: number;
  /**
   * TESTS ONLY: a validity of 1–119 s, so a test can watch a code expire. Refused when NODE_ENV is `production`.
   */
  testOnlyQrValiditySeconds?: number;
  /** How long the authorization code in the redirect can be redeemed, 30–600 s. Default 300. */
  codeValiditySeconds?: number;
  /** Lifetime of issued access tokens. Default 7200 (spec §8). */
  accessTokenLifetimeSeconds?: number;
  /** How long the openid → user mapping for userinfo is kept after an exchange or refresh. Default 30 days. */
  subjectRetentionSeconds?: number;
  /** Require the app secret on refresh_token. WeChat does not; the kit does by default. Default true. */
  requireSecretOnRefresh?: boolean;
  /** Answer errcode bodies with HTTP 200 as WeChat does. Default false (the statuses of spec §7). */
  wechatCompatibleStatus?: boolean;
  /** Limits per minute, or false to turn limiting off (e.g. behind a gateway that limits). */
  rateLimits?: QrRateLimits | false;
  /** Name of the browser-binding cookie. Default `qr_binding`. */
  bindingCookieName?: string;
  /** Where the web confirmation page sends a visitor without a session; gets `?return_to=<page>`. Default: 401. */
  loginUrl?: string;
}

/** The provider's settings once validated, with every default applied. */
export interface ResolvedProviderOptions {
  validitySeconds: number;
  codeValiditySeconds: number;
  accessTokenLifetimeSeconds: number;
  subjectRetentionSeconds: number;
  requireSecretOnRefresh: boolean;
  wechatCompatibleStatus: boolean;
  /** Undefined when limiting is off. */
  rateLimits: Required<QrRateLimits> | undefined;
  publicOrigin: string | undefined;
  cookieName: string;
  loginUrl: string | undefined;
  /** The identity source of the provider's users: only they may scan and confirm. */
  directorySource: string;
}

const KNOWN_OPTIONS = new Set([
  'store',
  'apps',
  'users',
  'tokens',
  'authenticateApp',
  'publicUrl',
  'openidSecret',
  'qrValiditySeconds',
  'testOnlyQrValiditySeconds',
  'codeValiditySeconds',
  'accessTokenLifetimeSeconds',
  'subjectRetentionSeconds',
  'requireSecretOnRefresh',
  'wechatCompatibleStatus',
  'rateLimits',
  'bindingCookieName',
  'loginUrl',
]);

/** Throws the provider's option error. */
export function fail(message: string): never {
  throw new TypeError(`qrLoginProvider: ${message}`);
}

function integerIn(
  options: QrLoginProviderOptions,
  name: keyof QrLoginProviderOptions,
  fallback: number,
  min: number,
  max: number,
): number {
  const value = options[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(`${String(name)} must be a whole number of seconds from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function checkPorts(options: QrLoginProviderOptions): void {
  if (!options.store || typeof options.store.compareAndSet !== 'function') fail('store must be a KeyValueStore (e.g. new RedisStore(url))');
  if (!options.users || typeof options.users.findById !== 'function') fail('users must have findById(id) returning the user or null');
  if (options.users.source !== undefined && sourceProblem(options.users.source) !== undefined) {
    fail(`users.source ${String(sourceProblem(options.users.source))}`);
  }
  const tokens = options.tokens as Partial<QrTokenIssuer> | undefined;
  for (const method of [
    'issueAccessToken',
    'verifyAccessToken',
    'issueRefreshToken',
    'rotateRefreshToken',
    'revokeGrant',
    'isRevoked',
  ] as const) {
    if (!tokens || typeof tokens[method] !== 'function')
      fail(`tokens must implement ${method}() (wrap the TokenService with qrTokenIssuer())`);
  }
  if (options.authenticateApp !== undefined && typeof options.authenticateApp !== 'function') {
    fail('authenticateApp must be a middleware such as requireBearer({ … })');
  }
}

function publicOriginOf(publicUrl: string | undefined): string | undefined {
  if (publicUrl === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    fail(`publicUrl must be an absolute URL like "https://idp.example.test", got ${JSON.stringify(publicUrl)}`);
  }
  if (url.pathname !== '/' || url.search || url.hash)
    fail('publicUrl must be an origin only, like "https://idp.example.test" (mount paths are taken from the request)');
  return url.origin;
}

function checkRateLimits(rateLimits: QrLoginProviderOptions['rateLimits']): Required<QrRateLimits> | undefined {
  if (rateLimits !== undefined && rateLimits !== false) {
    if (typeof rateLimits !== 'object') fail('rateLimits must be { qrconnectPerMinute, tokenPerMinute } or false');
    for (const [name, value] of Object.entries(rateLimits)) {
      if (name !== 'qrconnectPerMinute' && name !== 'tokenPerMinute') fail(`rateLimits has an unknown limit "${name}"`);
      if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 1))
        fail(`rateLimits.${name} must be a positive whole number`);
    }
  }
  return rateLimits === false ? undefined : { qrconnectPerMinute: 30, tokenPerMinute: 600, ...rateLimits };
}

/**
 * Checks the options of `qrLoginProvider` when it is called and resolves every default once.
 *
 * @example
 * const settings = resolveProviderOptions(options); // throws a TypeError naming the option at fault
 */
export function resolveProviderOptions(options: QrLoginProviderOptions): ResolvedProviderOptions {
  if (!options || typeof options !== 'object') fail('options are required: { store, apps, users, tokens }');
  for (const key of Object.keys(options)) if (!KNOWN_OPTIONS.has(key)) fail(`unknown option "${key}"`);
  checkPorts(options);
  let validitySeconds = integerIn(options, 'qrValiditySeconds', 180, 120, 300);
  if (options.testOnlyQrValiditySeconds !== undefined) {
    if (process.env.NODE_ENV === 'production') fail('testOnlyQrValiditySeconds is for tests and is refused when NODE_ENV=production');
    if (options.qrValiditySeconds !== undefined) fail('give qrValiditySeconds or testOnlyQrValiditySeconds, not both');
    validitySeconds = integerIn(options, 'testOnlyQrValiditySeconds', 180, 1, 119);
  }
  const codeValiditySeconds = integerIn(options, 'codeValiditySeconds', 300, 30, 600);
  integerIn(options, 'accessTokenLifetimeSeconds', 7200, 60, 86_400);
  integerIn(options, 'subjectRetentionSeconds', 30 * 86_400, 3600, 365 * 86_400);
  const publicOrigin = publicOriginOf(options.publicUrl);
  if (options.openidSecret !== undefined && Buffer.byteLength(options.openidSecret) < 32) {
    fail('openidSecret must be at least 32 bytes (e.g. crypto.randomBytes(32))');
  }
  for (const flag of ['requireSecretOnRefresh', 'wechatCompatibleStatus'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') fail(`${flag} must be true or false`);
  }
  const rateLimits = checkRateLimits(options.rateLimits);
  const cookieName = options.bindingCookieName ?? 'qr_binding';
  if (typeof cookieName !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(cookieName))
    fail('bindingCookieName must be a plain cookie name like "qr_binding"');
  if (
    options.loginUrl !== undefined &&
    (typeof options.loginUrl !== 'string' || !options.loginUrl.startsWith('/') || options.loginUrl.startsWith('//'))
  ) {
    fail('loginUrl must be a path on this provider, like "/login"');
  }
  return {
    validitySeconds,
    codeValiditySeconds,
    accessTokenLifetimeSeconds: options.accessTokenLifetimeSeconds ?? 7200,
    subjectRetentionSeconds: options.subjectRetentionSeconds ?? 30 * 86_400,
    requireSecretOnRefresh: options.requireSecretOnRefresh ?? true,
    wechatCompatibleStatus: options.wechatCompatibleStatus ?? false,
    rateLimits,
    publicOrigin,
    cookieName,
    loginUrl: options.loginUrl,
    directorySource: options.users.source ?? DEFAULT_DIRECTORY_SOURCE,
  };
}
