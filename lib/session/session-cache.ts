import type { Cluster } from 'ioredis';
import type Redis from 'ioredis';
import { isCluster, type RedisClient } from '../store/redis-connection';
import { debugChannel } from '../util/debug';
import { checkOptions, within, type OptionSchema } from '../util/options';
import { SecondChanceMap } from '../util/second-chance-map';
import { SessionInvalidationTracker, type TrackerEvents } from './session-cache-tracker';

/** Options of the opt-in session cache: `ssoSession({ cache: { maxEntries, maxAgeSeconds } })`. */
export interface SsoSessionCacheOptions {
  /** Most sessions kept per process; when full, the oldest not used since it was last passed over goes first. Default 10000. */
  maxEntries?: number;
  /** A cached session is read from Redis again after this many seconds, whatever happened. Default 60. */
  maxAgeSeconds?: number;
}

/** What `ssoSession(...).cache` tells about the session cache of this process. */
export interface SsoSessionCacheStatus {
  /** True while every invalidation connection is tracking: only then are sessions served from the cache. */
  readonly ready: boolean;
  /** How many sessions are cached now. */
  readonly size: number;
}

const debug = debugChannel('session');

/**
 * The name the invalidation connections carry in `CLIENT LIST`, so an operator can tell them apart; they resubscribe
 * only after tracking is on again.
 */
export const SESSION_CACHE_CONNECTION_NAME = 'sso-session-cache';
// Longer than a healthy PING, shorter than the kit's 2 s command timeout.
const SETTLE_TIMEOUT_MS = 1000;
const TRACKER_CONNECTION = { connectionName: SESSION_CACHE_CONNECTION_NAME, autoResubscribe: false, lazyConnect: false };

const SCHEMA: OptionSchema = {
  maxEntries: { type: 'integer', expected: 'a whole number of sessions from 1 to 10000000', check: within(1, 10_000_000) },
  maxAgeSeconds: { type: 'number', expected: 'a number of seconds from 0.001 to 3600', check: within(0.001, 3600) },
};

/**
 * Checks the `cache` option of `ssoSession` and applies its defaults.
 *
 * @example
 * const { maxEntries, maxAgeSeconds } = resolveSessionCacheOptions({ maxEntries: 50_000 });
 */
export function resolveSessionCacheOptions(options: SsoSessionCacheOptions): Required<SsoSessionCacheOptions> {
  checkOptions('ssoSession: cache', options, SCHEMA);
  return { maxEntries: options.maxEntries ?? 10_000, maxAgeSeconds: options.maxAgeSeconds ?? 60 };
}

interface Entry<T> {
  value: T;
  storedAt: number;
}

/**
 * A per-process cache of stored sessions (as loaded, by full Redis key) kept coherent by Redis
 * server-assisted client-side caching: `CLIENT TRACKING ON BCAST PREFIX <session prefix> REDIRECT <own id>` on a
 * dedicated connection (one per master on a Cluster) that subscribes to `__redis__:invalidate`. Any write or
 * delete of a session key, by any process (a revocation, a logout, logout everywhere, an expiry), evicts it here
 * within the time Redis takes to push the message.
 *
 * It fails closed: until every invalidation connection is set up, and from the moment one of them drops until it
 * is set up again, the cache is empty and every read goes to Redis. A read that an invalidation overtook (the
 * message arrived while the read was in flight) is not cached, so a reply read before a revocation can never be
 * kept after it.
 *
 * @example
 * const cache = new SessionCache(redisStore.client, 'sso:sess:', { maxEntries: 10_000, maxAgeSeconds: 60 });
 * const loaded = cache.lookup('sso:sess:abc'); // undefined: not cached (or the cache is bypassed)
 */
export class SessionCache<T = unknown> implements TrackerEvents, SsoSessionCacheStatus {
  private readonly entries: SecondChanceMap<string, Entry<T>>;
  private readonly maxEntries: number;
  private readonly maxAgeMs: number;
  private readonly trackers = new Map<string, SessionInvalidationTracker>();
  /** Counts invalidations and state changes; a read remembers the value when it started. */
  private sequence = 0;
  /** Reads that started before this value are never cached (set on every flush). */
  private floor = 0;
  /** The sequence number of each key's latest invalidation, kept only while reads are in flight. */
  private readonly invalidatedAt = new Map<string, number>();
  private inFlight = 0;
  private closed = false;
  private readonly onTopologyChange = () => this.syncClusterTrackers();
  /** Hits waiting for the invalidations already received to be applied (see afterPendingInvalidations). */
  private waiting: Array<() => void> = [];
  private readonly runWaiting = (): void => {
    const waiting = this.waiting;
    this.waiting = [];
    for (const then of waiting) then();
  };

  constructor(
    private readonly client: RedisClient,
    private readonly keyPrefix: string,
    options: Required<SsoSessionCacheOptions>,
  ) {
    this.maxEntries = options.maxEntries;
    this.entries = new SecondChanceMap(options.maxEntries);
    this.maxAgeMs = options.maxAgeSeconds * 1000;
    if (isCluster(client)) {
      client.on('+node', this.onTopologyChange);
      client.on('-node', this.onTopologyChange);
      client.on('ready', this.onTopologyChange);
      this.syncClusterTrackers();
    } else {
      this.addTracker('standalone', client.duplicate(TRACKER_CONNECTION));
    }
  }

  /** True while every invalidation connection is subscribed and tracking: only then is anything served from the cache. */
  get ready(): boolean {
    if (this.closed || this.trackers.size === 0) return false;
    for (const tracker of this.trackers.values()) if (!tracker.ready) return false;
    return true;
  }

  /** How many sessions are cached now. */
  get size(): number {
    return this.entries.size;
  }

  /** What is cached for `key`, or undefined (not cached, too old, or the cache is bypassed). */
  lookup(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (!this.ready || Date.now() - entry.storedAt > this.maxAgeMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /**
   * Runs `then` once the invalidation messages that had reached this process when it was called are applied: after
   * the event loop's next poll for I/O, in one `setImmediate` for every caller of the same turn. A hit is only
   * answered then. Decided at once, it could serve a session that another process ended a moment ago, its
   * invalidation already waiting unread on the tracking connection while this request was read first.
   */
  afterPendingInvalidations(then: () => void): void {
    this.waiting.push(then);
    if (this.waiting.length === 1) setImmediate(this.runWaiting);
  }

  /** True when `value` is still what is cached for `key` (a lookup that does not count as a use). */
  holds(key: string, value: T): boolean {
    return this.entries.peek(key)?.value === value && this.ready;
  }

  /** Marks the start of a read of `key` from Redis; pass the ticket to {@link finishRead}. */
  beginRead(): number {
    this.inFlight += 1;
    return this.ready ? this.sequence : -1;
  }

  /** Caches what a read returned, unless the cache was bypassed or an invalidation of the key overtook the read. */
  finishRead(key: string, value: T | null, ticket: number): void {
    this.inFlight -= 1;
    const invalidated = this.invalidatedAt.get(key);
    if (this.inFlight === 0) this.invalidatedAt.clear();
    if (value === null || ticket < this.floor || !this.ready || (invalidated !== undefined && invalidated > ticket)) return;
    this.entries.set(key, { value, storedAt: Date.now() });
  }

  /** Evicts keys that Redis reported changed (`null`: everything, as after FLUSHALL). */
  invalidate(keys: readonly string[] | null): void {
    this.sequence += 1;
    if (keys === null) {
      this.flush('Redis reported a flush');
      return;
    }
    for (const key of keys) {
      this.entries.delete(key);
      if (this.inFlight > 0) this.invalidatedAt.set(key, this.sequence);
    }
    // Bounded: past this many, every read in flight is treated as overtaken.
    if (this.invalidatedAt.size > this.maxEntries) {
      this.invalidatedAt.clear();
      this.floor = this.sequence;
    }
  }

  /**
   * Resolves once the invalidations of every write this process finished before the call have been applied here,
   * so the process reads its own revocations and logouts at once. Used after the session manager's deletes.
   */
  async settle(): Promise<void> {
    await Promise.all([...this.trackers.values()].map((tracker) => tracker.settle(SETTLE_TIMEOUT_MS)));
  }

  /** Empties the cache; reads in flight are not cached. */
  flush(why: string): void {
    if (this.entries.size > 0) debug('session cache flushed (%d entries): %s', this.entries.size, why);
    this.entries.clear();
    this.invalidatedAt.clear();
    this.sequence += 1;
    this.floor = this.sequence;
  }

  trackerLost(why: string): void {
    this.flush(`an invalidation connection is down (${why}); reading every session from Redis until it is back`);
  }

  trackerReady(): void {
    // Whatever was read while the connection was down may have missed an invalidation.
    this.flush('an invalidation connection is (re)established');
    if (this.ready) debug('session cache in use: every invalidation connection is tracking %s*', this.keyPrefix);
  }

  private addTracker(name: string, connection: Redis): void {
    this.trackers.set(name, new SessionInvalidationTracker(connection, this.keyPrefix, this));
  }

  /** On a Cluster, one invalidation connection per master: each node reports only the keys it holds. */
  private syncClusterTrackers(): void {
    if (this.closed) return;
    const cluster = this.client as Cluster;
    const masters = new Map(cluster.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]));
    let changed = false;
    for (const [name, tracker] of this.trackers) {
      if (!masters.has(name)) {
        this.trackers.delete(name);
        void tracker.close();
        changed = true;
      }
    }
    for (const [name, node] of masters) {
      if (!this.trackers.has(name)) {
        this.addTracker(name, node.duplicate(TRACKER_CONNECTION));
        changed = true;
      }
    }
    if (changed) this.flush('the Cluster topology changed');
  }

  /** Closes the invalidation connections; the cache stays empty afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    this.flush('closed');
    if (isCluster(this.client)) {
      this.client.off('+node', this.onTopologyChange);
      this.client.off('-node', this.onTopologyChange);
      this.client.off('ready', this.onTopologyChange);
    }
    await Promise.all([...this.trackers.values()].map((tracker) => tracker.close()));
    this.trackers.clear();
  }
}
