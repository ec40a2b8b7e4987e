import type { ClientRateLimitInfo, Options as RateLimitOptions, Store } from 'express-rate-limit';
import type { KeyValueStore } from '../store/port';
import { checkOptions } from '../util/options';

/** Options of {@link KeyValueRateLimitStore}. */
export interface KeyValueRateLimitStoreOptions {
  /** The kit's storage port; counters live there so every instance behind a load balancer counts together. */
  store: KeyValueStore;
  /**
   * Prefix of the counter keys inside the store, distinct per limiter so two limiters never share a counter.
   * Must not contain `{` or `}` (the key is wrapped in a hash tag). Default `rl:`.
   */
  prefix?: string;
}

/**
 * An express-rate-limit `Store` over the kit's {@link KeyValueStore} (`increment` with a fixed window), so limits
 * hold across processes and a Redis outage fails closed (the limiter passes the error on unless
 * `passOnStoreError` is set, and the kit's `errorHandler` answers 503).
 *
 * @example
 * app.use(rateLimit({ windowMs: 60_000, limit: 30, store: new KeyValueRateLimitStore({ store, prefix: 'rl:login:' }) }));
 */
export class KeyValueRateLimitStore implements Store {
  readonly prefix: string;
  readonly localKeys = false;
  private readonly store: KeyValueStore;
  private windowSeconds = 60;

  constructor(options: KeyValueRateLimitStoreOptions) {
    checkOptions('KeyValueRateLimitStore', options, {
      store: {
        type: 'object',
        required: true,
        expected: 'a KeyValueStore, e.g. new KeyValueRateLimitStore({ store: new RedisStore(url) })',
        check: (store: { increment?: unknown }) =>
          typeof store.increment === 'function' ? undefined : 'must be a KeyValueStore, e.g. new RedisStore(url)',
      },
      prefix: {
        type: 'string',
        check: (prefix: string) => (/[{}]/.test(prefix) ? `must not contain "{" or "}", got ${JSON.stringify(prefix)}` : undefined),
      },
    });
    this.store = options.store;
    this.prefix = options.prefix ?? 'rl:';
  }

  /** Called once by express-rate-limit with its options; the window length becomes the counters' expiry. */
  init(options: RateLimitOptions): void {
    this.windowSeconds = Math.max(1, Math.ceil(options.windowMs / 1000));
  }

  // The client key can be anything (an IPv6 subnet, an appid); the hash tag keeps the counter on one Cluster slot.
  private key(clientKey: string): string {
    return `${this.prefix}{${clientKey.replace(/[{}]/g, '_')}}`;
  }

  private async info(key: string, totalHits: number): Promise<ClientRateLimitInfo> {
    const ttl = await this.store.ttlMillis(key);
    return { totalHits, resetTime: new Date(Date.now() + (ttl > 0 ? ttl : this.windowSeconds * 1000)) };
  }

  async increment(clientKey: string): Promise<ClientRateLimitInfo> {
    const key = this.key(clientKey);
    const totalHits = await this.store.increment(key, this.windowSeconds);
    return this.info(key, totalHits);
  }

  async get(clientKey: string): Promise<ClientRateLimitInfo | undefined> {
    const key = this.key(clientKey);
    const value = await this.store.get(key);
    if (value === null) return undefined;
    return this.info(key, Number(value));
  }

  async decrement(clientKey: string): Promise<void> {
    const key = this.key(clientKey);
    // The port has no DECR; a few compare-and-set attempts are enough, and a lost decrement only errs on the strict side.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const current = await this.store.get(key);
      if (current === null || Number(current) <= 0) return;
      if (await this.store.compareAndSet(key, current, String(Number(current) - 1))) return;
    }
  }

  async resetKey(clientKey: string): Promise<void> {
    await this.store.delete(this.key(clientKey));
  }
}
