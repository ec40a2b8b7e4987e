import { EventEmitter } from 'node:events';
import { checkOptions } from '../util/options';
import { StoreWrongTypeError, type KeyValueStore } from './port';

interface Entry {
  value: string | Set<string>;
  expiresAt: number | null;
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** How often expired keys are swept, in seconds (fractions allowed). Reads also drop expired keys. Default 30. */
  sweepIntervalSeconds?: number;
}

/**
 * The storage port in process memory, for a single process without Redis (the demo, small tools).
 * State is lost on restart and not shared between processes: never use it behind a load balancer.
 *
 * @example
 * const store = new MemoryStore();
 * await store.set('greeting', 'hello', 60);
 */
export class MemoryStore implements KeyValueStore {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Entry>();
  private readonly channels = new EventEmitter();
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: MemoryStoreOptions = {}) {
    checkOptions('MemoryStore', options, {
      sweepIntervalSeconds: {
        type: 'number',
        expected: 'a number of seconds, e.g. 30',
        check: (seconds: number) => (seconds >= 0.001 && seconds <= 86_400 ? undefined : `must be from 0.001 to 86400, got ${seconds}`),
      },
    });
    const intervalMillis = Math.max(1, Math.round((options.sweepIntervalSeconds ?? 30) * 1000));
    this.channels.setMaxListeners(0);
    this.sweeper = setInterval(() => this.sweep(), intervalMillis);
    this.sweeper.unref();
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt !== null && entry.expiresAt <= now) this.entries.delete(key);
    }
  }

  private static expiry(ttlSeconds: number | undefined): number | null {
    return ttlSeconds === undefined ? null : Date.now() + ttlSeconds * 1000;
  }

  private stringAt(key: string): string | null {
    const entry = this.live(key);
    if (!entry) return null;
    if (typeof entry.value !== 'string') throw new StoreWrongTypeError('a string');
    return entry.value;
  }

  async get(key: string): Promise<string | null> {
    return this.stringAt(key);
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    this.entries.set(key, { value, expiresAt: MemoryStore.expiry(ttlSeconds) });
  }

  async setIfAbsent(key: string, value: string, ttlSeconds?: number): Promise<boolean> {
    if (this.live(key)) return false;
    this.entries.set(key, { value, expiresAt: MemoryStore.expiry(ttlSeconds) });
    return true;
  }

  async take(key: string): Promise<string | null> {
    const value = this.stringAt(key);
    if (value !== null) this.entries.delete(key);
    return value;
  }

  async compareAndSet(key: string, expected: string, next: string, ttlSeconds?: number): Promise<boolean> {
    const entry = this.live(key);
    if (!entry || entry.value !== expected) return false;
    entry.value = next;
    if (ttlSeconds !== undefined) entry.expiresAt = MemoryStore.expiry(ttlSeconds);
    return true;
  }

  async compareAndSetThenPublish(key: string, expected: string, next: string, channel: string, message: string): Promise<boolean> {
    const swapped = await this.compareAndSet(key, expected, next);
    if (swapped) await this.publish(channel, message);
    return swapped;
  }

  async delete(...keys: string[]): Promise<number> {
    let removed = 0;
    for (const key of keys) {
      if (this.live(key) && this.entries.delete(key)) removed += 1;
    }
    return removed;
  }

  async expire(key: string, ttlSeconds: number): Promise<boolean> {
    const entry = this.live(key);
    if (!entry) return false;
    entry.expiresAt = MemoryStore.expiry(ttlSeconds);
    return true;
  }

  async ttlMillis(key: string): Promise<number> {
    const entry = this.live(key);
    if (!entry) return -2;
    if (entry.expiresAt === null) return -1;
    return Math.max(0, entry.expiresAt - Date.now());
  }

  async increment(key: string, windowSeconds: number): Promise<number> {
    const entry = this.live(key);
    if (!entry) {
      this.entries.set(key, { value: '1', expiresAt: MemoryStore.expiry(windowSeconds) });
      return 1;
    }
    if (typeof entry.value !== 'string') throw new StoreWrongTypeError('a counter');
    const next = Number(entry.value) + 1;
    entry.value = String(next);
    return next;
  }

  async addToSet(key: string, members: readonly string[], ttlSeconds?: number): Promise<void> {
    let entry = this.live(key);
    if (!entry) {
      entry = { value: new Set<string>(), expiresAt: null };
      this.entries.set(key, entry);
    }
    if (typeof entry.value === 'string') throw new StoreWrongTypeError('a set');
    for (const member of members) entry.value.add(member);
    if (ttlSeconds !== undefined) entry.expiresAt = MemoryStore.expiry(ttlSeconds);
  }

  async removeFromSet(key: string, members: readonly string[]): Promise<void> {
    const entry = this.live(key);
    if (!entry || typeof entry.value === 'string') return;
    for (const member of members) entry.value.delete(member);
    if (entry.value.size === 0) this.entries.delete(key);
  }

  async members(key: string): Promise<string[]> {
    const entry = this.live(key);
    if (!entry || typeof entry.value === 'string') return [];
    return [...entry.value];
  }

  async publish(channel: string, message: string): Promise<void> {
    // Delivered on a later tick, as Redis would, so a publisher never runs subscribers inside its own call.
    setImmediate(() => this.channels.emit(channel, message));
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
    this.channels.on(channel, listener);
    return async () => {
      this.channels.off(channel, listener);
    };
  }

  /** Nothing to wait for: one process holds the only copy. */
  async confirmWrites(_keys: readonly string[]): Promise<void> {
    return undefined;
  }

  async ping(): Promise<void> {
    // Always reachable: it lives in this process.
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.channels.removeAllListeners();
    this.entries.clear();
  }
}
