import { BatchedGet } from '../store/batched-get';
import { StoreUnavailableError, type KeyValueStore } from '../store/port';
import { isStoreOutage, RedisStore } from '../store/redis-store';
import { OptionsError } from '../util/options';

/** Claims {@link TokenRevocations.isRevoked} looks at. */
export interface RevocableClaims {
  /** The grant the token descends from (the kit's private claim; every refresh-token family belongs to one). */
  gid?: unknown;
  jti?: unknown;
}

/** Grant ids, family ids and jtis the kit accepts in keys: short, and free of Redis Cluster hash-tag braces. */
export const ID_PATTERN = /^[A-Za-z0-9._~:-]{1,200}$/;

/** The key that marks a grant revoked (every token of it, access or refresh). */
export function grantRevokedKey(grantId: string): string {
  return `grant:{${grantId}}:revoked`;
}

/** The key that marks one access token revoked. */
export function accessTokenRevokedKey(jti: string): string {
  return `at:{${jti}}:revoked`;
}

/**
 * Whether an access token belongs to a grant, and so has a revocation mark to look up. Tokens without `gid` cost
 * no store read in `requireBearer`.
 *
 * @example
 * if (carriesGrant(claims)) await revocations.isRevoked(claims);
 */
export function carriesGrant(claims: RevocableClaims): boolean {
  return typeof claims.gid === 'string' && ID_PATTERN.test(claims.gid);
}

type Read = (key: string) => Promise<string | null>;

/** Reads of one event-loop turn go to Redis as one MGET, as the session reads do (lib/store/batched-get.ts). */
function batchedRead(store: KeyValueStore): Read {
  if (!(store instanceof RedisStore)) return (key) => store.get(key);
  const reads = new BatchedGet(store.client);
  const prefix = store.prefix;
  return (key) =>
    reads.get(prefix + key).catch((error: unknown) => {
      throw isStoreOutage(error) ? new StoreUnavailableError('the token revocation store is unavailable', { cause: error }) : error;
    });
}

/**
 * The revocation marks of access tokens, as `RefreshTokens` writes them: a revoked grant (`gid`, which covers
 * refresh-token reuse, since reuse revokes the family's grant) and a revoked single token (`jti`). A store outage
 * rejects with `StoreUnavailableError` (→ 503); it never reads as "not revoked".
 *
 * @example
 * const revocations = new TokenRevocations(store);
 * if (await revocations.isRevoked(claims)) throw new TokenError('revoked');
 */
export class TokenRevocations {
  private readonly read: Read;

  constructor(store: KeyValueStore) {
    if (typeof store !== 'object' || store === null || typeof store.get !== 'function') {
      throw new OptionsError('TokenRevocations: store must be a KeyValueStore, e.g. a RedisStore');
    }
    this.read = batchedRead(store);
  }

  /**
   * True when the token's grant or the token itself was revoked. Both marks are read in the same batch.
   *
   * @example
   * await revocations.isRevoked({ gid: 'g-1', jti: 'a1b2' }); // false
   */
  async isRevoked(claims: RevocableClaims): Promise<boolean> {
    const checks: Promise<string | null>[] = [];
    if (carriesGrant(claims)) checks.push(this.read(grantRevokedKey(claims.gid as string)));
    if (typeof claims.jti === 'string' && ID_PATTERN.test(claims.jti)) checks.push(this.read(accessTokenRevokedKey(claims.jti)));
    if (checks.length === 0) return false;
    const marks = await Promise.all(checks);
    return marks.some((mark) => mark !== null);
  }
}
