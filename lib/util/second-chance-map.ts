interface Slot<V> {
  value: V;
  used: boolean;
}

/**
 * A map of at most `capacity` entries that evicts by second chance (CLOCK, the usual approximation of least recently
 * used): a hit only marks its entry used. When a new key needs room, the oldest entry goes unless it was used since
 * it was last passed over; then it moves to the back once, unmarked, and the next oldest is looked at. A true LRU
 * moves the entry (a Map delete and insert) on every hit; here a hit costs one lookup and one flag write, which is
 * what the per-request caches (verified tokens, sessions) need on their hot path.
 *
 * @example
 * const cache = new SecondChanceMap<string, number>(2);
 * cache.set('a', 1);
 * cache.set('b', 2);
 * cache.get('a');
 * cache.set('c', 3); // evicts 'b', the oldest entry not used since
 */
export class SecondChanceMap<K, V> {
  private readonly slots = new Map<K, Slot<V>>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.slots.size;
  }

  /** The value at `key`, marking it used. */
  get(key: K): V | undefined {
    const slot = this.slots.get(key);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot.value;
  }

  /** The value at `key`, without marking it used. */
  peek(key: K): V | undefined {
    return this.slots.get(key)?.value;
  }

  /** Sets `key` (a new key goes to the back, evicting first when full; an existing one keeps its place, used). */
  set(key: K, value: V): void {
    const slot = this.slots.get(key);
    if (slot !== undefined) {
      slot.value = value;
      slot.used = true;
      return;
    }
    if (this.slots.size >= this.capacity) this.evictOne();
    this.slots.set(key, { value, used: false });
  }

  delete(key: K): boolean {
    return this.slots.delete(key);
  }

  clear(): void {
    this.slots.clear();
  }

  private evictOne(): void {
    // A Map iterates in insertion order and visits entries re-inserted during the loop, so after one pass every
    // mark is cleared and the loop ends at the latest there.
    for (const [key, slot] of this.slots) {
      this.slots.delete(key);
      if (!slot.used) return;
      slot.used = false;
      this.slots.set(key, slot);
    }
  }
}
