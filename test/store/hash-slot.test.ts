import { hashSlot } from '../../lib/store';

describe('hashSlot', () => {
  it.each([
    ['foo', 12182],
    ['bar', 5061],
    ['hello', 866],
    ['123456789', 0x31c3 % 16384],
  ])('computes the Redis Cluster slot of %p as CLUSTER KEYSLOT does', (key, slot) => {
    expect(hashSlot(key)).toBe(slot);
  });

  it('hashes only the first non-empty hash tag', () => {
    expect(hashSlot('qr:{abc}:events')).toBe(hashSlot('abc'));
    expect(hashSlot('sso:qr:{abc}:state')).toBe(hashSlot('qr:{abc}:events'));
    expect(hashSlot('a{}{b}')).not.toBe(hashSlot('b'));
  });
});
