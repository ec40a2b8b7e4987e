const SLOTS = 16384;

/**
 * The Redis Cluster hash slot of a key or channel: CRC16 (XMODEM) of its first non-empty `{…}` hash tag, or of the
 * whole name, modulo 16384.
 *
 * @example
 * hashSlot('qr:{abc}:events') === hashSlot('qr:{abc}:state'); // true
 */
export function hashSlot(key: string): number {
  const open = key.indexOf('{');
  let hashed = key;
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) hashed = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}
