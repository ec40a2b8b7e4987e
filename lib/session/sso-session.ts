import { createHmac, createSecretKey } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { hasMalformedPercentEncoding, malformedUriError } from '../http/malformed-uri';
import { RedisStore } from '../store';
import { debugChannel } from '../util/debug';
import { prepareForProperties } from '../util/request-shape';
import { checkRequestOrigin, csrfError, isSafeMethod, originFactsOf } from './csrf-guard';
import { createSessionEngine, discardSession, sessionView, type EngineStore, type LoadedSession } from './session-engine';
import { judgeSession } from './session-lifetime';
import { SessionCache, type SsoSessionCacheStatus } from './session-cache';
import { asOutage, KitSessionManager } from './session-manager';
import { KeyValueSessionStore, SsoRedisSessionStore } from './session-store';
import { resolveSsoOptions, type SsoSessionOptions } from './sso-session-options';
import { SsoRuntime } from './sso-runtime';
import { attachSessionReader, createSessionReader } from './session-reader';
import type { SessionManager, SsoRequestContext } from './types';

export type { SsoCsrfOptions, SsoSessionLimitOptions, SsoSessionOptions } from './sso-session-options';
export type { SsoSessionCacheOptions, SsoSessionCacheStatus } from './session-cache';

/** The middleware `ssoSession` returns, with the session manager attached. */
export interface SsoSessionMiddleware extends RequestHandler {
  readonly manager: SessionManager;
  /** The object every request gets as `req.sso`. */
  readonly context: SsoRequestContext;
  /** The session cache's state, when the `cache` option turned it on (its connections close with `manager.close()`). */
  readonly cache: SsoSessionCacheStatus | undefined;
}

const debug = debugChannel('session');

/**
 * The shared session of the parent domain: express-session sessions stored through connect-redis (read and
 * written by the kit's lean engine, see `session-engine.ts`), a cookie `__Secure-sso.sid` scoped to
 * `cookieDomain` (HttpOnly, Secure, SameSite=Lax), an idle timeout refreshed lazily (one Redis read per request,
 * a write only every `touchAfterSeconds`) and an absolute lifetime. A store outage answers 503, never "logged
 * out". Sets `req.sso` for the kit's other functions and `req.user` for a logged-in session.
 *
 * It is also where the cookie's CSRF rule is enforced: a request other than GET, HEAD or OPTIONS that the cookie
 * authenticates is refused with 403 `csrf_origin` (nothing saved) unless its `Origin` (else `Referer`) is its own
 * origin or one of `csrf.allowedOrigins` and `Sec-Fetch-Site` is not `cross-site`. A cookie sent twice with two
 * values (cookie tossing) authenticates nothing. A path with a percent-escape that does not decode is refused with
 * 400 `malformed_uri` before anything else.
 *
 * @example
 * const sessions = ssoSession({ redis: process.env.REDIS_URL, cookieDomain: 'example.test',
 *   secret: process.env.SESSION_SECRET, loginUrl: 'https://auth.example.test/login' });
 * app.set('trust proxy', 'loopback');
 * app.use(sessions);
 */
export function ssoSession(options: SsoSessionOptions): SsoSessionMiddleware {
  const resolved = resolveSsoOptions(options);
  const { store, limits, cookie, csrfOrigins } = resolved;

  const handleKey = createSecretKey(
    createHmac('sha256', resolved.secrets[0] as string)
      .update('express-sso-kit session handle')
      .digest(),
  );
  const manager = new KitSessionManager(store, { sessionPrefix: resolved.sessionPrefix, limits, handleKey, ownsStore: resolved.ownsStore });
  const { events } = resolved;
  const hooks = {
    limits,
    onExpired: (sessionId: string, data: { user?: { id: string }; meta?: { tags?: string[] } }, req?: Request) => {
      // Found by the request that read it; a session nobody reads again simply leaves the store with its TTL.
      if (data.user !== undefined) {
        events?.emit('session.ended', { reason: 'expired', userId: data.user.id, sessionHandle: manager.handleOf(sessionId) }, req);
      }
      return manager.unindex(sessionId, data.user?.id, data.meta?.tags);
    },
  };
  let sessionStore: EngineStore;
  let cache: SessionCache<LoadedSession> | undefined;
  if (store instanceof RedisStore) {
    const keyPrefix = store.prefix + resolved.sessionPrefix;
    if (resolved.cache) {
      cache = new SessionCache(store.client, keyPrefix, resolved.cache);
      // The invalidation connections close with the manager, like the store it may own.
      const closeManager = manager.close.bind(manager);
      const sessionCache = cache;
      manager.close = async () => {
        await sessionCache.close();
        await closeManager();
      };
      // The manager's deletes go through the plain store; waiting for their invalidations before answering means
      // the next request on this process already sees the session gone.
      for (const name of ['revokeSession', 'logoutEverywhere', 'destroyByTag'] as const) {
        const operation = manager[name].bind(manager) as (...args: string[]) => Promise<unknown>;
        Object.defineProperty(manager, name, {
          value: async (...args: string[]) => {
            const result = await operation(...args);
            await sessionCache.settle();
            return result;
          },
          configurable: true,
          writable: true,
        });
      }
    }
    const redisSessions = new SsoRedisSessionStore(store.client, keyPrefix, hooks, cache);
    const trackedCache = cache;
    if (events !== undefined && trackedCache !== undefined) {
      events.metrics.trackSessionCache(() => ({
        hits: redisSessions.cacheHits,
        misses: redisSessions.cacheMisses,
        entries: trackedCache.size,
      }));
    }
    sessionStore = redisSessions;
  } else {
    sessionStore = new KeyValueSessionStore(store, resolved.sessionPrefix, hooks);
  }
  const runtime = new SsoRuntime(
    manager,
    resolved.loginUrl,
    resolved.redirects,
    cookie,
    limits,
    sessionStore,
    resolved.linkAccount,
    events,
    resolved.sessionLimit,
  );

  // Keys are built once: an HMAC with a KeyObject skips re-importing the secret on every request.
  const keys = resolved.secrets.map((secret) => createSecretKey(Buffer.from(secret, 'utf8')));
  const engine = createSessionEngine({ cookie, keys, store: sessionStore });

  /**
   * The cookie authenticates this request; true when it may, otherwise the 403 is passed on. The rule lives here,
   * where the cookie is accepted, so no wiring can skip it: `requirePermission` after `ssoSession`, a handler
   * reading `req.user`, and every route the kit mounts on the session all see only requests that passed. Sibling
   * subdomains are same-site, so SameSite=Lax still sends them the cookie: their origin must be listed.
   */
  function mayAuthenticate(req: Request, next: NextFunction): boolean {
    if (isSafeMethod(req.method)) return true;
    const refusal = checkRequestOrigin(originFactsOf(req), csrfOrigins);
    if (refusal === undefined) return true;
    // Nothing of a refused request reaches the store: the session stays exactly as it was.
    discardSession(req);
    next(csrfError(refusal, req, 'ssoSession'));
    return false;
  }

  /** Once the session is loaded: the lifetime rules, the CSRF rule and `req.user`. */
  function afterSessionLoaded(req: Request, next: NextFunction): void {
    // Read without building req.session: a request that only checks the login copies nothing.
    const current = sessionView(req);
    if (current !== undefined && current.user !== undefined) {
      const now = Date.now();
      const verdict = judgeSession(current.meta, now, limits);
      if (verdict === 'live' || verdict === 'touch') {
        if (!mayAuthenticate(req, next)) return;
        req.user = current.user;
        // Changing lastSeenAt makes the engine re-save (SET … XX with a fresh TTL) at the end of the response.
        if (verdict === 'touch') (req.session.meta as NonNullable<typeof current.meta>).lastSeenAt = now;
      } else if (verdict === 'expired') {
        debug('session cookie %s not used: the session is past its idle timeout or absolute lifetime', cookie.name);
      }
    }
    next();
  }

  const middleware = function ssoSessionMiddleware(req: Request, res: Response, next: NextFunction): void {
    // A path that does not decode names nothing the app serves: refused before a session is read or a login
    // redirect would carry it as the address to come back to.
    if (hasMalformedPercentEncoding(req.path)) {
      next(malformedUriError());
      return;
    }
    if (req.sso !== undefined) {
      next();
      return;
    }
    // Five properties follow (sso, sessionStore, sessionID, session, user): make adding them cheap first.
    prepareForProperties(req, res);
    req.sso = runtime;
    const cookieId = engine.begin(req, res);
    if (cookieId === undefined) {
      afterSessionLoaded(req, next);
      return;
    }
    let settled = false;
    engine.load(req, res, cookieId, (error?: unknown) => {
      // Called once per request; the guard keeps a misbehaving store callback from running the chain twice.
      if (settled) return;
      settled = true;
      if (error) next(asOutage(error));
      else afterSessionLoaded(req, next);
    });
  } as SsoSessionMiddleware;
  Object.defineProperty(middleware, 'manager', { value: manager, enumerable: true });
  Object.defineProperty(middleware, 'context', { value: runtime, enumerable: true });
  Object.defineProperty(middleware, 'cache', { value: cache, enumerable: true });
  attachSessionReader(middleware, createSessionReader(runtime, keys, sessionStore));
  return middleware;
}
