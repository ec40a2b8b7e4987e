import crypto from 'node:crypto';
import { randomToken } from '../../lib/util/random-token';

describe('randomToken', () => {
  it('gives base64url tokens of the asked size, pooled or not', () => {
    for (const bytes of [16, 24, 32, 64, 65, 200]) {
      const token = randomToken(bytes);
      expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(Buffer.from(token, 'base64url')).toHaveLength(bytes);
    }
    expect(Buffer.from(randomToken(), 'base64url')).toHaveLength(24);
  });

  it('never hands out the same bytes twice, across many refills of its pool', () => {
    // 3,000 tokens of 24 bytes draw about 70 KiB: the 4 KiB pool is refilled 17 times.
    const tokens = Array.from({ length: 3000 }, () => randomToken(24));
    expect(new Set(tokens).size).toBe(tokens.length);
    // No token made of a refill's leftovers (zeroed bytes read again).
    expect(tokens.filter((token) => Buffer.from(token, 'base64url').every((byte) => byte === 0))).toEqual([]);
  });

  it('keeps no copy of a token it has handed out: its bytes are zeroed in the pool', () => {
    const fill = jest.spyOn(crypto, 'randomFillSync');
    try {
      // Drain the pool until it is refilled, to learn which buffer it is.
      let pool: Buffer | undefined;
      for (let i = 0; i < 200 && pool === undefined; i += 1) {
        randomToken(32);
        pool = fill.mock.calls[0]?.[0] as Buffer | undefined;
      }
      expect(pool).toBeInstanceOf(Buffer);
      const buffer = pool as Buffer;
      const handedOut = [randomToken(32), randomToken(16)];
      for (const token of handedOut) expect(buffer.includes(Buffer.from(token, 'base64url'))).toBe(false);
      // What is not yet handed out is still random.
      expect(buffer.subarray(buffer.length - 64).some((byte) => byte !== 0)).toBe(true);
    } finally {
      fill.mockRestore();
    }
  });
});
