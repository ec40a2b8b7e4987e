import { createHmac, createSecretKey } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RedisStore, type KeyValueStore, type RedisClient, type RedisConnectionOptions } from '../store';
import { isWithinDomain, validateCookieDomain } from './cookie-domain';
import { createRedirectPolicy } from './redirect-policy';
import { createSessionEngine, type EngineStore } from './session-engine';
import { judgeSession, type SessionLimits } from './session-lifetime';
import { asOutage, KitSessionManager } from './session-manager';
import { KeyValueSessionStore, SsoRedisSessionStore } from './session-store';
import { SsoRuntime } from './sso-runtime';
import type { LinkAccount, SessionCookieSettings, SessionManager, SsoRequestContext } from './types';

/** Options of {@link ssoSession}. Give exactly one of `store` and `redis`. */
export interface SsoSessionOptions {
  /** A kit store: a `RedisStore` (sessions go through connect-redis on its client) or a `MemoryStore` (one process). */
  store?: KeyValueStore;
  /** Where Redis is: a URL, connection options or an ioredis client. `ssoSession` makes the `RedisStore`. */
  redis?: string | RedisConnectionOptions | RedisClient;
  /** The parent domain the cookie is scoped to, e.g. `example.test`. Not an IP, `localhost` or a public suffix. */
  cookieDomain: string;
  /** Cookie-signing secret(s), each at least 32 characters. With several, the first signs and all verify (rotation). */
  secret: string | readonly string[];
  /** Absolute http(s) URL of the central login page, on the cookie domain. */
  loginUrl: string;
  /** Cookie name. Default `sso.sid`. */
  cookieName?: string;
  /** The session ends after this many seconds without a request. Default 1800. */
  idleTimeoutSeconds?: number;
  /** The session ends this many seconds after login, however active. Default 43200 (12 h); at least the idle timeout. */
  absoluteTimeoutSeconds?: number;
  /** The idle timer is re-saved only when older than this. Default min(60, idle / 10). */
  touchAfterSeconds?: number;
  /** Mark the cookie `Secure`. Default true; false needs `allowInsecureCookieForLocalDevelopment`. */
  secureCookie?: boolean;
  /** Confirms that `secureCookie: false` is meant (plain-http local development). */
  allowInsecureCookieForLocalDevelopment?: boolean;
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
}

/** The middleware `ssoSession` returns, with the session manager attached. */
export interface SsoSessionMiddleware extends RequestHandler {
  readonly manager: SessionManager;
  /** The object every request gets as `req.sso`. */
  readonly context: SsoRequestContext;
}

const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
let insecureWarningShown = false;

function fail(message: string): never {
  throw new TypeError(`ssoSession: ${message}`);
}

function positiveSeconds(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    fail(`${name} must be a positive number of seconds, got ${String(value)}`);
  }
  return value;
}

function looksLikeRequest(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'method' in value && 'headers' in value && 'socket' in value;
}

function isKeyValueStore(value: unknown): value is KeyValueStore {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as KeyValueStore).get === 'function' &&
    typeof (value as KeyValueStore).addToSet === 'function' &&
    ((value as KeyValueStore).kind === 'redis' || (value as KeyValueStore).kind === 'memory')
  );
}

interface ResolvedOptions {
  store: KeyValueStore;
  ownsStore: boolean;
  cookie: SessionCookieSettings;
  secrets: string[];
  limits: SessionLimits;
  loginUrl: string;
  sessionPrefix: string;
  redirectOrigins: string[];
  redirectPorts: number[];
  defaultRedirectUrl: string;
  linkAccount: LinkAccount | undefined;
}

function resolveOptions(options: SsoSessionOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') {
    fail('pass options: app.use(ssoSession({ redis, cookieDomain, secret, loginUrl }))');
  }
  const cookieDomain = validateCookieDomain(options.cookieDomain, 'ssoSession: cookieDomain');

  const secretList =
    typeof options.secret === 'string' ? [options.secret] : Array.isArray(options.secret) ? [...options.secret] : undefined;
  if (!secretList || secretList.length === 0) fail('secret must be a string of at least 32 characters (or an array of them for rotation)');
  secretList.forEach((secret, position) => {
    if (typeof secret !== 'string' || secret.length < 32) {
      fail(
        `secret${secretList.length > 1 ? `[${position}]` : ''} must be at least 32 characters; generate one with \`openssl rand -base64 48\``,
      );
    }
  });

  const secureCookie = options.secureCookie ?? true;
  if (typeof secureCookie !== 'boolean') fail('secureCookie must be a boolean');
  if (!secureCookie) {
    if (options.allowInsecureCookieForLocalDevelopment !== true) {
      fail(
        'secureCookie: false sends the session over plain http; also set allowInsecureCookieForLocalDevelopment: true if this is local development',
      );
    }
    if (!insecureWarningShown) {
      insecureWarningShown = true;
      console.warn(
        '[express-sso-kit] ssoSession: the session cookie is not Secure (allowInsecureCookieForLocalDevelopment). Never do this in production.',
      );
    }
  }

  const cookieName = options.cookieName ?? 'sso.sid';
  if (typeof cookieName !== 'string' || !COOKIE_NAME.test(cookieName))
    fail(`cookieName must be a cookie token such as "sso.sid", got ${JSON.stringify(cookieName)}`);
  if (cookieName.startsWith('__Host-'))
    fail('cookieName cannot start with "__Host-": such cookies may not carry the Domain this kit needs; use "__Secure-" or no prefix');
  if (cookieName.startsWith('__Secure-') && !secureCookie) fail('cookieName "__Secure-…" needs secureCookie: true');

  const idle = positiveSeconds('idleTimeoutSeconds', options.idleTimeoutSeconds, 1800);
  const absolute = positiveSeconds('absoluteTimeoutSeconds', options.absoluteTimeoutSeconds, 43200);
  if (absolute < idle) fail(`absoluteTimeoutSeconds (${absolute}) must be at least idleTimeoutSeconds (${idle})`);
  const touchAfter = options.touchAfterSeconds ?? Math.min(60, idle / 10);
  if (typeof touchAfter !== 'number' || !Number.isFinite(touchAfter) || touchAfter < 0 || touchAfter >= idle) {
    fail(
      `touchAfterSeconds must be a number of seconds from 0 up to below idleTimeoutSeconds (${idle}), got ${String(options.touchAfterSeconds)}`,
    );
  }

  if (typeof options.loginUrl !== 'string')
    fail(`loginUrl must be the absolute URL of the login page, e.g. "https://auth.${cookieDomain}/login"`);
  let login: URL;
  try {
    login = new URL(options.loginUrl);
  } catch {
    fail(`loginUrl must be an absolute URL such as "https://auth.${cookieDomain}/login", got "${options.loginUrl}"`);
  }
  if (login.protocol !== 'https:' && !(login.protocol === 'http:' && !secureCookie)) {
    fail(`loginUrl must use https (http only together with secureCookie: false), got "${options.loginUrl}"`);
  }
  if (!isWithinDomain(login.hostname, cookieDomain)) {
    fail(`loginUrl must be on ${cookieDomain} or a subdomain, so the login page can set the shared cookie; got "${options.loginUrl}"`);
  }
  if (login.username || login.password || login.hash) fail(`loginUrl must not carry credentials or a #fragment, got "${options.loginUrl}"`);

  const sessionPrefix = options.sessionPrefix ?? 'sess:';
  if (typeof sessionPrefix !== 'string' || sessionPrefix === '' || /[{}]/.test(sessionPrefix)) {
    fail(`sessionPrefix must be a non-empty string without "{" or "}", got ${JSON.stringify(sessionPrefix)}`);
  }

  if ((options.store === undefined) === (options.redis === undefined)) {
    fail('give exactly one of store (a kit RedisStore or MemoryStore) and redis (a URL, connection options or ioredis client)');
  }
  let store: KeyValueStore;
  let ownsStore = false;
  if (options.store !== undefined) {
    if (!isKeyValueStore(options.store)) fail('store must be a kit KeyValueStore: new RedisStore(...) or new MemoryStore()');
    store = options.store;
  } else {
    store = new RedisStore(options.redis as string | RedisConnectionOptions | RedisClient);
    ownsStore = true;
  }

  if (options.linkAccount !== undefined && typeof options.linkAccount !== 'function') {
    fail('linkAccount must be a function (login, req) => local account | undefined | null');
  }

  return {
    store,
    ownsStore,
    cookie: { name: cookieName, domain: cookieDomain, path: '/', httpOnly: true, secure: secureCookie, sameSite: 'lax' },
    secrets: secretList,
    limits: { idleMs: idle * 1000, absoluteMs: absolute * 1000, touchAfterMs: touchAfter * 1000 },
    loginUrl: login.href,
    sessionPrefix,
    redirectOrigins: [...(options.allowedRedirectOrigins ?? [])],
    // The login page's own port (local development) is trusted like its host.
    redirectPorts: [...(options.allowedRedirectPorts ?? []), ...(login.port ? [Number(login.port)] : [])],
    defaultRedirectUrl: options.defaultRedirectUrl ?? `${login.origin}/`,
    linkAccount: options.linkAccount,
  };
}

/**
 * The shared session of the parent domain: express-session sessions stored through connect-redis (read and
 * written by the kit's lean engine, see `session-engine.ts`), a cookie scoped to
 * `cookieDomain` (HttpOnly, Secure, SameSite=Lax), an idle timeout refreshed lazily (one Redis read per request,
 * a write only every `touchAfterSeconds`) and an absolute lifetime. A store outage answers 503, never "logged
 * out". Sets `req.sso` for the kit's other functions and `req.user` for a logged-in session.
 *
 * @example
 * const sessions = ssoSession({ redis: process.env.REDIS_URL, cookieDomain: 'example.test',
 *   secret: process.env.SESSION_SECRET, loginUrl: 'https://auth.example.test/login' });
 * app.set('trust proxy', 'loopback');
 * app.use(sessions);
 */
export function ssoSession(options: SsoSessionOptions): SsoSessionMiddleware {
  if (looksLikeRequest(options) || arguments.length === 3) {
    fail('it is a factory: write app.use(ssoSession({ ... })), not app.use(ssoSession)');
  }
  const resolved = resolveOptions(options);
  const { store, limits, cookie } = resolved;

  const handleKey = createSecretKey(
    createHmac('sha256', resolved.secrets[0] as string)
      .update('express-sso-kit session handle')
      .digest(),
  );
  const manager = new KitSessionManager(store, { sessionPrefix: resolved.sessionPrefix, limits, handleKey, ownsStore: resolved.ownsStore });
  const hooks = {
    limits,
    onExpired: (sessionId: string, data: { user?: { id: string }; meta?: { tags?: string[] } }) =>
      manager.unindex(sessionId, data.user?.id, data.meta?.tags),
  };
  let sessionStore: EngineStore;
  if (store instanceof RedisStore) {
    sessionStore = new SsoRedisSessionStore(store.client, store.prefix + resolved.sessionPrefix, hooks);
  } else {
    sessionStore = new KeyValueSessionStore(store, resolved.sessionPrefix, hooks);
  }

  const redirects = createRedirectPolicy({
    parentDomain: cookie.domain,
    allowedOrigins: resolved.redirectOrigins,
    allowedPorts: resolved.redirectPorts,
    defaultUrl: resolved.defaultRedirectUrl,
    allowHttp: !cookie.secure,
  });
  const runtime = new SsoRuntime(manager, resolved.loginUrl, redirects, cookie, limits, sessionStore, resolved.linkAccount);

  // Keys are built once: an HMAC with a KeyObject skips re-importing the secret on every request.
  const keys = resolved.secrets.map((secret) => createSecretKey(Buffer.from(secret, 'utf8')));
  const loadSession = createSessionEngine({ cookie, keys, store: sessionStore });

  const middleware = function ssoSessionMiddleware(req: Request, res: Response, next: NextFunction): void {
    if (req.sso !== undefined) {
      next();
      return;
    }
    req.sso = runtime;
    let settled = false;
    loadSession(req, res, function afterSessionLoaded(error?: unknown) {
      // Called once per request; the guard keeps a misbehaving store callback from running the chain twice.
      if (settled) return;
      settled = true;
      if (error) {
        next(asOutage(error));
        return;
      }
      const current = req.session;
      if (current !== undefined && current.user !== undefined) {
        const now = Date.now();
        const verdict = judgeSession(current.meta, now, limits);
        if (verdict === 'touch') {
          // Changing lastSeenAt makes the engine re-save (SET … XX with a fresh TTL) at the end of the response.
          (current.meta as NonNullable<typeof current.meta>).lastSeenAt = now;
          req.user = current.user;
        } else if (verdict === 'live') {
          req.user = current.user;
        }
      }
      next();
    });
  } as SsoSessionMiddleware;
  Object.defineProperty(middleware, 'manager', { value: manager, enumerable: true });
  Object.defineProperty(middleware, 'context', { value: runtime, enumerable: true });
  return middleware;
}
