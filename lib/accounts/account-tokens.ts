import type { KeyValueStore } from '../store/port';
import { constantTimeEqual, sha256 } from '../util/digest';
import { checkOptions, KIT_STORE_OPTION, OptionsError, within, type OptionSchema } from '../util/options';
import { randomToken } from '../util/random-token';
import type { Account, WritableUserDirectory } from './writable-user-directory';

/** Options of {@link AccountTokens}. */
export interface AccountTokensOptions {
  /** The kit store the tokens live in (Redis, Cluster or memory). */
  store: KeyValueStore;
  /** The directory whose accounts the tokens are for: a token is checked against the account's current state. */
  users: Pick<WritableUserDirectory, 'findById'>;
  /** What the tokens are for, e.g. `password-reset` or `email-verification`; a token of one purpose is unknown to another. */
  purpose: string;
  /** How long a token works. Default 900 (15 minutes); 60 to 86400. */
  lifetimeSeconds?: number;
  /** Key namespace inside the store. Default `account-tokens`. */
  namespace?: string;
  /** The time in epoch milliseconds. Default `Date.now`; tests pass their own clock instead of sleeping. */
  clock?: () => number;
}

/** A token just issued: the secret to put in the link (shown once, never stored) and when it stops working. */
export interface IssuedAccountToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/** Why a token does not work. */
export type AccountTokenRefusal =
  /** Malformed, altered, guessed, replaced by a newer one, withdrawn, or its account is gone. */
  | 'invalid'
  /** Its lifetime is over. */
  | 'expired'
  /** It was used already. */
  | 'used'
  /** The account changed since it was issued (a new password or address, disabled): it no longer speaks for the account. */
  | 'stale';

/** The answer of {@link AccountTokens.check} and {@link AccountTokens.redeem}. */
export type AccountTokenCheck =
  { ok: true; account: Account; data: Record<string, string>; expiresAt: number } | { ok: false; reason: AccountTokenRefusal };

interface TokenRecord {
  userId: string;
  /** SHA-256 of the secret part: the store never holds a usable token. */
  hash: string;
  credentialVersion: number;
  expiresAt: number;
  data: Record<string, string>;
  usedAt?: number;
}

const OPTIONS: OptionSchema = {
  store: KIT_STORE_OPTION,
  users: {
    type: 'object',
    required: true,
    expected: 'a writable user directory such as redisUserDirectory(store)',
    check: (users: { findById?: unknown }) => (typeof users.findById === 'function' ? undefined : 'must have findById(id)'),
  },
  purpose: {
    type: 'string',
    required: true,
    check: (purpose: string) =>
      /^[a-z][a-z0-9-]{0,31}$/.test(purpose) ? undefined : `must be a short lower-case name like "password-reset", got "${purpose}"`,
  },
  lifetimeSeconds: { type: 'integer', check: within(60, 86_400) },
  namespace: {
    type: 'string',
    check: (namespace: string) => (/^[A-Za-z0-9:_-]+$/.test(namespace) ? undefined : `must match [A-Za-z0-9:_-]+, got "${namespace}"`),
  },
  clock: { type: 'function' },
};

// 32 random bytes: 256 bits, far past the 128 a link needs to be unguessable.
const SECRET_BYTES = 32;
const TAG = /^[A-Za-z0-9_-]{22}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;
// A used or expired record is kept this much longer, so its link says "used" or "expired" rather than "invalid".
const AFTERLIFE_SECONDS = 3600;

/** The part of a token and its key that names the account: a digest of the user id, so ids cannot break the key. */
function userTag(userId: string): string {
  return sha256(userId, 'base64url').slice(0, 22);
}

/**
 * Single-use links for accounts, such as password reset and email verification: a token is 256 random bits,
 * stored only as its SHA-256, bound to one account and one purpose, and works until it expires (15 minutes by
 * default), is used, is replaced by a newer token for the same account and purpose, is withdrawn, or the account
 * changes (its credential version moves on: a new password or address, or disabling). One key per account and
 * purpose in the kit store, so it works the same on memory, Redis and a Redis Cluster, and a newer token replaces
 * the older one in one write. Pure: no Express; the account routes use it.
 *
 * @example
 * const resets = new AccountTokens({ store, users, purpose: 'password-reset' });
 * const issued = await resets.issue(account.id);
 * if (issued) await mail.send('passwordReset', account.email!, { name: account.name, link: `${base}/reset?token=${issued.token}`, expiresInMinutes: 15 });
 * const result = await resets.redeem(tokenFromTheLink); // { ok: true, account } once, then { ok: false, reason: 'used' }
 */
export class AccountTokens {
  private readonly store: KeyValueStore;
  private readonly users: Pick<WritableUserDirectory, 'findById'>;
  private readonly purpose: string;
  private readonly lifetimeSeconds: number;
  private readonly namespace: string;
  private readonly clock: () => number;

  constructor(options: AccountTokensOptions) {
    checkOptions('AccountTokens', options as unknown, OPTIONS);
    this.store = options.store;
    this.users = options.users;
    this.purpose = options.purpose;
    this.lifetimeSeconds = options.lifetimeSeconds ?? 900;
    this.namespace = options.namespace ?? 'account-tokens';
    this.clock = options.clock ?? Date.now;
  }

  private key(tag: string): string {
    return `${this.namespace}:{${tag}}:${this.purpose}`;
  }

  /**
   * Issues a token for the account, replacing any earlier one of this purpose; null (nothing issued) when there is
   * no such account or it is disabled, so callers answer those cases alike. `data` travels with the token (for
   * example the address a verification link is for); it is stored as given, so put no secret in it.
   */
  async issue(userId: string, data: Record<string, string> = {}): Promise<IssuedAccountToken | null> {
    if (typeof userId !== 'string' || userId === '') throw new OptionsError('AccountTokens.issue: userId must be a non-empty string');
    if (Object.values(data).some((value) => typeof value !== 'string'))
      throw new OptionsError('AccountTokens.issue: data values must be strings');
    const account = await this.users.findById(userId);
    if (!account || account.disabled) return null;
    const tag = userTag(account.id);
    const secret = randomToken(SECRET_BYTES);
    const expiresAt = this.clock() + this.lifetimeSeconds * 1000;
    const record: TokenRecord = {
      userId: account.id,
      hash: sha256(secret, 'base64url'),
      credentialVersion: account.credentialVersion,
      expiresAt,
      data: { ...data },
    };
    await this.store.set(this.key(tag), JSON.stringify(record), this.lifetimeSeconds + AFTERLIFE_SECONDS);
    return { token: `${tag}.${secret}`, expiresAt };
  }

  /** Whether the token works now, without using it up (to show the page a link opens). */
  async check(token: string): Promise<AccountTokenCheck> {
    return (await this.evaluate(token)).result;
  }

  /**
   * Uses the token up and answers its account: of several requests presenting it at once, exactly one gets `ok`.
   * Pair it with a write conditional on the credential version the token was issued for (`setPasswordHash(id,
   * hash, { ifCredentialVersion })`), so the change itself cannot happen twice either.
   */
  async redeem(token: string): Promise<AccountTokenCheck> {
    for (let attempt = 0; attempt < 8; attempt += 1) {
      const { result, raw, record, key } = await this.evaluate(token);
      if (!result.ok) return result;
      const used: TokenRecord = { ...record!, usedAt: this.clock() };
      if (await this.store.compareAndSet(key!, raw!, JSON.stringify(used))) return result;
    }
    return { ok: false, reason: 'used' };
  }

  /** Withdraws the account's token of this purpose (a mail that could not be sent, an account being removed). */
  async revoke(userId: string): Promise<boolean> {
    return (await this.store.delete(this.key(userTag(userId)))) > 0;
  }

  private async evaluate(token: string): Promise<{ result: AccountTokenCheck; raw?: string; record?: TokenRecord; key?: string }> {
    const invalid = { result: { ok: false, reason: 'invalid' } as const };
    if (typeof token !== 'string' || token.length !== 66) return invalid;
    const [tag = '', secret = ''] = token.split('.');
    if (!TAG.test(tag) || !SECRET.test(secret)) return invalid;
    const key = this.key(tag);
    const raw = await this.store.get(key);
    if (raw === null) return invalid;
    const record = JSON.parse(raw) as TokenRecord;
    // Compared in constant time, so the answer time says nothing of how much of a guess was right.
    if (!constantTimeEqual(sha256(secret, 'base64url'), record.hash) || userTag(record.userId) !== tag) return invalid;
    if (record.usedAt !== undefined) return { result: { ok: false, reason: 'used' } };
    if (this.clock() >= record.expiresAt) return { result: { ok: false, reason: 'expired' } };
    const account = await this.users.findById(record.userId);
    if (!account) return invalid;
    if (account.disabled || account.credentialVersion !== record.credentialVersion) return { result: { ok: false, reason: 'stale' } };
    return { result: { ok: true, account, data: { ...record.data }, expiresAt: record.expiresAt }, raw, record, key };
  }
}
