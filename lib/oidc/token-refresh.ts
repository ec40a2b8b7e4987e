import type { Request } from 'express';
import { ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import type { KeyValueStore } from '../store/port';
import { debugChannel } from '../util/debug';
import type { OidcSessionState } from './types';
import type { OidcProvider } from './provider';
import { OidcGrantError, refreshTokenGrant } from './token-client';
import { validateRefreshedIdToken } from './id-token';
import { reloadSession, saveSession } from './session-bridge';
import { sha256 } from '../util/digest';
import { randomToken } from '../util/random-token';

/** How {@link createTokenRefresher} coordinates refreshes. */
export interface TokenRefresherSettings {
  /** The store holding the cross-instance lock of a provider. */
  storeOf(provider: OidcProvider): KeyValueStore;
  /** Lifetime of the lock, in seconds; longer than a token call can take. */
  lockLifetimeSeconds: number;
}

const WAIT_STEP_MS = 50;
const debug = debugChannel('oidc');

function sessionHandle(sessionId: string): string {
  return sha256(sessionId, 'base64url').slice(0, 32);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function refreshRefused(detail: string): UnauthorizedError {
  return new UnauthorizedError({ code: 'oidc_refresh_refused', detail });
}

/**
 * Refreshes the tokens of a session once however many requests ask at the same time: in-process through a shared
 * promise, across instances through a lock in the store (`setIfAbsent` with a short TTL); a waiting instance
 * re-reads the session once the lock is released. The old refresh token is kept when the provider returns none. A
 * refused refresh (`invalid_grant`) removes the tokens from the session and rejects with 401.
 *
 * @example
 * const refresh = createTokenRefresher({ storeOf: () => store, lockLifetimeSeconds: 10 });
 * await refresh(req, corp);
 */
export function createTokenRefresher(settings: TokenRefresherSettings): (req: Request, provider: OidcProvider) => Promise<void> {
  const { lockLifetimeSeconds } = settings;
  // One refresh per session in this process; later callers join it.
  const inflight = new Map<string, Promise<void>>();

  /** Waits for another instance's refresh of this session to finish, then uses what it stored. */
  async function awaitOtherInstance(req: Request, store: KeyValueStore, lockKey: string, before: OidcSessionState): Promise<void> {
    const deadline = Date.now() + lockLifetimeSeconds * 1000;
    while (Date.now() < deadline && (await store.get(lockKey)) !== null) await delay(WAIT_STEP_MS);
    await reloadSession(req);
    const after = req.session.oidc;
    if (!after?.accessToken) {
      debug('refresh: another instance found the refresh token refused; the login has no tokens any more');
      throw refreshRefused('The identity provider ended this login; log in again.');
    }
    if (after.accessToken === before.accessToken && after.expiresAt === before.expiresAt) {
      debug('refresh: the refresh of another instance did not complete within lockLifetimeSeconds');
      throw new ServiceUnavailableError({
        code: 'idp_unavailable',
        detail: 'Refreshing the access token did not complete. Try again shortly.',
      });
    }
  }

  async function grant(req: Request, provider: OidcProvider, current: OidcSessionState & { refreshToken: string }): Promise<void> {
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
      debug('refresh through provider "%s" refused: the token endpoint answered %s', provider.name, error.error);
      // The refresh token is dead (revoked, expired, reused): keep no tokens that pretend otherwise.
      req.session.oidc = { provider: current.provider, issuer: current.issuer, ...(current.sid ? { sid: current.sid } : {}) };
      await saveSession(req);
      throw refreshRefused('The identity provider refused to refresh this login; log in again.');
    }
    req.session.oidc = next;
    await saveSession(req);
  }

  async function refreshOnce(req: Request, provider: OidcProvider): Promise<void> {
    const before = req.session.oidc;
    if (!before?.refreshToken) {
      debug('refresh through provider "%s" refused: the session has no refresh token', provider.name);
      throw new UnauthorizedError({ code: 'oidc_no_refresh_token', detail: 'This session has no refresh token; log in again.' });
    }
    const store = settings.storeOf(provider);
    const lockKey = `oidc-refresh:{${sessionHandle(req.sessionID)}}`;
    const owner = randomToken(16);

    if (!(await store.setIfAbsent(lockKey, owner, lockLifetimeSeconds))) {
      await awaitOtherInstance(req, store, lockKey, before);
      return;
    }
    try {
      // The lock may have been released by an instance that finished just before we took it: use its tokens.
      await reloadSession(req);
      const current = req.session.oidc;
      if (!current?.refreshToken) {
        debug('refresh through provider "%s" refused: the refresh token was dropped meanwhile', provider.name);
        throw refreshRefused('The identity provider ended this login; log in again.');
      }
      if (current.accessToken !== before.accessToken || current.expiresAt !== before.expiresAt) return;
      await grant(req, provider, { ...current, refreshToken: current.refreshToken });
    } finally {
      // Release only our own lock; if it expired and another instance holds it now, leave theirs alone.
      if ((await store.get(lockKey).catch(() => null)) === owner) await store.delete(lockKey).catch(() => undefined);
    }
  }

  return function refresh(req: Request, provider: OidcProvider): Promise<void> {
    const key = req.sessionID;
    let running = inflight.get(key);
    if (!running) {
      running = refreshOnce(req, provider).finally(() => inflight.delete(key));
      inflight.set(key, running);
      return running;
    }
    // A joiner shares the outcome, then re-reads the session the leader saved.
    return running.then(() => reloadSession(req));
  };
}
