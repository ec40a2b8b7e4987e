import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { RedisStore, type KeyValueStore, type RedisClient, type RedisConnectionOptions } from '../store';
import { checkOptions, OptionsError, refuseInProduction, type OptionSchema } from '../util/options';
import { resolveSessionCacheOptions, type SsoSessionCacheOptions } from './session-cache';
import { isWithinDomain, validateCookieDomain } from './cookie-domain';
import { compileAllowedOrigins } from './csrf-guard';
import { redirectPolicyFrom } from './redirect-policy';
import { refuseRenamedOptions } from './renamed-options';
import type { SessionLimits } from './session-lifetime';
import type { LinkAccount, RedirectPolicy, SessionCookieSettings } from './types';

/** The cross-site request rule of {@link SsoSessionOptions}. */
export interface SsoCsrfOptions {
  /**
   * Exact origins besides the request's own whose pages may send state-changing requests with the session cookie,
   * e.g. a sibling app `https://admin.example.test`. Sibling subdomains are same-site, so the cookie reaches them,
   * and they are not trusted unless listed (one may serve user content). Default none.
   */
  allowedOrigins?: readonly string[];
}

/** Options of `ssoSession`. Give exactly one of `store` and `redis`. */
export interface SsoSessionOptions {
  /** A kit store: a `RedisStore` (sessions go through connect-redis on its client) or a `MemoryStore` (one process). */
  store?: KeyValueStore;
  /** Where Redis is: a URL, connection options or an ioredis client. `ssoSession` makes the `RedisStore`. */
  redis?: string | RedisConnectionOptions | RedisClient;
  /** The parent domain the cookie is scoped to, e.g. `example.test`. Not an IP, `localhost` or a public suffix. */
  cookieDomain: string;
  /** Cookie-signing secret(s), each at least 32 characters. With several, the first signs and all verify (rotation). */
  secret: string | readonly string[];
  /** Absolute https URL of the central login page, on the cookie domain (http only for insecure local development). */
  loginUrl: string;
  /** Cookie name. Default `__Secure-sso.sid` (`sso.sid` with `allowInsecureLocalDevelopment`). */
  cookieName?: string;
  /** The session ends after this many seconds without a request. Default 1800. */
  idleTimeoutSeconds?: number;
  /** The session ends this many seconds after login, however active. Default 43200 (12 h); at least the idle timeout. */
  absoluteLifetimeSeconds?: number;
  /** The idle timer is re-saved only when older than this. Default min(60, idle / 10). */
  touchAfterSeconds?: number;
  /**
   * Plain-http local development: the cookie is not `Secure` (and so named `sso.sid`), `loginUrl` and redirects
   * may use http. Refused when `NODE_ENV=production`; warns once. Default false.
   */
  allowInsecureLocalDevelopment?: boolean;
  /** Key prefix of session records inside the store (after the store's own prefix). Default `sess:`. */
  sessionPrefix?: string;
  /** Exact origins outside the cookie domain that redirects may go to. Default none. */
  allowedRedirectOrigins?: readonly string[];
  /** Non-default ports allowed in redirects on the cookie domain (development). Default none. */
  allowedRedirectPorts?: readonly number[];
  /** Where unsafe redirect targets are replaced to. Default the origin of `loginUrl`. */
  defaultRedirectUrl?: string;
  /**
   * Maps a login onto a local account (e.g. a corporate IdP's users onto the portal directory's accounts): the
   * only way two identity sources become one user. Without it, every (source, subject) is its own user.
   */
  linkAccount?: LinkAccount;
  /** The origin check of state-changing requests the session cookie authenticates; see {@link SsoCsrfOptions}. */
  csrf?: SsoCsrfOptions;
  /**
   * How many sessions one user may hold at once, and what happens at a login past it (ASVS 7.1.2); see
   * {@link SsoSessionLimitOptions}. Default: no limit (each session still ends at its idle timeout and absolute
   * lifetime, and the user sees and ends them on the sessions page).
   */
  sessionLimit?: SsoSessionLimitOptions;
  /**
   * Opt-in per-process cache of sessions read from Redis, kept coherent by Redis client-side caching (invalidation
   * messages on a dedicated connection): a revocation or logout on any process evicts the session everywhere
   * within milliseconds, and while the invalidation connection is down every read goes to Redis. Needs a Redis
   * store. `{}` for the defaults; see {@link SsoSessionCacheOptions}.
   */
  cache?: SsoSessionCacheOptions;
  /**
   * Where the session's security events go (`securityEvents(...)`): sessions created, renewed and ended, CSRF
   * refusals. Every middleware mounted after `ssoSession` finds them on `req.sso.events` (the login portal, OIDC and
   * QR logins, logout, the OpenID Provider on this session, `errorHandler`): give them here once. Default none.
   */
  events?: SecurityEvents;
}

/** The `sessionLimit` option of `ssoSession`: concurrent sessions per user. */
export interface SsoSessionLimitOptions {
  /** Most live sessions one user may hold, 1 to 1000. */
  maxPerUser: number;
  /**
   * At a login past the limit: `end_oldest` (default) ends the user's least recently created sessions (recorded as
   * `session.ended` with reason `session_limit`); `refuse_new` refuses the login with 403 `session_limit_reached`
   * until the user signs out somewhere or a session expires.
   */
  whenReached?: 'end_oldest' | 'refuse_new';
}

/** The options of `ssoSession`, checked and with every default applied. */
export interface ResolvedSsoOptions {
  store: KeyValueStore;
  ownsStore: boolean;
  cookie: SessionCookieSettings;
  secrets: string[];
  limits: SessionLimits;
  loginUrl: string;
  sessionPrefix: string;
  redirects: RedirectPolicy;
  linkAccount: LinkAccount | undefined;
  csrfOrigins: ReadonlySet<string>;
  cache: Required<SsoSessionCacheOptions> | undefined;
  events: SecurityEvents | undefined;
  sessionLimit: Required<SsoSessionLimitOptions> | undefined;
}

const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const positive = (value: number): string | undefined => (value > 0 ? undefined : `must be a positive number of seconds, got ${value}`);
let insecureWarningShown = false;

function isKeyValueStore(value: unknown): value is KeyValueStore {
  const store = value as KeyValueStore;
  return typeof store.get === 'function' && typeof store.addToSet === 'function' && (store.kind === 'redis' || store.kind === 'memory');
}

const SCHEMA: OptionSchema = {
  store: {
    type: 'object',
    check: (value: unknown) =>
      isKeyValueStore(value) ? undefined : 'must be a kit KeyValueStore: new RedisStore(...) or new MemoryStore()',
  },
  redis: { type: ['string', 'object'], expected: 'a Redis URL, connection options or an ioredis client' },
  cookieDomain: { type: 'string', required: true, expected: 'the parent domain shared by your apps, e.g. "example.test"' },
  secret: {
    type: ['string', 'string[]'],
    required: true,
    expected: 'a string of at least 32 characters (or an array of them for rotation)',
  },
  loginUrl: { type: 'string', required: true, expected: 'the absolute URL of the login page, e.g. "https://auth.example.test/login"' },
  cookieName: {
    type: 'string',
    check: (name: string) =>
      !COOKIE_NAME.test(name)
        ? `must be a cookie token such as "__Secure-sso.sid", got ${JSON.stringify(name)}`
        : name.startsWith('__Host-')
          ? 'cannot start with "__Host-": such cookies may not carry the Domain this kit needs; use "__Secure-" or no prefix'
          : undefined,
  },
  idleTimeoutSeconds: { type: 'number', check: positive },
  absoluteLifetimeSeconds: { type: 'number', check: positive },
  touchAfterSeconds: { type: 'number', expected: 'a number of seconds from 0 up to below idleTimeoutSeconds' },
  allowInsecureLocalDevelopment: { type: 'boolean' },
  sessionPrefix: {
    type: 'string',
    check: (prefix: string) =>
      prefix === '' || /[{}]/.test(prefix) ? `must be a non-empty string without "{" or "}", got ${JSON.stringify(prefix)}` : undefined,
  },
  allowedRedirectOrigins: { type: 'string[]', expected: 'an array of origins like "https://partner.example.net"' },
  allowedRedirectPorts: { type: 'array', expected: 'an array of port numbers such as [3000]' },
  defaultRedirectUrl: { type: 'string' },
  linkAccount: { type: 'function', expected: 'a function (login, req) => local account | undefined | null' },
  csrf: { type: 'object', expected: 'an object { allowedOrigins: [...] }' },
  sessionLimit: {
    type: 'object',
    expected: "an object { maxPerUser: 1..1000, whenReached?: 'end_oldest' | 'refuse_new' }",
    check: (limit: { maxPerUser?: unknown; whenReached?: unknown }) => {
      const extra = Object.keys(limit).filter((key) => key !== 'maxPerUser' && key !== 'whenReached');
      if (extra.length > 0) return `has unknown option ${extra.join(', ')}`;
      if (typeof limit.maxPerUser !== 'number' || !Number.isInteger(limit.maxPerUser) || limit.maxPerUser < 1 || limit.maxPerUser > 1000) {
        return `maxPerUser must be a whole number from 1 to 1000, got ${JSON.stringify(limit.maxPerUser)}`;
      }
      if (limit.whenReached !== undefined && limit.whenReached !== 'end_oldest' && limit.whenReached !== 'refuse_new') {
        return `whenReached must be 'end_oldest' or 'refuse_new', got ${JSON.stringify(limit.whenReached)}`;
      }
      return undefined;
    },
  },
  cache: { type: 'object', expected: 'an object { maxEntries?, maxAgeSeconds? } ({} for the defaults)' },
  events: EVENTS_OPTION,
};

const RENAMED = {
  absoluteTimeoutSeconds: 'renamed to absoluteLifetimeSeconds',
  secureCookie: 'replaced by allowInsecureLocalDevelopment: true (a cookie without Secure, for local development only)',
  allowInsecureCookieForLocalDevelopment: 'renamed to allowInsecureLocalDevelopment',
};

function fail(message: string): never {
  throw new OptionsError(`ssoSession: ${message}`);
}

function checkSecrets(secret: string | readonly string[]): string[] {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0) fail('secret must be a string of at least 32 characters (or an array of them for rotation)');
  secrets.forEach((value, position) => {
    if (value.length < 32) {
      fail(
        `secret${secrets.length > 1 ? `[${position}]` : ''} must be at least 32 characters; generate one with \`openssl rand -base64 48\``,
      );
    }
  });
  return secrets;
}

function checkLoginUrl(loginUrl: string, cookieDomain: string, insecure: boolean): URL {
  let login: URL;
  try {
    login = new URL(loginUrl);
  } catch {
    fail(`loginUrl must be an absolute URL such as "https://auth.${cookieDomain}/login", got "${loginUrl}"`);
  }
  if (login.protocol !== 'https:' && !(login.protocol === 'http:' && insecure)) {
    fail(`loginUrl must use https (http only with allowInsecureLocalDevelopment), got "${loginUrl}"`);
  }
  if (!isWithinDomain(login.hostname, cookieDomain)) {
    fail(`loginUrl must be on ${cookieDomain} or a subdomain, so the login page can set the shared cookie; got "${loginUrl}"`);
  }
  if (login.username || login.password || login.hash) fail(`loginUrl must not carry credentials or a #fragment, got "${loginUrl}"`);
  return login;
}

function insecureDevelopment(options: SsoSessionOptions): boolean {
  if (options.allowInsecureLocalDevelopment !== true) return false;
  refuseInProduction('ssoSession');
  if (!insecureWarningShown) {
    insecureWarningShown = true;
    console.warn(
      '[express-sso-kit] ssoSession: allowInsecureLocalDevelopment: the session cookie is not Secure. Never do this in production.',
    );
  }
  return true;
}

/**
 * Checks the options of `ssoSession` through the kit's one options rule and applies the defaults. Throws an
 * `OptionsError` naming the option and the fix; never changes the caller's object.
 *
 * @example
 * const resolved = resolveSsoOptions(options);
 */
export function resolveSsoOptions(options: SsoSessionOptions): ResolvedSsoOptions {
  refuseRenamedOptions('ssoSession', options, RENAMED);
  checkOptions('ssoSession', options, SCHEMA, { exactlyOne: [['store', 'redis']] });
  if (options.csrf !== undefined) {
    checkOptions('ssoSession: csrf', options.csrf, {
      allowedOrigins: { type: 'string[]', expected: 'an array of origins like "https://admin.example.test"' },
    });
  }
  const cookieDomain = validateCookieDomain(options.cookieDomain, 'ssoSession: cookieDomain');
  const secrets = checkSecrets(options.secret);
  const insecure = insecureDevelopment(options);
  const secure = !insecure;

  // `__Secure-` by default: browsers accept such a cookie only from an https page with the Secure flag, so a
  // plain-http host of the domain cannot plant one.
  const cookieName = options.cookieName ?? (secure ? '__Secure-sso.sid' : 'sso.sid');
  if (cookieName.startsWith('__Secure-') && !secure)
    fail('cookieName "__Secure-…" needs a Secure cookie; drop the prefix for local development');

  const idle = options.idleTimeoutSeconds ?? 1800;
  const absolute = options.absoluteLifetimeSeconds ?? 43200;
  if (absolute < idle) fail(`absoluteLifetimeSeconds (${absolute}) must be at least idleTimeoutSeconds (${idle})`);
  const touchAfter = options.touchAfterSeconds ?? Math.min(60, idle / 10);
  if (touchAfter < 0 || touchAfter >= idle) {
    fail(`touchAfterSeconds must be a number of seconds from 0 up to below idleTimeoutSeconds (${idle}), got ${String(touchAfter)}`);
  }
  const login = checkLoginUrl(options.loginUrl, cookieDomain, insecure);
  const redirects = redirectPolicyFrom(
    {
      parentDomain: cookieDomain,
      allowedOrigins: options.allowedRedirectOrigins ?? [],
      // The login page's own port (local development) is trusted like its host.
      allowedPorts: [...(options.allowedRedirectPorts ?? []), ...(login.port ? [Number(login.port)] : [])],
      defaultUrl: options.defaultRedirectUrl ?? `${login.origin}/`,
      allowHttp: insecure,
    },
    'ssoSession',
    {
      parentDomain: 'cookieDomain',
      defaultUrl: 'defaultRedirectUrl',
      allowedOrigins: 'allowedRedirectOrigins',
      allowedPorts: 'allowedRedirectPorts',
    },
  );
  const csrfOrigins = compileAllowedOrigins(options.csrf?.allowedOrigins, 'ssoSession: csrf', { allowHttp: insecure });
  const cache = options.cache === undefined ? undefined : resolveSessionCacheOptions(options.cache);
  const events = eventsOption('ssoSession', options.events);
  if (cache && options.store !== undefined && !(options.store instanceof RedisStore)) {
    fail('cache needs Redis (its invalidation messages keep the cache coherent); pass a RedisStore or redis, or drop cache');
  }

  // Opened last, so an options mistake above leaves no connection behind.
  let store: KeyValueStore;
  let ownsStore = false;
  if (options.store !== undefined) {
    store = options.store;
  } else {
    store = new RedisStore(options.redis as string | RedisConnectionOptions | RedisClient);
    ownsStore = true;
  }

  return {
    store,
    ownsStore,
    cookie: { name: cookieName, domain: cookieDomain, path: '/', httpOnly: true, secure, sameSite: 'lax' },
    secrets,
    limits: { idleMs: idle * 1000, absoluteMs: absolute * 1000, touchAfterMs: touchAfter * 1000 },
    loginUrl: login.href,
    sessionPrefix: options.sessionPrefix ?? 'sess:',
    redirects,
    linkAccount: options.linkAccount,
    csrfOrigins,
    cache,
    events,
    sessionLimit:
      options.sessionLimit === undefined
        ? undefined
        : { maxPerUser: options.sessionLimit.maxPerUser, whenReached: options.sessionLimit.whenReached ?? 'end_oldest' },
  };
}
