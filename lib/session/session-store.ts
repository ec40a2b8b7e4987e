import { RedisStore as ConnectRedisStore } from 'connect-redis';
import session, { type SessionData } from 'express-session';
import type { KeyValueStore, RedisClient } from '../store';
import { rememberSavedText, type EngineStore, type LoadedSession } from './session-engine';
import { judgeSession, storeTtlMillis, type SessionLimits } from './session-lifetime';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type StoreCallback = (err?: any, data?: any) => void;

/** What the session stores need from `ssoSession`. */
export interface SessionStoreHooks {
  limits: SessionLimits;
  /** Called (and awaited, errors ignored) after an expired session was deleted, to unindex it. */
  onExpired(sessionId: string, data: SessionData): Promise<void>;
}

const FRESH_LOGIN = Symbol('express-sso-kit.freshLogin');

/**
 * Marks a session object as created by a login right now, so its first save may create the store key. Every
 * other save of a logged-in session only overwrites an existing key: a request still in flight when its session
 * is revoked must not bring the session back by saving it at the end of its response.
 *
 * @example
 * markFreshLogin(req.session);
 * req.session.save(callback);
 */
export function markFreshLogin(sessionObject: object): void {
  Object.defineProperty(sessionObject, FRESH_LOGIN, { value: true, enumerable: false, configurable: true });
}

/**
 * Ends the mark once the login's own save is done; later saves of the same object only overwrite.
 *
 * @example
 * clearFreshLogin(req.session);
 */
export function clearFreshLogin(sessionObject: object): void {
  delete (sessionObject as Record<symbol, unknown>)[FRESH_LOGIN];
}

function mayCreateKey(data: SessionData): boolean {
  return (data as unknown as Record<symbol, unknown>)[FRESH_LOGIN] === true || data.meta === undefined;
}

function finish(callback: StoreCallback | undefined, error: unknown, data?: unknown): unknown {
  if (callback) {
    callback(error ?? null, data);
    return undefined;
  }
  if (error) throw error;
  return data;
}

/**
 * Parses a stored session and applies the lifetime rules; an expired one is deleted and reads as null. Synchronous
 * for a live session, so the hot path costs no extra promise step.
 */
function keepIfLive(
  text: string | null,
  hooks: SessionStoreHooks,
  sessionId: string,
  remove: () => Promise<unknown>,
): LoadedSession | null | Promise<LoadedSession | null> {
  if (text === null) return null;
  const data = lenientJson.parse(text);
  if (!data) return null;
  if (judgeSession(data.meta, Date.now(), hooks.limits) !== 'expired') return { data, text };
  return remove()
    .then(() => hooks.onExpired(sessionId, data).catch(() => undefined))
    .then(() => null);
}

// A value that is not JSON (written by something else under our prefix) is treated as no session, not as an
// outage: otherwise one corrupt key would answer 503 forever.
const lenientJson = {
  parse(text: string): SessionData {
    try {
      return JSON.parse(text) as SessionData;
    } catch {
      return null as unknown as SessionData;
    }
  },
  stringify: (data: SessionData): string => JSON.stringify(data),
};

/**
 * connect-redis with the kit's lifetime rules: a session past its idle or absolute limit reads as absent (and is
 * deleted), the TTL of a save is min(idle, remaining absolute), and saves of an existing login use `SET … XX`.
 * `disableTouch` is on: the idle timer is refreshed by `ssoSession`'s lazy re-save, not by a write per request.
 *
 * @example
 * const sessionStore = new SsoRedisSessionStore(redisStore.client, `${redisStore.prefix}sess:`, hooks);
 */
export class SsoRedisSessionStore extends ConnectRedisStore implements EngineStore {
  private readonly redis: RedisClient;
  private readonly hooks: SessionStoreHooks;

  constructor(redis: RedisClient, keyPrefix: string, hooks: SessionStoreHooks) {
    super({ client: redis, prefix: keyPrefix, disableTouch: true, serializer: lenientJson });
    this.redis = redis;
    this.hooks = hooks;
    // The idle timer is refreshed by re-saving, never by a separate EXPIRE per request.
    Object.defineProperty(this, 'touch', { value: undefined, enumerable: false });
  }

  loadLive(sessionId: string): Promise<LoadedSession | null> {
    // The hot path: one GET and one JSON.parse in a single promise step.
    return this.redis.get(this.prefix + sessionId).then((text) => keepIfLive(text, this.hooks, sessionId, () => super.destroy(sessionId)));
  }

  override get(sessionId: string, callback?: StoreCallback): Promise<unknown> {
    const loaded = this.loadLive(sessionId).then((found) => found?.data ?? null);
    if (!callback) return loaded;
    return loaded.then(
      (data) => callback(null, data),
      (error: unknown) => callback(error),
    );
  }

  override async set(sessionId: string, data: SessionData, callback?: StoreCallback): Promise<unknown> {
    let failure: unknown;
    try {
      const ttlMs = Math.ceil(storeTtlMillis(data.meta, Date.now(), this.hooks.limits));
      const text = JSON.stringify(data);
      if (ttlMs <= 0) {
        await super.destroy(sessionId);
      } else if (mayCreateKey(data)) {
        await this.redis.set(this.prefix + sessionId, text, 'PX', ttlMs);
        rememberSavedText(data, text);
      } else if ((await this.redis.set(this.prefix + sessionId, text, 'PX', ttlMs, 'XX')) === 'OK') {
        rememberSavedText(data, text);
      }
    } catch (error) {
      failure = error;
    }
    return finish(callback, failure);
  }
}

/**
 * The same rules over any kit {@link KeyValueStore} (in practice the `MemoryStore`, for a single-process demo),
 * shaped like express-session's own MemoryStore.
 *
 * @example
 * const sessionStore = new KeyValueSessionStore(new MemoryStore(), 'sess:', hooks);
 */
export class KeyValueSessionStore extends session.Store implements EngineStore {
  private readonly store: KeyValueStore;
  private readonly keyPrefix: string;
  private readonly hooks: SessionStoreHooks;

  constructor(store: KeyValueStore, keyPrefix: string, hooks: SessionStoreHooks) {
    super();
    this.store = store;
    this.keyPrefix = keyPrefix;
    this.hooks = hooks;
  }

  async loadLive(sessionId: string): Promise<LoadedSession | null> {
    const key = this.keyPrefix + sessionId;
    return keepIfLive(await this.store.get(key), this.hooks, sessionId, () => this.store.delete(key));
  }

  override get(sessionId: string, callback: (err: unknown, data?: SessionData | null) => void): void {
    void this.loadLive(sessionId).then(
      (found) => callback(null, found?.data ?? null),
      (error: unknown) => callback(error),
    );
  }

  override set(sessionId: string, data: SessionData, callback?: (err?: unknown) => void): void {
    void this.writeLive(sessionId, data).then(
      () => callback?.(),
      (error: unknown) => callback?.(error),
    );
  }

  private async writeLive(sessionId: string, data: SessionData): Promise<void> {
    const key = this.keyPrefix + sessionId;
    const ttlMs = storeTtlMillis(data.meta, Date.now(), this.hooks.limits);
    if (ttlMs <= 0) {
      await this.store.delete(key);
      return;
    }
    // SET XX by hand: check, then write. Not atomic like Redis's, but this store lives in one process, where
    // only another request of the same process could revoke the session between the two steps.
    if (!mayCreateKey(data) && (await this.store.get(key)) === null) return;
    const text = JSON.stringify(data);
    await this.store.set(key, text, ttlMs / 1000);
    rememberSavedText(data, text);
  }

  override destroy(sessionId: string, callback?: (err?: unknown) => void): void {
    void this.store.delete(this.keyPrefix + sessionId).then(
      () => callback?.(),
      (error: unknown) => callback?.(error),
    );
  }
}
