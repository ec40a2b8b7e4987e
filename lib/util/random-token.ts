import { randomBytes, randomFillSync } from 'node:crypto';

// Bytes drawn from the operating system's CSPRNG a block at a time, as Node's own randomUUID does: one call into
// OpenSSL per 4 KiB instead of one per token (each randomBytes call also builds a job object and a Buffer; about
// ten times the cost of slicing a pooled block, see bench/qr-profile.md).
const POOL_BYTES = 4096;
// Larger requests are rare (keys, salts) and go straight to randomBytes.
const LARGEST_POOLED = 64;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

/**
 * A random token of `bytes` bytes (default 24: 192 bits), base64url. Every byte is handed out once: the pool is
 * refilled before any byte is used again, and a token's bytes are zeroed in the pool once read, so the process
 * keeps no copy of a token it has handed out.
 *
 * @example
 * const authCode = randomToken(24);
 */
export function randomToken(bytes = 24): string {
  if (bytes > LARGEST_POOLED) return randomBytes(bytes).toString('base64url');
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + bytes);
  pool.fill(0, offset, offset + bytes);
  offset += bytes;
  return token;
}
