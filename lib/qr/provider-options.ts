import type { RequestHandler } from 'express';
import { DEFAULT_DIRECTORY_SOURCE, sourceProblem } from '../session/identity';
import type { KeyValueStore } from '../store/port';
import type { QrAppRegistration } from './app-registry';
import type { QrTokenIssuer, QrUserDirectory } from './provider-ports';
import { checkOptions, OptionsError, type OptionSchema, type OptionSpec } from '../util/options';

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
   * `req.auth.claims.sub` of a token issued by `appTokenIssuer`. Without it only the provider's own session
   * (`req.user` of the directory's source) is accepted.
   */
  authenticateApp?: RequestHandler;
  /**
   * The issuer (`iss`) of the phone app's tokens, whose subjects are the ids of `users`. Required with
   * `authenticateApp`: a token of any other issuer names somebody else, whatever its `sub` (403 `foreign_identity`).
   */
  appTokenIssuer?: string;
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
  /** How long a QR code can be scanned and confirmed, 120–300 s (WeChat's QR codes live 2–5 minutes). Default 180. */
  qrLifetimeSeconds?: number;
  /**
   * TESTS ONLY: a validity of 1–119 s, so a test can watch a code expire. Refused when NODE_ENV is `production`.
   */
  testOnlyQrLifetimeSeconds?: number;
  /** How long the authorization code in the redirect can be redeemed, 30–600 s. Default 300. */
  codeLifetimeSeconds?: number;
  /** Lifetime of issued access tokens. Default 7200, WeChat's `expires_in`. */
  accessTokenLifetimeSeconds?: number;
  /** How long the openid → user mapping for userinfo is kept after an exchange or refresh. Default 30 days. */
  subjectLifetimeSeconds?: number;
  /** Require the app secret on refresh_token. WeChat does not; the kit does by default. Default true. */
  requireSecretOnRefresh?: boolean;
  /** Answer errcode bodies with HTTP 200 as WeChat does. Default false (4xx/5xx statuses as in docs/qr-login.md). */
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
  qrLifetimeSeconds: number;
  codeLifetimeSeconds: number;
  accessTokenLifetimeSeconds: number;
  subjectLifetimeSeconds: number;
  requireSecretOnRefresh: boolean;
  wechatCompatibleStatus: boolean;
  /** Undefined when limiting is off. */
  rateLimits: Required<QrRateLimits> | undefined;
  publicOrigin: string | undefined;
  cookieName: string;
  loginUrl: string | undefined;
  /** The identity source of the provider's users: only they may scan and confirm. */
  directorySource: string;
  /** The issuer of the phone app's tokens, when `authenticateApp` is given. */
  appTokenIssuer: string | undefined;
}

/** A whole number of seconds within [min, max]: these lifetimes become store expiries, which are whole seconds. */
function seconds(min: number, max: number, extra?: () => string | undefined): OptionSpec {
  const expected = `a whole number of seconds from ${min} to ${max}`;
  return {
    type: 'integer',
    expected,
    check: (value: number) => extra?.() ?? (value < min || value > max ? `must be ${expected}, got ${value}` : undefined),
  };
}

const TOKEN_METHODS = ['issueAccessToken', 'verifyAccessToken', 'issueRefreshToken', 'rotateRefreshToken', 'revokeGrant', 'isRevoked'];

function publicUrlProblem(publicUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    return `must be an absolute URL like "https://idp.example.test", got ${JSON.stringify(publicUrl)}`;
  }
  if (url.pathname !== '/' || url.search || url.hash) {
    return 'must be an origin only, like "https://idp.example.test" (mount paths are taken from the request)';
  }
  return undefined;
}

const SCHEMA: OptionSchema = {
  store: {
    type: 'object',
    required: true,
    expected: 'a KeyValueStore (e.g. new RedisStore(url))',
    check: (store: { compareAndSet?: unknown }) =>
      typeof store.compareAndSet === 'function' ? undefined : 'must be a KeyValueStore (e.g. new RedisStore(url))',
  },
  apps: { type: 'array', required: true, expected: 'a non-empty array of { appid, secretHash, name, redirectUris }' },
  users: {
    type: 'object',
    required: true,
    expected: 'a directory with findById(id) returning the user or null',
    check: (users: { findById?: unknown }) =>
      typeof users.findById === 'function' ? undefined : 'must have findById(id) returning the user or null',
  },
  tokens: {
    type: 'object',
    required: true,
    expected: 'qrTokenIssuer(tokenService)',
    check: (tokens: Record<string, unknown>) => {
      const missing = TOKEN_METHODS.find((method) => typeof tokens[method] !== 'function');
      return missing === undefined ? undefined : `must implement ${missing}() (wrap the TokenService with qrTokenIssuer())`;
    },
  },
  authenticateApp: { type: 'function', expected: 'a middleware such as requireBearer({ … })' },
  appTokenIssuer: { type: 'string', expected: 'the issuer (iss) of the phone app\'s tokens, e.g. "https://idp.example.test"' },
  publicUrl: { type: 'string', expected: 'an origin like "https://idp.example.test"', check: publicUrlProblem },
  openidSecret: {
    type: ['string', 'buffer'],
    check: (secret: string | Buffer) =>
      Buffer.byteLength(secret) < 32 ? 'must be at least 32 bytes (e.g. crypto.randomBytes(32))' : undefined,
  },
  qrLifetimeSeconds: seconds(120, 300),
  testOnlyQrLifetimeSeconds: seconds(1, 119, () =>
    process.env.NODE_ENV === 'production' ? 'is for tests and is refused when NODE_ENV=production' : undefined,
  ),
  codeLifetimeSeconds: seconds(30, 600),
  accessTokenLifetimeSeconds: seconds(60, 86_400),
  subjectLifetimeSeconds: seconds(3600, 365 * 86_400),
  requireSecretOnRefresh: { type: 'boolean' },
  wechatCompatibleStatus: { type: 'boolean' },
  rateLimits: {
    type: ['object', 'boolean'],
    expected: '{ qrconnectPerMinute, tokenPerMinute } or false',
    check: (limits: object | boolean) => (limits === true ? 'must be { qrconnectPerMinute, tokenPerMinute } or false' : undefined),
  },
  bindingCookieName: {
    type: 'string',
    check: (name: string) => (/^[A-Za-z0-9_-]{1,64}$/.test(name) ? undefined : 'must be a plain cookie name like "qr_binding"'),
  },
  loginUrl: {
    type: 'string',
    expected: 'a path on this provider, like "/login"',
    check: (url: string) => (url.startsWith('/') && !url.startsWith('//') ? undefined : 'must be a path on this provider, like "/login"'),
  },
};

const PER_MINUTE: OptionSpec = {
  type: 'integer',
  expected: 'a positive whole number',
  check: (value: number) => (value < 1 ? `must be a positive whole number, got ${value}` : undefined),
};
const RATE_LIMITS_SCHEMA: OptionSchema = { qrconnectPerMinute: PER_MINUTE, tokenPerMinute: PER_MINUTE };

/**
 * Checks the options of `qrLoginProvider` when it is called (the kit's one options rule) and resolves every
 * default once. Throws an `OptionsError` naming the option at fault; the options are only read.
 *
 * @example
 * const settings = resolveProviderOptions(options);
 */
export function resolveProviderOptions(options: QrLoginProviderOptions): ResolvedProviderOptions {
  checkOptions('qrLoginProvider', options, SCHEMA, { exclusive: [['qrLifetimeSeconds', 'testOnlyQrLifetimeSeconds']] });
  const source = options.users.source;
  if (source !== undefined && sourceProblem(source) !== undefined) {
    throw new OptionsError(`qrLoginProvider: users.source ${String(sourceProblem(source))}`);
  }
  if ((options.authenticateApp === undefined) !== (options.appTokenIssuer === undefined)) {
    throw new OptionsError(
      "qrLoginProvider: authenticateApp and appTokenIssuer go together: give the issuer (iss) of the phone app's tokens, whose subjects are the ids of users",
    );
  }
  if (typeof options.rateLimits === 'object') checkOptions('qrLoginProvider: rateLimits', options.rateLimits, RATE_LIMITS_SCHEMA);
  return {
    qrLifetimeSeconds: options.testOnlyQrLifetimeSeconds ?? options.qrLifetimeSeconds ?? 180,
    codeLifetimeSeconds: options.codeLifetimeSeconds ?? 300,
    accessTokenLifetimeSeconds: options.accessTokenLifetimeSeconds ?? 7200,
    subjectLifetimeSeconds: options.subjectLifetimeSeconds ?? 30 * 86_400,
    requireSecretOnRefresh: options.requireSecretOnRefresh ?? true,
    wechatCompatibleStatus: options.wechatCompatibleStatus ?? false,
    rateLimits: options.rateLimits === false ? undefined : { qrconnectPerMinute: 30, tokenPerMinute: 600, ...options.rateLimits },
    publicOrigin: options.publicUrl === undefined ? undefined : new URL(options.publicUrl).origin,
    cookieName: options.bindingCookieName ?? 'qr_binding',
    loginUrl: options.loginUrl,
    directorySource: source ?? DEFAULT_DIRECTORY_SOURCE,
    appTokenIssuer: options.appTokenIssuer,
  };
}
