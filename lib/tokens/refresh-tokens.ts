import type { TokenAuthentication } from './token-claims';
import { randomUUID } from 'node:crypto';
import type { Request } from 'express';
import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import type { KeyValueStore } from '../store/port';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import { RefreshTokenError } from './errors';
import { accessTokenRevokedKey, grantRevokedKey, ID_PATTERN, TokenRevocations, type RevocableClaims } from './token-revocations';
import { sha256 } from '../util/digest';
import { isThumbprint } from './dpop/proof-key';
import { randomToken } from '../util/random-token';

/** Options of {@link RefreshTokens}. */
export interface RefreshTokensOptions {
  /** Where records live (a `RedisStore` in production). Only SHA-256 hashes of tokens are ever stored. */
  store: KeyValueStore;
  /** Lifetime of each refresh token; every rotation issues a new one with a full lifetime. Default 14 days. */
  lifetimeSeconds?: number;
  /**
   * Longest life of a token family (one login), however often it is rotated: after it, the user logs in again.
   * Default 90 days (or `lifetimeSeconds`, if longer).
   */
  absoluteLifetimeSeconds?: number;
  /**
   * The longest lifetime of the access tokens issued beside these refresh tokens: a grant's revocation mark is kept
   * at least this long (plus a minute of clock skew), so no access token of a revoked grant outlives its mark.
   * Default 86400, the longest access token a `TokenService` issues.
   */
  accessTokenLifetimeSeconds?: number;
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number;
  /** Where a detected reuse is recorded (`refresh_token.reused`, the grant revoked). Default none. */
  events?: SecurityEvents;
}

/** What a refresh token stands for. */
export interface RefreshTokenRecord {
  /** All tokens descending from one login share a family. */
  familyId: string;
  clientId: string;
  /** The user (subject). */
  subject: string;
  scope?: string;
  /**
   * The grant the family belongs to: the caller's, or the family's own id when the caller named none. Access tokens
   * carry it as `gid`; reuse of a rotated token revokes the grant, and with it those access tokens.
   */
  grantId: string;
  /** Epoch milliseconds. */
  issuedAt: number;
  /** Epoch milliseconds when the family (the login) started; the absolute lifetime counts from here. */
  familyCreatedAt: number;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** How the user authenticated at the login that started the family; access tokens of every rotation state it. */
  authentication?: TokenAuthentication;
  /**
   * The RFC 7638 thumbprint of the DPoP key the family is bound to (RFC 9449 §5): every rotation must show a proof
   * of that key.
   */
  jkt?: string;
}

/** What {@link RefreshTokens.issue} takes. */
export interface IssueRefreshTokenInput {
  clientId: string;
  subject: string;
  scope?: string;
  /** The login's authentication, kept with the family (see `AccessTokenInput.authentication`). */
  authentication?: TokenAuthentication;
  /** Groups several families under one grant (e.g. one consent); default: the new family is its own grant. */
  grantId?: string;
  /** Binds the family to a DPoP key (its RFC 7638 thumbprint, from the token request's proof). */
  jkt?: string;
}

/** A freshly issued refresh token. `token` is shown to the client once and never stored. */
export interface IssuedRefreshToken {
  token: string;
  /** Seconds until it expires. */
  expiresIn: number;
  record: RefreshTokenRecord;
}

export type { RevocableClaims } from './token-revocations';

const FAMILY_ACTIVE = 'active';
const FAMILY_REVOKED = 'revoked';
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

// Revocation marks outlive the tokens they cover by this much, for clock skew between servers.
const CLOCK_SKEW_SECONDS = 60;
const DAY = 24 * 3600;
const debug = debugChannel('token');

const SCHEMA: OptionSchema = {
  store: {
    type: 'object',
    required: true,
    expected: 'a KeyValueStore, e.g. new RedisStore(url)',
    check: (store: KeyValueStore) =>
      typeof store.take === 'function' ? undefined : 'must be a KeyValueStore (a RedisStore or MemoryStore)',
  },
  lifetimeSeconds: { type: 'integer', expected: 'a whole number of seconds from 1 to 31536000', check: within(1, 365 * DAY) },
  absoluteLifetimeSeconds: { type: 'integer', expected: 'a whole number of seconds from 1 to 31536000', check: within(1, 365 * DAY) },
  accessTokenLifetimeSeconds: { type: 'integer', expected: 'a whole number of seconds from 1 to 86400', check: within(1, DAY) },
  now: { type: 'function', expected: 'a function returning epoch milliseconds' },
  events: EVENTS_OPTION,
};

function hashToken(token: string): string {
  return sha256(token, 'base64url');
}

function requireId(name: string, value: unknown): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    throw new OptionsError(`RefreshTokens: ${name} must be 1–200 characters of A-Z a-z 0-9 . _ ~ : -, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Records written before every family had a grant name none; such a family is its own grant. */
function parseRecord(raw: string): RefreshTokenRecord | undefined {
  try {
    const record = JSON.parse(raw) as RefreshTokenRecord;
    return { ...record, grantId: record.grantId ?? record.familyId, familyCreatedAt: record.familyCreatedAt ?? record.issuedAt };
  } catch {
    return undefined;
  }
}

/*
 * Keys (each group shares a Redis Cluster hash tag; no operation spans two groups atomically):
 *   rt:{<hash>}            the record, consumed with GETDEL on rotation
 *   rt:{<hash>}:family     "<family> <grant>", kept for the token's whole lifetime: a token whose record is gone but
 *                          whose marker remains was already rotated (or revoked), so presenting it again is reuse
 *   rtf:{<family>}         "active" | "revoked"; authoritative, checked on every rotation
 *   rtf:{<family>}:tokens  hashes of the family's live tokens, for cleanup
 *   grant:{<gid>}:families families of a grant
 *   grant:{<gid>}:revoked  present while any token of a revoked grant (access or refresh, even one issued after the
 *                          revocation) may still be unexpired; requireBearer reads it for tokens carrying `gid`
 *   at:{<jti>}:revoked     present while one revoked access token may still be unexpired
 */

/**
 * Opaque refresh tokens (256 random bits, base64url) stored only as SHA-256 hashes, bound to a client and a user,
 * rotated on every use with reuse detection: presenting an already-rotated token, or another client's token,
 * revokes the family's grant, so its refresh tokens and the access tokens carrying its `gid` die together
 * (RFC 9700 §4.14.2).
 *
 * @example
 * const refreshTokens = new RefreshTokens({ store });
 * const { token } = await refreshTokens.issue({ clientId: 'shop', subject: 'alice' });
 * const next = await refreshTokens.rotate(token, 'shop'); // next.token replaces token
 */
export class RefreshTokens {
  readonly lifetimeSeconds: number;
  readonly absoluteLifetimeSeconds: number;
  readonly accessTokenLifetimeSeconds: number;
  /** The reads `requireBearer` makes for tokens of these grants. */
  readonly revocations: TokenRevocations;
  private readonly store: KeyValueStore;
  private readonly now: () => number;
  private readonly events: SecurityEvents | undefined;

  constructor(options: RefreshTokensOptions) {
    checkOptions('RefreshTokens', options as unknown, SCHEMA);
    this.store = options.store;
    this.lifetimeSeconds = options.lifetimeSeconds ?? 14 * DAY;
    this.absoluteLifetimeSeconds = options.absoluteLifetimeSeconds ?? Math.max(90 * DAY, this.lifetimeSeconds);
    this.accessTokenLifetimeSeconds = options.accessTokenLifetimeSeconds ?? DAY;
    this.now = options.now ?? Date.now;
    this.revocations = new TokenRevocations(this.store);
    this.events = eventsOption('RefreshTokens', options.events);
  }

  /**
   * Starts a new token family (a login) and returns its first token.
   *
   * @example
   * const { token, expiresIn, record } = await refreshTokens.issue({ clientId: 'shop', subject: user.id, scope: 'openid' });
   */
  async issue(input: IssueRefreshTokenInput): Promise<IssuedRefreshToken> {
    if (typeof input !== 'object' || input === null) throw new OptionsError('RefreshTokens.issue: pass { clientId, subject }');
    const clientId = requireId('clientId', input.clientId);
    if (typeof input.subject !== 'string' || input.subject === '')
      throw new OptionsError('RefreshTokens.issue: subject must be a non-empty string');
    if (input.scope !== undefined && typeof input.scope !== 'string') throw new OptionsError('RefreshTokens.issue: scope must be a string');
    if (input.jkt !== undefined && !isThumbprint(input.jkt)) {
      throw new OptionsError(
        'RefreshTokens.issue: jkt must be an RFC 7638 thumbprint (43 base64url characters), e.g. the jkt of a verified DPoP proof',
      );
    }
    const familyId = randomUUID();
    const grantId = input.grantId === undefined ? familyId : requireId('grantId', input.grantId);
    const now = this.now();
    return this.mintConfirmed(
      {
        familyId,
        familyCreatedAt: now,
        clientId,
        subject: input.subject,
        grantId,
        ...(input.scope !== undefined ? { scope: input.scope } : {}),
        ...(input.authentication !== undefined ? { authentication: { ...input.authentication } } : {}),
        ...(input.jkt !== undefined ? { jkt: input.jkt } : {}),
      },
      now,
      [`grant:{${grantId}}:families`],
      [
        this.store.set(`rtf:{${familyId}}`, FAMILY_ACTIVE, this.lifetimeSeconds),
        this.store.addToSet(`grant:{${grantId}}:families`, [familyId], this.lifetimeSeconds),
      ],
    );
  }

  /**
   * Redeems a refresh token: consumes it and returns its successor. Of two concurrent rotations of one token
   * exactly one consumes it; the other counts as reuse. Reuse, presentation by another client, or for a family
   * bound to a DPoP key presentation without a proof of that key (`binding.jkt`), revokes the grant (and with it
   * any successor just minted) and is recorded as `refresh_token.reused`, with the facts of `req` (the request that
   * presented it) when given.
   *
   * @example
   * try { const next = await refreshTokens.rotate(req.body.refresh_token, client.id, { jkt: proof?.jkt }, req); }
   * catch (err) { if (err instanceof RefreshTokenError) throw new BadRequestError({ code: 'invalid_grant' }); }
   */
  async rotate(token: string, clientId: string, binding: { jkt?: string } = {}, req?: Request): Promise<IssuedRefreshToken> {
    if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) throw this.refusal('invalid', 'not a refresh token');
    const hash = hashToken(token);
    // GETDEL: of concurrent callers only one gets the record; the family marker tells the others it was reuse.
    const raw = await this.store.take(`rt:{${hash}}`);
    if (raw === null) {
      const marker = await this.store.get(`rt:{${hash}}:family`);
      if (marker === null) throw this.refusal('invalid', 'unknown or expired');
      const [familyId = '', grantId] = marker.split(' ');
      // A marker from before every family had a grant names only the family.
      if (grantId !== undefined) await this.revokeGrant(grantId);
      else await this.revokeFamily(familyId);
      this.events?.emit('refresh_token.reused', { reason: 'reused', clientId }, req);
      throw this.refusal('reused', 'an already rotated token came back; its grant is revoked');
    }
    const record = parseRecord(raw);
    if (record === undefined) throw this.refusal('invalid', 'unreadable record');
    if (record.clientId !== clientId) {
      // The token leaked to another client; the safe reading is that the grant is compromised.
      await this.revokeGrant(record.grantId);
      this.events?.emit('refresh_token.reused', { reason: 'client_mismatch', clientId, userId: record.subject }, req);
      throw this.refusal('client_mismatch', 'presented by another client; its grant is revoked');
    }
    if (record.jkt !== undefined && binding.jkt !== record.jkt) {
      // Whoever sent it does not hold the key the family is bound to: the token leaked, as with another client.
      await this.revokeGrant(record.grantId);
      this.events?.emit('refresh_token.reused', { reason: 'key_mismatch', clientId, userId: record.subject }, req);
      throw this.refusal('key_mismatch', 'presented without a proof of its DPoP key; its grant is revoked');
    }
    const now = this.now();
    if (record.expiresAt <= now) throw this.refusal('invalid', 'expired');
    // Checked against today's setting, so shortening absoluteLifetimeSeconds ends older families too. Less than a
    // second left counts as ended: a successor must live at least one whole second.
    if (record.familyCreatedAt + this.absoluteLifetimeSeconds * 1000 - now < 1000)
      throw this.refusal('invalid', 'past the absolute lifetime');
    const [family, grantRevoked] = await Promise.all([
      this.store.get(`rtf:{${record.familyId}}`),
      this.store.get(grantRevokedKey(record.grantId)),
    ]);
    if (family !== FAMILY_ACTIVE) throw this.refusal('revoked', 'its family is revoked');
    // A family started under a grant after that grant was revoked is dead too.
    if (grantRevoked !== null) {
      await this.revokeFamily(record.familyId);
      throw this.refusal('revoked', 'its grant is revoked');
    }
    const { familyId, subject, scope, grantId, familyCreatedAt, authentication, jkt } = record;
    return this.mintConfirmed(
      {
        familyId,
        familyCreatedAt,
        clientId,
        subject,
        grantId,
        ...(scope !== undefined ? { scope } : {}),
        // A refresh is no new authentication: the tokens keep stating the login's level and auth_time.
        ...(authentication !== undefined ? { authentication } : {}),
        ...(jkt !== undefined ? { jkt } : {}),
      },
      now,
      // The consumed token: its deletion must survive too, or a failover would make it redeemable again.
      [`rt:{${hash}}`],
      [this.store.removeFromSet(`rtf:{${familyId}}:tokens`, [hash]), this.store.expire(`rtf:{${familyId}}`, this.lifetimeSeconds)],
    );
  }

  /**
   * Revokes every refresh token of a family (all descendants of one login). Access tokens carry the grant, not the
   * family: to end those too, revoke the grant (`record.grantId`, the family's own id unless the caller set one).
   *
   * @example
   * await refreshTokens.revokeFamily(record.familyId);
   */
  async revokeFamily(familyId: string): Promise<void> {
    // The mark comes first and is what rotate() trusts, so a rotation racing with this cannot revive the family.
    await this.store.set(`rtf:{${familyId}}`, FAMILY_REVOKED, this.revocationLifetimeSeconds());
    const hashes = await this.store.members(`rtf:{${familyId}}:tokens`);
    await this.store.delete(...hashes.map((hash) => `rt:{${hash}}`), `rtf:{${familyId}}:tokens`);
  }

  /**
   * Revokes a grant: every refresh token of it, and (through {@link RefreshTokens.isRevoked} and `requireBearer`) every access
   * token carrying its `gid` until those have expired. Tokens issued under the grant after this call are dead as well.
   *
   * @example
   * await refreshTokens.revokeGrant(claims.gid);
   */
  async revokeGrant(grantId: string): Promise<void> {
    const id = requireId('grantId', grantId);
    // Kept as long as any token of the grant, even one issued after this call, could still be alive.
    await this.store.set(grantRevokedKey(id), '1', this.revocationLifetimeSeconds());
    const families = await this.store.members(`grant:{${id}}:families`);
    for (const familyId of families) await this.revokeFamily(familyId);
    await this.store.delete(`grant:{${id}}:families`);
  }

  /**
   * Marks one access token revoked until its `exp`.
   *
   * @example
   * await refreshTokens.revokeAccessToken(req.auth.payload);
   */
  async revokeAccessToken(claims: { jti?: unknown; exp?: unknown }): Promise<void> {
    const jti = requireId('jti', claims.jti);
    const nowSeconds = this.now() / 1000;
    const exp = typeof claims.exp === 'number' ? claims.exp : nowSeconds + this.accessTokenLifetimeSeconds;
    const remaining = Math.ceil(exp - nowSeconds) + CLOCK_SKEW_SECONDS;
    if (remaining > 0) await this.store.set(accessTokenRevokedKey(jti), '1', remaining);
  }

  /**
   * Whether an access token's grant (`gid`) or the token itself (`jti`) was revoked. `requireBearer` asks it by
   * itself when given the `TokenService` (or `revocationStore`); pass it as `isRevoked` only for custom wiring. A
   * store outage rejects (503), it never answers "not revoked".
   *
   * @example
   * const revoked = await refreshTokens.isRevoked(req.auth.payload);
   */
  isRevoked(claims: RevocableClaims): Promise<boolean> {
    return this.revocations.isRevoked(claims);
  }

  /** How long a revocation mark lives: past every refresh token and every access token it covers. */
  private revocationLifetimeSeconds(): number {
    return Math.max(this.accessTokenLifetimeSeconds + CLOCK_SKEW_SECONDS, this.lifetimeSeconds);
  }

  private refusal(reason: RefreshTokenError['reason'], why: string): RefreshTokenError {
    debug('refresh token refused (%s): %s', reason, why);
    return new RefreshTokenError(reason);
  }

  /**
   * Issues (or rotates to) a token and returns it only once every write is done and confirmed (see
   * `KeyValueStore.confirmWrites`): a client must never hold a token that a failover could take back. The token's
   * writes and the caller's (`alongside`) are issued together, so a single Redis gets them in one round trip; they
   * may then land in any order or only in part, which is safe because the token is handed out only if all succeed.
   * A token nobody holds cannot be presented, whatever was left of its records.
   */
  private async mintConfirmed(
    base: Omit<RefreshTokenRecord, 'issuedAt' | 'expiresAt'>,
    issuedAt: number,
    alsoWritten: readonly string[],
    alongside: ReadonlyArray<Promise<unknown>>,
  ): Promise<IssuedRefreshToken> {
    const token = randomToken(32);
    const hash = hashToken(token);
    // Rotation slides the lifetime, but never past the family's absolute end.
    const familyEndsAt = base.familyCreatedAt + this.absoluteLifetimeSeconds * 1000;
    // At least 1: issue() starts a family of ≥ 1 s, and rotate() refuses a family with less than a second left.
    const lifetimeSeconds = Math.floor(Math.min(this.lifetimeSeconds * 1000, familyEndsAt - issuedAt) / 1000);
    const record: RefreshTokenRecord = { ...base, issuedAt, expiresAt: issuedAt + lifetimeSeconds * 1000 };
    await Promise.all([
      ...alongside,
      this.store.set(`rt:{${hash}}:family`, `${record.familyId} ${record.grantId}`, lifetimeSeconds),
      this.store.set(`rt:{${hash}}`, JSON.stringify(record), lifetimeSeconds),
      this.store.addToSet(`rtf:{${record.familyId}}:tokens`, [hash], this.lifetimeSeconds),
    ]);
    const issued = { token, expiresIn: lifetimeSeconds, record };
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
