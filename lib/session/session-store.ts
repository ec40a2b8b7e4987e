import { RedisStore as ConnectRedisStore } from 'connect-redis';
import session, { type SessionData } from 'express-session';
import { BatchedGet } from '../store/batched-get';
import type { KeyValueStore, RedisClient } from '../store';
import type { Request } from 'express';
import type { SessionCache } from './session-cache';
import { freezeDeep, rememberSavedText, savedTextOf, type EngineStore, type LoadedSession } from './session-engine';
import { judgeSession, storeTtlMillis, type SessionLimits } from './session-lifetime';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type StoreCallback = (err?: any, data?: any) => void;

/** What the session stores need from `ssoSession`. */
export interface SessionStoreHooks {
  limits: SessionLimits;
  /** Called (and awaited, errors ignored) after an expired session was deleted, to unindex it. */
  onExpired(sessionId: string, data: SessionData, req?: Request): Promise<void>;
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
  req?: Request,
): LoadedSession | null | Promise<LoadedSession | null> {
  const loaded = text === null ? null : parseLoaded(text);
  return loaded === null ? null : keepLoadedIfLive(loaded, hooks, sessionId, remove, req);
}

/** The lifetime rules on a session already parsed (a cached one is judged again on every request). */
function keepLoadedIfLive(
  loaded: LoadedSession,
  hooks: SessionStoreHooks,
  sessionId: string,
  remove: () => Promise<unknown>,
  req?: Request,
): LoadedSession | null | Promise<LoadedSession | null> {
  if (judgeSession(loaded.data.meta, Date.now(), hooks.limits) !== 'expired') return loaded;
  return remove()
    .then(() => hooks.onExpired(sessionId, loaded.data, req).catch(() => undefined))
    .then(() => null);
}

function parseLoaded(text: string): LoadedSession | null {
  const data = lenientJson.parse(text);
  return data ? { data: freezeDeep(data), text } : null;
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

// Saves of an existing session are a compare-and-set against the text the request loaded; after this many lost
// races the save is dropped (the answer is already decided; the next request reads the stored state).
const SAVE_ATTEMPTS = 4;

type SessionRecord = Record<string, unknown>;

function isRecord(value: unknown): value is SessionRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Top-level three-way merge: fields this request changed take its value, all others keep the stored one. */
function mergeFields(loaded: SessionRecord, mine: SessionRecord, stored: SessionRecord, alwaysMine: string): SessionRecord {
  const merged: SessionRecord = {};
  for (const key of new Set([...Object.keys(mine), ...Object.keys(stored)])) {
    const changedHere = key === alwaysMine || !sameJson(mine[key], loaded[key]);
    const source = changedHere ? mine : stored;
    if (Object.prototype.hasOwnProperty.call(source, key)) merged[key] = source[key];
  }
  return merged;
}

/**
 * Merges what this request changed (compared with the session it loaded) into the session another request stored
 * meanwhile: keys this request changed take its value, all other keys keep the stored value. `meta` is merged
 * field by field the same way, and its `lastSeenAt` takes the later of the two.
 *
 * @example
 * mergeSessionChanges(loaded, mine, stored); // mine changed `cart`, stored has new `oidc` tokens: both kept
 */
export function mergeSessionChanges(loaded: SessionRecord, mine: SessionRecord, stored: SessionRecord): SessionRecord {
  // The cookie is this request's own object, never another request's data.
  const merged = mergeFields(loaded, mine, stored, 'cookie');
  if (isRecord(mine.meta) && isRecord(stored.meta)) {
    const meta = mergeFields(isRecord(loaded.meta) ? loaded.meta : {}, mine.meta, stored.meta, '');
    const mineSeen = mine.meta.lastSeenAt;
    const storedSeen = stored.meta.lastSeenAt;
    if (typeof mineSeen === 'number' && typeof storedSeen === 'number') meta.lastSeenAt = Math.max(mineSeen, storedSeen);
    merged.meta = meta;
  }
  return merged;
}

/** One session key, as {@link saveOverLoaded} reaches it. */
interface SessionKeyAccess {
  read(): Promise<string | null>;
  /** Atomically replaces the value if it is still `expected`; never creates the key. */
  swap(expected: string, next: string, ttlMs: number): Promise<boolean>;
}

/** Makes the session object match what was stored, so a later save in the same request diffs against it. */
function adoptStored(sessionObject: SessionRecord, merged: SessionRecord, text: string): void {
  for (const key of Object.keys(sessionObject)) if (key !== 'cookie' && !(key in merged)) delete sessionObject[key];
  for (const [key, value] of Object.entries(merged)) if (key !== 'cookie') sessionObject[key] = value;
  rememberSavedText(sessionObject, text);
}

/**
 * Saves an existing session without losing what concurrent requests stored: the write happens only while the
 * stored text is still the one this request loaded. Otherwise the stored session is re-read and this request's
 * changes are merged into it ({@link mergeSessionChanges}); a session deleted meanwhile (logged out, revoked)
 * stays deleted.
 */
async function saveOverLoaded(
  data: SessionData,
  loadedText: string,
  text: string,
  limits: SessionLimits,
  access: SessionKeyAccess,
): Promise<void> {
  let expected = loadedText;
  let next = text;
  let nextMeta = data.meta;
  let merged: SessionRecord | undefined;
  for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt += 1) {
    const ttlMs = Math.ceil(storeTtlMillis(nextMeta, Date.now(), limits));
    // A merged session already past its limits is left to expire; it is not written again.
    if (ttlMs <= 0) return;
    if ((merged !== undefined && next === expected) || (await access.swap(expected, next, ttlMs))) {
      if (merged) adoptStored(data as unknown as SessionRecord, merged, next);
      else rememberSavedText(data, next);
      return;
    }
    const storedText = await access.read();
    if (storedText === null) return;
    const stored = lenientJson.parse(storedText) as unknown;
    if (!isRecord(stored)) return;
    const loaded = JSON.parse(loadedText) as SessionRecord;
    merged = mergeSessionChanges(loaded, JSON.parse(text) as SessionRecord, stored);
    expected = storedText;
    next = JSON.stringify(merged);
    nextMeta = merged.meta as SessionData['meta'];
  }
}

// Compare-and-set with a fresh TTL on the one session key (a single key, so it also runs on a Redis Cluster). A key
// that is gone stays gone: GET returns false, which never equals the expected text.
const SESSION_COMPARE_AND_SET = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

interface SessionScriptedClient {
  ssoSessionCompareAndSet(key: string, expected: string, next: string, ttlMillis: string): Promise<number>;
}

// `req.session.reload()` goes through the store's get and createSession: carrying the loaded text over lets the
// reloaded session's next save compare against what it read, like a session the engine loaded.
function dataRememberingText(found: LoadedSession | null): SessionData | null {
  if (found === null) return null;
  // The loaded data is frozen (and may be shared through the cache); express-session gets its own copy.
  const data = JSON.parse(found.text) as SessionData;
  rememberSavedText(data, found.text);
  return data;
}

function keepSavedText<T extends object>(created: T, data: SessionData): T {
  const text = savedTextOf(data);
  if (text !== undefined) rememberSavedText(created, text);
  return created;
}

/**
 * connect-redis with the kit's lifetime rules: a session past its idle or absolute limit reads as absent (and is
 * deleted), the TTL of a save is min(idle, remaining absolute), and saves of an existing login are a compare-and-set
 * against the text the request loaded (merging with concurrent saves) or `SET … XX`, so they never recreate a key.
 * `disableTouch` is on: the idle timer is refreshed by `ssoSession`'s lazy re-save, not by a write per request.
 *
 * @example
 * const sessionStore = new SsoRedisSessionStore(redisStore.client, `${redisStore.prefix}sess:`, hooks);
 */
export class SsoRedisSessionStore extends ConnectRedisStore implements EngineStore {
  private readonly redis: RedisClient;
  private readonly hooks: SessionStoreHooks;
  private readonly reads: BatchedGet;
  private readonly cache: SessionCache<LoadedSession> | undefined;
  /** Reads the session cache answered, and reads it sent to Redis (plain counters, read only by a metrics scrape). */
  cacheHits = 0;
  cacheMisses = 0;

  constructor(redis: RedisClient, keyPrefix: string, hooks: SessionStoreHooks, cache?: SessionCache<LoadedSession>) {
    super({ client: redis, prefix: keyPrefix, disableTouch: true, serializer: lenientJson });
    this.redis = redis;
    this.hooks = hooks;
    this.cache = cache;
    this.reads = new BatchedGet(redis);
    // The idle timer is refreshed by re-saving, never by a separate EXPIRE per request.
    Object.defineProperty(this, 'touch', { value: undefined, enumerable: false });
    if (!('ssoSessionCompareAndSet' in redis))
      redis.defineCommand('ssoSessionCompareAndSet', { numberOfKeys: 1, lua: SESSION_COMPARE_AND_SET });
  }

  loadCached(sessionId: string, then: (loaded: LoadedSession | undefined) => void): boolean {
    const cache = this.cache;
    if (cache === undefined) return false;
    const key = this.prefix + sessionId;
    const cached = cache.lookup(key);
    // An expired one is left to loadLive, which deletes it.
    if (cached === undefined || judgeSession(cached.data.meta, Date.now(), this.hooks.limits) === 'expired') return false;
    cache.afterPendingInvalidations(() => {
      if (!cache.holds(key, cached)) {
        then(undefined);
        return;
      }
      this.cacheHits += 1;
      then(cached);
    });
    return true;
  }

  loadLive(sessionId: string, req?: Request): Promise<LoadedSession | null> {
    const key = this.prefix + sessionId;
    const remove = () => super.destroy(sessionId);
    const cache = this.cache;
    if (cache !== undefined) {
      // A cached session still goes through the lifetime rules: the idle and absolute limits are judged per request.
      // The cache holds sessions parsed and frozen, shared by the requests that read them (see the engine).
      const cached = cache.lookup(key);
      if (cached !== undefined) {
        return new Promise<void>((resolve) => cache.afterPendingInvalidations(resolve)).then(() => {
          if (!cache.holds(key, cached)) return this.loadLive(sessionId, req);
          this.cacheHits += 1;
          return keepLoadedIfLive(cached, this.hooks, sessionId, remove, req);
        });
      }
      this.cacheMisses += 1;
      const ticket = cache.beginRead();
      return this.reads.get(key).then(
        (text) => {
          const loaded = text === null ? null : parseLoaded(text);
          cache.finishRead(key, loaded, ticket);
          return loaded === null ? null : keepLoadedIfLive(loaded, this.hooks, sessionId, remove, req);
        },
        (error: unknown) => {
          cache.finishRead(key, null, ticket);
          throw error;
        },
      );
    }
    // The hot path: one GET (sent with the other reads of this turn) and one JSON.parse in a single promise step.
    return this.reads.get(key).then((text) => keepIfLive(text, this.hooks, sessionId, remove, req));
  }

  override get(sessionId: string, callback?: StoreCallback): Promise<unknown> {
    const loaded = this.loadLive(sessionId).then(dataRememberingText);
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
      } else {
        const loadedText = savedTextOf(data);
        if (loadedText !== undefined) {
          await saveOverLoaded(data, loadedText, text, this.hooks.limits, this.sessionKey(sessionId));
        } else if ((await this.redis.set(this.prefix + sessionId, text, 'PX', ttlMs, 'XX')) === 'OK') {
          rememberSavedText(data, text);
        }
      }
    } catch (error) {
      failure = error;
    }
    // This process reads its own write at once, without waiting for Redis's invalidation message.
    this.cache?.invalidate([this.prefix + sessionId]);
    return finish(callback, failure);
  }

  override createSession(req: Request, data: SessionData): session.Session & SessionData {
    return keepSavedText(super.createSession(req, data), data);
  }

  override async destroy(sessionId: string, callback?: StoreCallback): Promise<unknown> {
    let failure: unknown;
    try {
      await super.destroy(sessionId);
    } catch (error) {
      failure = error;
    } finally {
      // After the delete: a read that raced it is not kept, and this process sees the logout at once.
      this.cache?.invalidate([this.prefix + sessionId]);
    }
    return finish(callback, failure);
  }

  private sessionKey(sessionId: string): SessionKeyAccess {
    const key = this.prefix + sessionId;
    const scripted = this.redis as unknown as SessionScriptedClient;
    return {
      read: () => this.redis.get(key),
      swap: async (expected, next, ttlMs) => (await scripted.ssoSessionCompareAndSet(key, expected, next, String(ttlMs))) === 1,
    };
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

  async loadLive(sessionId: string, req?: Request): Promise<LoadedSession | null> {
    const key = this.keyPrefix + sessionId;
    return keepIfLive(await this.store.get(key), this.hooks, sessionId, () => this.store.delete(key), req);
  }

  override get(sessionId: string, callback: (err: unknown, data?: SessionData | null) => void): void {
    void this.loadLive(sessionId).then(
      (found) => callback(null, dataRememberingText(found)),
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
    const text = JSON.stringify(data);
    const loadedText = savedTextOf(data);
    if (!mayCreateKey(data) && loadedText !== undefined) {
      await saveOverLoaded(data, loadedText, text, this.hooks.limits, {
        read: () => this.store.get(key),
        swap: (expected, next, swapTtlMs) => this.store.compareAndSet(key, expected, next, swapTtlMs / 1000),
      });
      return;
    }
    // SET XX by hand: check, then write. Not atomic like Redis's, but this store lives in one process, where
    // only another request of the same process could revoke the session between the two steps.
    if (!mayCreateKey(data) && (await this.store.get(key)) === null) return;
    await this.store.set(key, text, ttlMs / 1000);
    rememberSavedText(data, text);
  }

  override createSession(req: Request, data: SessionData): session.Session & SessionData {
    return keepSavedText(super.createSession(req, data), data);
  }

  override destroy(sessionId: string, callback?: (err?: unknown) => void): void {
    void this.store.delete(this.keyPrefix + sessionId).then(
      () => callback?.(),
      (error: unknown) => callback?.(error),
    );
  }
}
