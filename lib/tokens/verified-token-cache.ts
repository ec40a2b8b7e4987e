import type { JwtHeader, JwtPayload } from './types';
import type { VerifiedJwt } from './verify-jwt';
import { sha256 } from '../util/digest';
import { SecondChanceMap } from '../util/second-chance-map';

/** A verified token as the cache keeps it. */
export interface CachedToken {
  header: JwtHeader;
  claims: JwtPayload;
  /** Epoch ms after which the entry must not be served (never later than exp). */
  validUntil: number;
  /** The token belongs to a grant whose revocation mark must be read on every request. */
  checkRevocation: boolean;
}

// A cached entry is re-verified at least this often, so a key withdrawn from the JWKS stops working soon.
const CACHE_ENTRY_MAX_MS = 5 * 60 * 1000;

/**
 * The cache key of a token: its SHA-256, so the cache never holds a token itself.
 *
 * @example
 * const key = tokenHash(token);
 */
export function tokenHash(text: string): string {
  return sha256(text, 'base64');
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/**
 * Verified tokens by hash, evicted by second chance (about least recently used first, see SecondChanceMap). An entry is served only while `now < exp` (never
 * past exp, even inside the clock tolerance), never past `iat + maxTokenAgeSeconds` and at most five minutes.
 *
 * @example
 * const cache = new VerifiedTokenCache(1000, undefined);
 * const entry = cache.get(key, Date.now()) ?? cache.remember(key, verified, Date.now(), false);
 */
export class VerifiedTokenCache {
  private readonly entries: SecondChanceMap<string, CachedToken>;

  constructor(
    private readonly size: number,
    private readonly maxTokenAgeMs: number | undefined,
  ) {
    this.entries = new SecondChanceMap(size);
  }

  /** The live entry for a token hash (marked used); undefined when absent or no longer valid. */
  get(key: string, now: number): CachedToken | undefined {
    if (this.size === 0) return undefined;
    const cached = this.entries.get(key);
    if (cached === undefined) return undefined;
    if (now >= cached.validUntil) {
      this.entries.delete(key);
      return undefined;
    }
    return cached;
  }

  /** Wraps a verified token as an entry (claims frozen) and keeps it when it may be served again. */
  remember(key: string, verified: VerifiedJwt, now: number, checkRevocation: boolean): CachedToken {
    const { claims } = verified;
    let validUntil = Math.min((claims.exp as number) * 1000, now + CACHE_ENTRY_MAX_MS);
    if (this.maxTokenAgeMs !== undefined && typeof claims.iat === 'number') {
      validUntil = Math.min(validUntil, claims.iat * 1000 + this.maxTokenAgeMs);
    }
    // One claims object serves many requests, so no handler may change it for the next one.
    const entry: CachedToken = { header: deepFreeze(verified.header), claims: deepFreeze(claims), validUntil, checkRevocation };
    // Tokens accepted only thanks to the clock tolerance (nbf a little ahead, exp just past) are not cached.
    const early = typeof claims.nbf === 'number' && claims.nbf * 1000 > now;
    if (this.size > 0 && !early && validUntil > now) this.entries.set(key, entry);
    return entry;
  }
}
