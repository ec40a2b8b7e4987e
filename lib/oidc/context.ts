import { createHash, randomBytes } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import type { KeyValueStore } from '../store/port';
import type { OidcRequestContext, OidcSessionState } from './types';
import { OidcProvider } from './provider';
import { OidcGrantError, refreshTokenGrant } from './token-client';
import { validateRefreshedIdToken } from './id-token';
import { reloadSession, saveSession } from './session-bridge';

/** Options of {@link oidcContext}. */
export interface OidcContextOptions {
  /** An access token expiring within this many seconds is refreshed before it is handed out. Default 60. */
  refreshMarginSeconds?: number;
  /** Lifetime of the cross-instance refresh lock, in seconds; longer than a token call can take. Default 10. */
  lockSeconds?: number;
  /** The store holding the refresh lock. Default: the provider's `store`. */
  store?: KeyValueStore;
}

const WAIT_STEP_MS = 50;

function sessionHandle(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('base64url').slice(0, 32);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Installs `req.oidc` for sessions that logged in through one of `providers`: `accessToken()` hands out the access
 * token, refreshing it first when it expires within `refreshMarginSeconds`; `refresh()` forces a refresh_token
 * grant. Concurrent refreshes of one session share one grant call: in-process through a shared promise, across
 * instances through a lock in the store (`setIfAbsent` with a short TTL); a waiting instance re-reads the session
 * once the lock is released. The old refresh token is kept when the provider returns none. A refused refresh
 * (`invalid_grant`) removes the tokens from the session and rejects with 401. Mount after `ssoSession()`.
 *
 * @example
 * app.use(oidcContext([corp, partner]));
 * app.get('/api/orders', async (req, res) => {
 *   const token = await req.oidc?.accessToken();
 *   res.json(await fetchOrders(token));
 * });
 */
export function oidcContext(providers: OidcProvider | readonly OidcProvider[], options: OidcContextOptions = {}): RequestHandler {
  const list = Array.isArray(providers) ? [...providers] : [providers];
  if (list.length === 0 || !list.every((provider) => provider instanceof OidcProvider)) {
    if (providers && typeof providers === 'object' && 'method' in providers && 'headers' in providers) {
      throw new TypeError('oidcContext: call the factory with providers: app.use(oidcContext([corp])), not app.use(oidcContext)');
    }
    throw new TypeError('oidcContext: pass a provider from oidcProvider({ … }) or an array of them');
  }
  if (options === null || typeof options !== 'object') throw new TypeError('oidcContext: options must be an object');
  const byName = new Map<string, OidcProvider>();
  for (const provider of list) {
    if (byName.has(provider.name)) throw new TypeError(`oidcContext: two providers are named "${provider.name}"; give each its own name`);
    byName.set(provider.name, provider);
  }
  const margin = options.refreshMarginSeconds ?? 60;
  if (typeof margin !== 'number' || !Number.isFinite(margin) || margin < 0) {
    throw new TypeError(`oidcContext: refreshMarginSeconds must be a number of seconds ≥ 0, got ${JSON.stringify(margin)}`);
  }
  const lockSeconds = options.lockSeconds ?? 10;
  if (typeof lockSeconds !== 'number' || !Number.isFinite(lockSeconds) || lockSeconds <= 0) {
    throw new TypeError(`oidcContext: lockSeconds must be a positive number of seconds, got ${JSON.stringify(lockSeconds)}`);
  }
  for (const provider of list) {
    if (!options.store && !provider.store) {
      throw new TypeError(
        `oidcContext: provider "${provider.name}" has no store for the refresh lock; pass oidcProvider({ store }) or oidcContext(p, { store })`,
      );
    }
  }
  const storeOf = (provider: OidcProvider): KeyValueStore => (options.store ?? provider.store) as KeyValueStore;
  // One refresh per session in this process; later callers join it.
  const inflight = new Map<string, Promise<void>>();

  async function refreshOnce(req: Request, provider: OidcProvider): Promise<void> {
    const before = req.session.oidc;
    if (!before?.refreshToken)
      throw new UnauthorizedError({ code: 'oidc_no_refresh_token', detail: 'This session has no refresh token; log in again.' });
    const store = storeOf(provider);
    const lockKey = `oidc-refresh:{${sessionHandle(req.sessionID)}}`;
    const owner = randomBytes(16).toString('base64url');

    if (!(await store.setIfAbsent(lockKey, owner, lockSeconds))) {
      // Another instance is refreshing this session: wait for its lock to go, then read what it stored.
      const deadline = Date.now() + lockSeconds * 1000;
      while (Date.now() < deadline && (await store.get(lockKey)) !== null) await delay(WAIT_STEP_MS);
      await reloadSession(req);
      const after = req.session.oidc;
      if (!after?.accessToken)
        throw new UnauthorizedError({ code: 'oidc_refresh_refused', detail: 'The identity provider ended this login; log in again.' });
      if (after.accessToken === before.accessToken && after.expiresAt === before.expiresAt) {
        throw new ServiceUnavailableError({
          code: 'idp_unavailable',
          detail: 'Refreshing the access token did not complete. Try again shortly.',
        });
      }
      return;
    }
    try {
      // The lock may have been released by an instance that finished just before we took it: use its tokens.
      await reloadSession(req);
      const current = req.session.oidc;
      if (!current?.refreshToken)
        throw new UnauthorizedError({ code: 'oidc_refresh_refused', detail: 'The identity provider ended this login; log in again.' });
      if (current.accessToken !== before.accessToken || current.expiresAt !== before.expiresAt) return;

      let next: OidcSessionState;
      try {
        const tokens = await refreshTokenGrant(provider, current.refreshToken);
        if (tokens.idToken) await validateRefreshedIdToken(provider, tokens.idToken, current.idToken);
        next = {
          ...current,
          accessToken: tokens.accessToken,
          // RFC 6749 §6: without a new refresh token, the old one stays valid.
          refreshToken: tokens.refreshToken ?? current.refreshToken,
          ...(tokens.idToken ? { idToken: tokens.idToken } : {}),
        };
        if (tokens.expiresAt) next.expiresAt = tokens.expiresAt;
        else delete next.expiresAt;
      } catch (error) {
        if (!(error instanceof OidcGrantError)) throw error;
        // The refresh token is dead (revoked, expired, reused): keep no tokens that pretend otherwise.
        req.session.oidc = { provider: current.provider, ...(current.sid ? { sid: current.sid } : {}) };
        await saveSession(req);
        throw new UnauthorizedError({
          code: 'oidc_refresh_refused',
          detail: 'The identity provider refused to refresh this login; log in again.',
        });
      }
      req.session.oidc = next;
      await saveSession(req);
    } finally {
      // Release only our own lock; if it expired and another instance holds it now, leave theirs alone.
      if ((await store.get(lockKey).catch(() => null)) === owner) await store.delete(lockKey).catch(() => undefined);
    }
  }

  function refresh(req: Request, provider: OidcProvider): Promise<void> {
    const key = req.sessionID;
    let running = inflight.get(key);
    if (!running) {
      running = refreshOnce(req, provider).finally(() => inflight.delete(key));
      inflight.set(key, running);
      return running;
    }
    // A joiner shares the outcome, then re-reads the session the leader saved.
    return running.then(() => reloadSession(req));
  }

  return function oidcContextMiddleware(req: Request, _res: Response, next: NextFunction) {
    if (!req.session) {
      next(new Error('oidcContext: req.session is missing; mount ssoSession() before oidcContext()'));
      return;
    }
    const state = req.session.oidc;
    const provider = state ? byName.get(state.provider) : undefined;
    if (!provider) {
      next();
      return;
    }
    const context: OidcRequestContext = {
      async accessToken() {
        const current = req.session.oidc;
        if (!current?.accessToken) return undefined;
        const nowSeconds = Date.now() / 1000;
        const fresh = current.expiresAt === undefined || current.expiresAt - margin > nowSeconds;
        if (fresh) return current.accessToken;
        if (!current.refreshToken)
          return current.expiresAt !== undefined && current.expiresAt > nowSeconds ? current.accessToken : undefined;
        await refresh(req, provider);
        return req.session.oidc?.accessToken;
      },
      refresh: () => refresh(req, provider),
    };
    req.oidc = context;
    next();
  };
}
