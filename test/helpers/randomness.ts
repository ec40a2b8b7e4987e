/**
 * Checks that `tokens` (base64url) look like independent draws of a cryptographically secure generator:
 *
 * - each is canonical base64url and decodes to at least `minBits` bits;
 * - no two are equal;
 * - every bit position is set in about half of the tokens, and so is every bit of the XOR of two consecutive tokens.
 *
 * A counter, a timestamp, a constant prefix, a short or reused value, or a generator with stuck bits fails. The bound
 * is six standard deviations of a fair coin, so a true random source fails a position with a chance of about 2e-9.
 * Statistics cannot tell a CSPRNG from a good non-cryptographic generator (Math.random); which generator the code
 * calls is a matter of reading it, and the tests name it.
 *
 * @example
 * expectRandomTokens(sessionIds, 128);
 */
export function expectRandomTokens(tokens: readonly string[], minBits: number): void {
  expect(tokens.length).toBeGreaterThanOrEqual(64);
  const decoded = tokens.map((token) => Buffer.from(token, 'base64url'));
  decoded.forEach((bytes, index) => {
    expect(bytes.toString('base64url')).toBe(tokens[index]);
    expect(bytes.length * 8).toBeGreaterThanOrEqual(minBits);
  });
  expect(new Set(tokens).size).toBe(tokens.length);
  const length = Math.min(...decoded.map((bytes) => bytes.length));
  expectBalancedBits(decoded, length, 'bit');
  const steps = decoded.slice(1).map((bytes, index) => xor(bytes, decoded[index] as Buffer, length));
  expectBalancedBits(steps, length, 'change of bit');
}

function xor(a: Buffer, b: Buffer, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i += 1) out[i] = (a[i] as number) ^ (b[i] as number);
  return out;
}

function expectBalancedBits(samples: readonly Buffer[], length: number, what: string): void {
  const n = samples.length;
  const tolerance = 6 * (Math.sqrt(n) / 2);
  const unbalanced: string[] = [];
  for (let bit = 0; bit < length * 8; bit += 1) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    let ones = 0;
    for (const sample of samples) if (((sample[byte] as number) & mask) !== 0) ones += 1;
    if (Math.abs(ones - n / 2) > tolerance) unbalanced.push(`${what} ${bit}: set in ${ones} of ${n}`);
  }
  expect(unbalanced).toEqual([]);
}
