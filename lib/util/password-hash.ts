import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { checkOptions, OptionsError, type OptionSchema } from './options';

/** Cost parameters of a scrypt password hash. */
export interface ScryptParameters {
  /** CPU/memory cost, a power of two. Default 32768 (2^15). */
  N: number;
  /** Block size. Default 8. */
  r: number;
  /** Parallelism. Default 1. */
  p: number;
}

/**
 * The parameters {@link hashPassword} uses unless told otherwise: N=2^15, r=8, p=1, about 32 MiB and ~90 ms per hash
 * on a small server core. That is slow enough to make offline guessing expensive and fast enough that the login
 * throttle, not the CPU, is what limits online guessing.
 */
export const DEFAULT_SCRYPT_PARAMETERS: Readonly<ScryptParameters> = Object.freeze({ N: 32768, r: 8, p: 1 });

const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
// Bounds keep a tampered or careless record from turning one login into a memory or CPU exhaustion.
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;
const SCRYPT_PARAMETER_SCHEMA: OptionSchema = { N: { type: 'integer' }, r: { type: 'integer' }, p: { type: 'integer' } };

/** A parsed `scrypt$N$r$p$salt$hash` string. */
export interface ParsedPasswordHash extends ScryptParameters {
  salt: Buffer;
  hash: Buffer;
}

function scrypt(password: string, salt: Buffer, keyLength: number, params: ScryptParameters): Promise<Buffer> {
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scryptCallback(password.normalize('NFC'), salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

function validateParameters(params: ScryptParameters, where: string): void {
  const { N, r, p } = params;
  if (!Number.isInteger(N) || N < 2 || N > MAX_N || (N & (N - 1)) !== 0) {
    throw new OptionsError(`${where}: N must be a power of two between 2 and ${MAX_N}, got ${String(N)}`);
  }
  if (!Number.isInteger(r) || r < 1 || r > MAX_R)
    throw new OptionsError(`${where}: r must be an integer between 1 and ${MAX_R}, got ${String(r)}`);
  if (!Number.isInteger(p) || p < 1 || p > MAX_P)
    throw new OptionsError(`${where}: p must be an integer between 1 and ${MAX_P}, got ${String(p)}`);
}

/**
 * Parses a `scrypt$N$r$p$salt$hash` string (salt and hash in base64url). Throws a `TypeError` naming the problem,
 * so a bad user record is caught when the directory is built rather than at someone's login.
 *
 * @example
 * const { N, r, p } = parsePasswordHash(record.passwordHash);
 */
export function parsePasswordHash(encoded: string): ParsedPasswordHash {
  if (typeof encoded !== 'string') throw new OptionsError('parsePasswordHash: the hash must be a string "scrypt$N$r$p$salt$hash"');
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    throw new OptionsError('parsePasswordHash: expected "scrypt$N$r$p$salt$hash" (make one with hashPassword())');
  }
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  validateParameters(params, 'parsePasswordHash');
  const base64url = /^[A-Za-z0-9_-]+$/;
  if (!base64url.test(salt) || !base64url.test(hash)) throw new OptionsError('parsePasswordHash: salt and hash must be base64url');
  const parsed = { ...params, salt: Buffer.from(salt, 'base64url'), hash: Buffer.from(hash, 'base64url') };
  if (parsed.salt.length < 8) throw new OptionsError('parsePasswordHash: the salt must be at least 8 bytes');
  if (parsed.hash.length < 16 || parsed.hash.length > 64) throw new OptionsError('parsePasswordHash: the hash must be 16 to 64 bytes');
  return parsed;
}

/**
 * Hashes a password with scrypt and a fresh random salt, giving `scrypt$N$r$p$salt$hash`.
 *
 * @example
 * const passwordHash = await hashPassword('correct horse battery staple');
 */
export async function hashPassword(plain: string, params: Partial<ScryptParameters> = {}): Promise<string> {
  if (typeof plain !== 'string' || plain.length === 0) throw new OptionsError('hashPassword: the password must be a non-empty string');
  // A misspelled parameter (`n` for `N`) would otherwise hash with the default silently.
  checkOptions('hashPassword', params as unknown, SCRYPT_PARAMETER_SCHEMA);
  const full: ScryptParameters = { ...DEFAULT_SCRYPT_PARAMETERS, ...params };
  validateParameters(full, 'hashPassword');
  const salt = randomBytes(SALT_LENGTH);
  const hash = await scrypt(plain, salt, KEY_LENGTH, full);
  return `scrypt$${full.N}$${full.r}$${full.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/**
 * Checks a password against a parsed hash in constant time (the derived key and the stored key have equal length
 * by construction, and `timingSafeEqual` compares every byte).
 *
 * @example
 * const ok = await verifyPasswordHash('alice-password', parsePasswordHash(record.passwordHash));
 */
export async function verifyPasswordHash(plain: string, stored: ParsedPasswordHash | string): Promise<boolean> {
  const parsed = typeof stored === 'string' ? parsePasswordHash(stored) : stored;
  const derived = await scrypt(typeof plain === 'string' ? plain : '', parsed.salt, parsed.hash.length, parsed);
  return timingSafeEqual(derived, parsed.hash);
}
