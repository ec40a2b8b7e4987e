/**
 * The small storage port the kit's own state goes through (QR login requests, refresh tokens, OIDC transactions,
 * session indexes, throttling counters). Two implementations exist: {@link RedisStore} for real deployments and
 * {@link MemoryStore} for a single process without Redis. Both pass the same contract tests.
 *
 * Keys are given without the store's prefix; the store adds it. Keys that an atomic operation touches together
 * must share a Redis Cluster hash tag, e.g. `qr:{abc}:state` and `qr:{abc}:code`.
 */
export interface KeyValueStore {
  /** Human-readable kind, `redis` or `memory`, for banners and health output. */
  readonly kind: 'redis' | 'memory';

  get(key: string): Promise<string | null>;
  /** Sets a value; with `ttlSeconds` the key expires after that many seconds. */
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  /** Sets only when the key does not exist (SET NX). Returns true when this call created it. */
  setIfAbsent(key: string, value: string, ttlSeconds?: number): Promise<boolean>;
  /** Reads and deletes in one atomic step (GETDEL): of several concurrent callers, exactly one gets the value. */
  take(key: string): Promise<string | null>;
  /**
   * Replaces the value only when it currently equals `expected` (atomic compare-and-set).
   * With `ttlSeconds` the new value gets that expiry; without it the current expiry is kept.
   * Returns true when the swap happened.
   */
  compareAndSet(key: string, expected: string, next: string, ttlSeconds?: number): Promise<boolean>;
  /**
   * {@link KeyValueStore.compareAndSet} (the current expiry kept) that, when the swap happens, also publishes `message`
   * on `channel` in the same atomic step: a subscriber hears of every swap that happened and of none that did not,
   * in the order of the swaps. Optional: where a store lacks it, callers swap, then publish.
   */
  compareAndSetThenPublish?(key: string, expected: string, next: string, channel: string, message: string): Promise<boolean>;
  /** Deletes keys; returns how many existed. */
  delete(...keys: string[]): Promise<number>;
  /** Sets a key's expiry; returns false when the key does not exist. */
  expire(key: string, ttlSeconds: number): Promise<boolean>;
  /** Remaining lifetime in milliseconds; -1 without expiry, -2 when the key does not exist. */
  ttlMillis(key: string): Promise<number>;
  /** Increments a counter; the first increment of a window sets its expiry (fixed window). Returns the new value. */
  increment(key: string, windowSeconds: number): Promise<number>;

  /** Adds members to a set; with `ttlSeconds` the set's expiry is (re)set. */
  addToSet(key: string, members: readonly string[], ttlSeconds?: number): Promise<void>;
  removeFromSet(key: string, members: readonly string[]): Promise<void>;
  members(key: string): Promise<string[]>;

  publish(channel: string, message: string): Promise<void>;
  /** Subscribes to a channel; resolves once the subscription is active, to a function that ends it. */
  subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>>;

  /**
   * Called after a write the caller is about to acknowledge (a login, a logout, a QR confirmation, a refresh-token
   * rotation), with the keys it wrote. On a `RedisStore` with `waitForReplicas` it waits until that many replicas
   * hold every earlier write of the connection (Redis `WAIT`) and rejects with {@link StoreUnavailableError} when
   * fewer acknowledge in time, so an acknowledged write survives a failover. Otherwise it resolves at once.
   */
  confirmWrites(keys: readonly string[]): Promise<void>;

  /** Resolves when the store answers; rejects with {@link StoreUnavailableError} otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A store operation failed because the backing service did not answer. The kit maps it to 503. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'store_unavailable';
  constructor(message = 'the session store is unavailable', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A store operation met a key holding another kind of value (a set read as a string): a bug in the caller, not an
 * outage, so it is not a 503. Both stores throw it, RedisStore for Redis's `WRONGTYPE` reply.
 *
 * @example
 * await store.addToSet('members:{x}', ['a']);
 * await store.get('members:{x}'); // rejects with StoreWrongTypeError, code 'store_wrong_type'
 */
export class StoreWrongTypeError extends TypeError {
  override readonly name = 'StoreWrongTypeError';
  readonly code = 'store_wrong_type';
  constructor(expected?: 'a string' | 'a set' | 'a counter', options?: { cause?: unknown }) {
    // The key is not named: keys can embed session ids and other handles.
    super(`the key holds another kind of value than ${expected ?? 'the operation expects'}`, options);
  }
}
