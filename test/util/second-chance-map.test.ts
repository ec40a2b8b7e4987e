import fc from 'fast-check';
import { SecondChanceMap } from '../../lib/util/second-chance-map';

describe('SecondChanceMap', () => {
  it('evicts the oldest entry not used since it was last passed over', () => {
    const map = new SecondChanceMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect([map.peek('a'), map.peek('b'), map.peek('c')]).toEqual([1, undefined, 3]);
    // 'a' was passed over once (its mark cleared), 'c' is newer: with no use since, 'a' goes next.
    map.set('d', 4);
    expect([map.peek('a'), map.peek('c'), map.peek('d')]).toEqual([undefined, 3, 4]);
  });

  it('evicts the oldest when every entry was used, after one pass that clears the marks', () => {
    const map = new SecondChanceMap<string, number>(3);
    for (const [key, value] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const)
      map.set(key, value);
    for (const key of ['c', 'b', 'a']) map.get(key);
    map.set('d', 4);
    expect(map.size).toBe(3);
    expect(map.peek('a')).toBeUndefined();
    expect(map.peek('d')).toBe(4);
  });

  it('does not count peek as a use', () => {
    const map = new SecondChanceMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.peek('a');
    map.set('c', 3);
    expect(map.peek('a')).toBeUndefined();
  });

  it('updates an existing key in place, as a use, without evicting', () => {
    const map = new SecondChanceMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 10);
    expect(map.size).toBe(2);
    map.set('c', 3);
    expect([map.peek('a'), map.peek('b'), map.peek('c')]).toEqual([10, undefined, 3]);
  });

  it('never holds more than its capacity, and always holds the key just set', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.constantFrom('get', 'set', 'delete'), fc.integer({ min: 0, max: 15 })), { maxLength: 200 }),
        (capacity, operations) => {
          const map = new SecondChanceMap<number, number>(capacity);
          for (const [operation, key] of operations) {
            if (operation === 'set') {
              map.set(key, key * 2);
              expect(map.peek(key)).toBe(key * 2);
            } else if (operation === 'get') {
              const value = map.get(key);
              if (value !== undefined) expect(value).toBe(key * 2);
            } else {
              map.delete(key);
              expect(map.peek(key)).toBeUndefined();
            }
            expect(map.size).toBeLessThanOrEqual(capacity);
          }
        },
      ),
    );
  });
});
