import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { KeyValueStore } from '../store/port';
import { RefreshTokenError } from './errors';

/** Options of {@link RefreshTokens}. */
export interface RefreshTokensOptions {
  /** Where records live (a `RedisStore` in production). Only SHA-256 hashes of tokens are ever stored. */
  store: KeyValueStore;
  /** Lifetime of each refresh token; every rotation issues a new one with a full lifetime. Default 14 days (spec §2.8: days to weeks). */
  ttlSeconds?: number;
  /**
   * Longest life of a token family (one login), however often it is rotated: after it, the user logs in again.
   * Default 90 days (or `ttlSeconds`, if longer).
   */
  absoluteLifetimeSeconds?: number;
  /**
   * Lifetime of the access tokens of the same grants: after `revokeGrant`, the grant's "revoked" mark is kept at
   * least this long (plus a minute of clock skew) and at least `ttlSeconds`. Default 3600.
   */
  accessTokenTtlSeconds?: number;
}

/** What a refresh token stands for. */
export interface RefreshTokenRecord {
  /** All tokens descending from one login share a family; reuse of any rotated one revokes the whole family. */
  familyId: string;
  clientId: string;
  /** The user (subject). */
  subject: string;
  scope?: string;
  grantId?: string;
  /** Epoch milliseconds. */
  issuedAt: number;
  /** Epoch milliseconds when the family (the login) started; the absolute lifetime counts from here. */
  familyCreatedAt: number;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/** What {@link RefreshTokens.issue} takes. */
export interface IssueRefreshTokenInput {
  clientId: string;
  subject: string;
  scope?: string;
  grantId?: string;
}

/** A freshly issued refresh token. `token` is shown to the client once and never stored. */
export interface IssuedRefreshToken {
  token: string;
  /** Seconds until it expires. */
  expiresIn: number;
  record: RefreshTokenRecord;
}

/** Claims {@link RefreshTokens.isRevoked} looks at. */
export interface RevocableClaims {
  gid?: unknown;
  jti?: unknown;
}

const FAMILY_ACTIVE = 'active';
const FAMILY_REVOKED = 'revoked';
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const ID_PATTERN = /^[A-Za-z0-9._~:-]{1,200}$/;

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

function requireId(name: string, value: unknown): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    throw new TypeError(`RefreshTokens: ${name} must be 1–200 characters of A-Z a-z 0-9 . _ ~ : -, got ${JSON.stringify(value)}`);
  }
  return value;
}

function positiveSeconds(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new TypeError(`RefreshTokens: ${name} must be a positive integer number of seconds, got ${JSON.stringify(value)}`);
  }
  return value;
}

/*
 * Keys (each group shares a Redis Cluster hash tag; no operation spans two groups atomically):
 *   rt:{<hash>}            the record, consumed with GETDEL on rotation
 *   rt:{<hash>}:family     the family id, kept for the token's whole lifetime: a token whose record is gone but whose
 *                          marker remains was already rotated (or revoked), so presenting it again is reuse
 *   rtf:{<family>}         "active" | "revoked"; authoritative, checked on every rotation
 *   rtf:{<family>}:tokens  hashes of the family's live tokens, for cleanup
 *   grant:{<gid>}:families families of a grant
 *   grant:{<gid>}:revoked  present while any token of a revoked grant (access or refresh, even one issued after the
 *                          revocation) may still be unexpired
 *   at:{<jti>}:revoked     present while one revoked access token may still be unexpired
 */

/**
 * Opaque refresh tokens (256 random bits, base64url) stored only as SHA-256 hashes, bound to a client and a user,
 * rotated on every use with reuse detection: presenting an already-rotated token revokes its whole family.
 *
 * @example
 * const refreshTokens = new RefreshTokens({ store });
 * const { token } = await refreshTokens.issue({ clientId: 'shop', subject: 'alice', grantId });
 * const next = await refreshTokens.rotate(token, 'shop'); // next.token replaces token
 */
export class RefreshTokens {
  readonly ttlSeconds: number;
  readonly absoluteLifetimeSeconds: number;
  readonly accessTokenTtlSeconds: number;
  private readonly store: KeyValueStore;

  constructor(options: RefreshTokensOptions) {
    if (typeof options !== 'object' || options === null || typeof options.store?.take !== 'function') {
      throw new TypeError('RefreshTokens: store is required, e.g. new RefreshTokens({ store: new RedisStore(url) })');
    }
    this.store = options.store;
    this.ttlSeconds = positiveSeconds('ttlSeconds', options.ttlSeconds, 14 * 24 * 3600);
    this.absoluteLifetimeSeconds = positiveSeconds(
      'absoluteLifetimeSeconds',
      options.absoluteLifetimeSeconds,
      Math.max(90 * 24 * 3600, this.ttlSeconds),
    );
    this.accessTokenTtlSeconds = positiveSeconds('accessTokenTtlSeconds', options.accessTokenTtlSeconds, 3600);
  }

  /**
   * Starts a new token family (a login) and returns its first token.
   *
   * @example
   * const { token, expiresIn } = await refreshTokens.issue({ clientId: 'shop', subject: user.id, scope: 'openid' });
   */
  async issue(input: IssueRefreshTokenInput): Promise<IssuedRefreshToken> {
    if (typeof input !== 'object' || input === null) throw new TypeError('RefreshTokens.issue: pass { clientId, subject }');
    const clientId = requireId('clientId', input.clientId);
    if (typeof input.subject !== 'string' || input.subject === '')
      throw new TypeError('RefreshTokens.issue: subject must be a non-empty string');
    if (input.scope !== undefined && typeof input.scope !== 'string') throw new TypeError('RefreshTokens.issue: scope must be a string');
    const grantId = input.grantId === undefined ? undefined : requireId('grantId', input.grantId);
    const familyId = randomUUID();
    await this.store.set(`rtf:{${familyId}}`, FAMILY_ACTIVE, this.ttlSeconds);
    if (grantId !== undefined) await this.store.addToSet(`grant:{${grantId}}:families`, [familyId], this.ttlSeconds);
    return this.mintConfirmed(
      {
        familyId,
        familyCreatedAt: Date.now(),
        clientId,
        subject: input.subject,
        ...(input.scope !== undefined ? { scope: input.scope } : {}),
        ...(grantId !== undefined ? { grantId } : {}),
      },
      grantId === undefined ? [] : [`grant:{${grantId}}:families`],
    );
  }

  /**
   * Redeems a refresh token: consumes it and returns its successor. Of two concurrent rotations of one token
   * exactly one wins; the other counts as reuse. Reuse, or presentation by another client, revokes the family.
   *
   * @example
   * try { const next = await refreshTokens.rotate(req.body.refresh_token, client.id); }
   * catch (err) { if (err instanceof RefreshTokenError) throw new BadRequestError({ code: 'invalid_grant' }); }
   */
  async rotate(token: string, clientId: string): Promise<IssuedRefreshToken> {
    if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) throw new RefreshTokenError('invalid');
    const hash = hashToken(token);
    // GETDEL: of concurrent callers only one gets the record; the family marker tells the others it was reuse.
    const raw = await this.store.take(`rt:{${hash}}`);
    if (raw === null) {
      const familyId = await this.store.get(`rt:{${hash}}:family`);
      if (familyId === null) throw new RefreshTokenError('invalid');
      await this.revokeFamily(familyId);
      throw new RefreshTokenError('reused');
    }
    const record = JSON.parse(raw) as RefreshTokenRecord;
    if (record.clientId !== clientId) {
      // The token leaked to another client; the safe reading is that the family is compromised.
      await this.revokeFamily(record.familyId);
      throw new RefreshTokenError('client_mismatch');
    }
    if (record.expiresAt <= Date.now()) throw new RefreshTokenError('invalid');
    const state = await this.store.get(`rtf:{${record.familyId}}`);
    if (state !== FAMILY_ACTIVE) throw new RefreshTokenError('revoked');
    // A family started under a grant after that grant was revoked is dead too.
    if (record.grantId !== undefined && (await this.store.get(`grant:{${record.grantId}}:revoked`)) !== null) {
      await this.revokeFamily(record.familyId);
      throw new RefreshTokenError('revoked');
    }
    await this.store.removeFromSet(`rtf:{${record.familyId}}:tokens`, [hash]);
    await this.store.expire(`rtf:{${record.familyId}}`, this.ttlSeconds);
    const { familyId, subject, scope, grantId } = record;
    const familyCreatedAt = typeof record.familyCreatedAt === 'number' ? record.familyCreatedAt : record.issuedAt;
    return this.mintConfirmed(
      {
        familyId,
        familyCreatedAt,
        clientId,
        subject,
        ...(scope !== undefined ? { scope } : {}),
        ...(grantId !== undefined ? { grantId } : {}),
      },
      // The consumed token: its deletion must survive too, or a failover would make it redeemable again.
      [`rt:{${hash}}`],
    );
  }

  /**
   * Revokes every token of a family (all descendants of one login).
   *
   * @example
   * await refreshTokens.revokeFamily(record.familyId);
   */
  async revokeFamily(familyId: string): Promise<void> {
    // The mark comes first and is what rotate() trusts, so a rotation racing with this cannot revive the family.
    await this.store.set(`rtf:{${familyId}}`, FAMILY_REVOKED, this.ttlSeconds);
    const hashes = await this.store.members(`rtf:{${familyId}}:tokens`);
    await this.store.delete(...hashes.map((hash) => `rt:{${hash}}`), `rtf:{${familyId}}:tokens`);
  }

  /**
   * Revokes a grant: every refresh token of it, and (through {@link isRevoked}) every access token carrying its
   * `gid` until those have expired. Tokens issued under the grant after this call are dead as well.
   *
   * @example
   * await refreshTokens.revokeGrant(claims.gid);
   */
  async revokeGrant(grantId: string): Promise<void> {
    const id = requireId('grantId', grantId);
    // Kept as long as any token of the grant, even one issued after this call, could still be alive.
    await this.store.set(`grant:{${id}}:revoked`, '1', Math.max(this.accessTokenTtlSeconds + 60, this.ttlSeconds));
    const families = await this.store.members(`grant:{${id}}:families`);
    for (const familyId of families) await this.revokeFamily(familyId);
    await this.store.delete(`grant:{${id}}:families`);
  }

  /**
   * Marks one access token revoked until its `exp`.
   *
   * @example
   * await refreshTokens.revokeAccessToken(req.auth.claims);
   */
  async revokeAccessToken(claims: { jti?: unknown; exp?: unknown }): Promise<void> {
    const jti = requireId('jti', claims.jti);
    const exp = typeof claims.exp === 'number' ? claims.exp : Date.now() / 1000 + this.accessTokenTtlSeconds;
    const remaining = Math.ceil(exp - Date.now() / 1000) + 60;
    if (remaining > 0) await this.store.set(`at:{${jti}}:revoked`, '1', remaining);
  }

  /**
   * Whether an access token's grant (`gid`) or the token itself (`jti`) was revoked. Pass it as requireBearer's
   * `isRevoked` hook. A store outage rejects (503), it never answers "not revoked".
   *
   * @example
   * app.use(requireBearer({ ..., isRevoked: (claims) => refreshTokens.isRevoked(claims) }));
   */
  async isRevoked(claims: RevocableClaims): Promise<boolean> {
    const checks: Promise<string | null>[] = [];
    if (typeof claims.gid === 'string' && ID_PATTERN.test(claims.gid)) checks.push(this.store.get(`grant:{${claims.gid}}:revoked`));
    if (typeof claims.jti === 'string' && ID_PATTERN.test(claims.jti)) checks.push(this.store.get(`at:{${claims.jti}}:revoked`));
    const results = await Promise.all(checks);
    return results.some((value) => value !== null);
  }

  private async mint(base: Omit<RefreshTokenRecord, 'issuedAt' | 'expiresAt'>): Promise<IssuedRefreshToken> {
    const token = randomBytes(32).toString('base64url');
    const hash = hashToken(token);
    const issuedAt = Date.now();
    // Rotation slides the lifetime, but never past the family's absolute end.
    const familyEndsAt = base.familyCreatedAt + this.absoluteLifetimeSeconds * 1000;
    const lifetimeSeconds = Math.floor(Math.min(this.ttlSeconds * 1000, familyEndsAt - issuedAt) / 1000);
    if (lifetimeSeconds <= 0) throw new RefreshTokenError('invalid');
    const record: RefreshTokenRecord = { ...base, issuedAt, expiresAt: issuedAt + lifetimeSeconds * 1000 };
    await this.store.set(`rt:{${hash}}:family`, record.familyId, lifetimeSeconds);
    await this.store.set(`rt:{${hash}}`, JSON.stringify(record), lifetimeSeconds);
    await this.store.addToSet(`rtf:{${record.familyId}}:tokens`, [hash], this.ttlSeconds);
    return { token, expiresIn: lifetimeSeconds, record };
  }

  /**
   * Issues (or rotates to) a token and returns it only once the writes are confirmed (see
   * `KeyValueStore.confirmWrites`): a client must never hold a token that a failover could take back.
   */
  private async mintConfirmed(
    base: Omit<RefreshTokenRecord, 'issuedAt' | 'expiresAt'>,
    alsoWritten: readonly string[],
  ): Promise<IssuedRefreshToken> {
    const issued = await this.mint(base);
    const hash = hashToken(issued.token);
    await this.store.confirmWrites([
      `rt:{${hash}}`,
      `rt:{${hash}}:family`,
      `rtf:{${base.familyId}}`,
      `rtf:{${base.familyId}}:tokens`,
      ...alsoWritten,
    ]);
    return issued;
  }
}
