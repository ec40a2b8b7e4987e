import type { KeyValueStore } from '../store/port';
import { OptionsError } from '../util/options';
import { CredentialConflictError, type CredentialStore, type StoredPasskey, type StoredTotp } from './credential-store';
import { sha256 } from '../util/digest';

// A compare-and-set loop gives up after this many lost races: only a pathological write storm on one user's
// record gets that far, and failing loudly beats spinning.
const MAX_ATTEMPTS = 64;

/**
 * The part of a key that names a user: a digest of the user id, so a user id holding `{`, `}` or `:` can neither
 * break the Cluster hash tag nor make two users' keys meet.
 */
function userTag(userId: string): string {
  return sha256(userId, 'base64url').slice(0, 22);
}

function passkeyTag(credentialId: string): string {
  return sha256(credentialId, 'base64url').slice(0, 22);
}

interface RecoveryRecord {
  /** Hashes of the codes not used yet. */
  unused: string[];
}

/**
 * The {@link CredentialStore} on the kit's {@link KeyValueStore}: a {@link MemoryStore} for one process, a
 * {@link RedisStore} (single node, Sentinel or Cluster) otherwise. Each user's keys share one hash tag; a passkey
 * is kept under its credential id (so a passwordless sign-in finds it) and listed in its user's set. Every
 * single-use or counter rule is one atomic primitive of the store (`setIfAbsent`, `compareAndSet`), so two
 * processes racing on the same code or counter cannot both win. `close()` leaves the given store open: it is
 * usually shared with the rest of the kit.
 *
 * @example
 * const credentials = new KeyValueCredentialStore(new RedisStore(process.env.REDIS_URL!, { prefix: 'sso:' }));
 * await credentials.advanceTotpStep('local|alice', 59_000_001); // true once, then false
 */
export class KeyValueCredentialStore implements CredentialStore {
  constructor(private readonly store: KeyValueStore) {
    if (store === null || typeof store !== 'object' || typeof (store as Partial<KeyValueStore>).compareAndSet !== 'function') {
      throw new OptionsError('KeyValueCredentialStore: pass the kit store, e.g. new KeyValueCredentialStore(new RedisStore(url))');
    }
  }

  private passkeyKey(credentialId: string): string {
    return `passkey:{${passkeyTag(credentialId)}}`;
  }

  private userKey(userId: string, part: 'passkeys' | 'totp' | 'totp-step' | 'recovery'): string {
    return `credentials:{${userTag(userId)}}:${part}`;
  }

  async listPasskeys(userId: string): Promise<StoredPasskey[]> {
    const ids = await this.store.members(this.userKey(userId, 'passkeys'));
    const found = await Promise.all(ids.map((id) => this.findPasskey(id)));
    return found
      .filter((passkey): passkey is StoredPasskey => passkey?.userId === userId)
      .sort((a, b) => a.createdAt - b.createdAt || a.credentialId.localeCompare(b.credentialId));
  }

  async findPasskey(credentialId: string): Promise<StoredPasskey | undefined> {
    const raw = await this.store.get(this.passkeyKey(credentialId));
    if (raw === null) return undefined;
    const passkey = JSON.parse(raw) as StoredPasskey;
    // A digest collision of two credential ids is not a match.
    return passkey.credentialId === credentialId ? passkey : undefined;
  }

  async addPasskey(passkey: StoredPasskey): Promise<void> {
    // The credential key is the uniqueness gate; the user's list is written only after it was won.
    if (!(await this.store.setIfAbsent(this.passkeyKey(passkey.credentialId), JSON.stringify(passkey)))) {
      throw new CredentialConflictError();
    }
    await this.store.addToSet(this.userKey(passkey.userId, 'passkeys'), [passkey.credentialId]);
  }

  /** Applies `change` to the stored passkey with compare-and-set, retrying when another write came in between. */
  private async updatePasskey(credentialId: string, change: (passkey: StoredPasskey) => StoredPasskey | undefined): Promise<boolean> {
    const key = this.passkeyKey(credentialId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const raw = await this.store.get(key);
      if (raw === null) return false;
      const current = JSON.parse(raw) as StoredPasskey;
      if (current.credentialId !== credentialId) return false;
      const next = change(current);
      if (next === undefined) return false;
      if (await this.store.compareAndSet(key, raw, JSON.stringify(next))) return true;
    }
    throw new Error('KeyValueCredentialStore: the passkey record kept changing; try again');
  }

  recordPasskeyUse(
    credentialId: string,
    expectedCounter: number,
    use: { counter: number; backedUp: boolean; usedAt: number },
  ): Promise<boolean> {
    return this.updatePasskey(credentialId, (passkey) =>
      passkey.counter === expectedCounter
        ? { ...passkey, counter: use.counter, backedUp: use.backedUp, lastUsedAt: use.usedAt }
        : undefined,
    );
  }

  renamePasskey(userId: string, credentialId: string, name: string): Promise<boolean> {
    return this.updatePasskey(credentialId, (passkey) => (passkey.userId === userId ? { ...passkey, name } : undefined));
  }

  async removePasskey(userId: string, credentialId: string): Promise<boolean> {
    const passkey = await this.findPasskey(credentialId);
    // Another user's credential id is "no such passkey": a user can never remove someone else's.
    if (passkey?.userId !== userId) return false;
    const removed = (await this.store.delete(this.passkeyKey(credentialId))) > 0;
    await this.store.removeFromSet(this.userKey(userId, 'passkeys'), [credentialId]);
    return removed;
  }

  async getTotp(userId: string): Promise<StoredTotp | undefined> {
    const raw = await this.store.get(this.userKey(userId, 'totp'));
    return raw === null ? undefined : (JSON.parse(raw) as StoredTotp);
  }

  async setTotp(userId: string, totp: StoredTotp): Promise<void> {
    await this.store.set(this.userKey(userId, 'totp'), JSON.stringify({ sealedSecret: totp.sealedSecret, createdAt: totp.createdAt }));
  }

  async removeTotp(userId: string): Promise<boolean> {
    const removed = await this.store.delete(this.userKey(userId, 'totp'));
    await this.store.delete(this.userKey(userId, 'totp-step'));
    return removed > 0;
  }

  async advanceTotpStep(userId: string, step: number): Promise<boolean> {
    const key = this.userKey(userId, 'totp-step');
    const next = String(step);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const current = await this.store.get(key);
      if (current === null) {
        if (await this.store.setIfAbsent(key, next)) return true;
        continue;
      }
      if (step <= Number(current)) return false;
      if (await this.store.compareAndSet(key, current, next)) return true;
    }
    throw new Error('KeyValueCredentialStore: the TOTP step kept changing; try again');
  }

  async setRecoveryCodes(userId: string, codeHashes: readonly string[]): Promise<void> {
    const record: RecoveryRecord = { unused: [...new Set(codeHashes)] };
    await this.store.set(this.userKey(userId, 'recovery'), JSON.stringify(record));
  }

  async useRecoveryCode(userId: string, codeHash: string): Promise<boolean> {
    const key = this.userKey(userId, 'recovery');
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const raw = await this.store.get(key);
      if (raw === null) return false;
      const record = JSON.parse(raw) as RecoveryRecord;
      if (!record.unused.includes(codeHash)) return false;
      const next: RecoveryRecord = { unused: record.unused.filter((hash) => hash !== codeHash) };
      // Of two requests presenting the same code, only the one whose swap lands first uses it.
      if (await this.store.compareAndSet(key, raw, JSON.stringify(next))) return true;
    }
    throw new Error('KeyValueCredentialStore: the recovery codes kept changing; try again');
  }

  async remainingRecoveryCodes(userId: string): Promise<number> {
    const raw = await this.store.get(this.userKey(userId, 'recovery'));
    return raw === null ? 0 : (JSON.parse(raw) as RecoveryRecord).unused.length;
  }

  ping(): Promise<void> {
    return this.store.ping();
  }

  async close(): Promise<void> {
    // The key-value store belongs to whoever made it (usually shared with sessions); closing it is theirs to do.
  }
}
