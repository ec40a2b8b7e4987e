import { createHmac, randomInt } from 'node:crypto';
import type { CredentialStore } from './credential-store';
import type { SecretSealer } from './secret-sealer';

/** How many codes a set holds. */
export const RECOVERY_CODE_COUNT = 10;

// Crockford-like alphabet without 0/O, 1/I/L and U: codes are read off paper and typed by hand.
const ALPHABET = '23456789ABCDEFGHJKMNPQRSTVWXYZ';
const GROUP = 5;
// 25 characters of 30 symbols: log2(30) x 25 = 122.7 bits. ASVS 5.0 6.5.2 lets a lookup secret of 112 bits or more
// be stored under a standard hash; a shorter one would need a salted password hash per code, and checking a typed
// code against ten scrypt hashes costs about a second of CPU per attempt.
const GROUPS = 5;
const CODE_LENGTH = GROUP * GROUPS;
// Earlier versions of the kit made codes of 10 characters (about 49 bits); a set of them keeps working until it is
// used up or replaced, as their keyed hashes are checked the same way.
const LEGACY_CODE_LENGTH = 10;
const TYPED_CODE = new RegExp(`^(?:[A-Z0-9]{${CODE_LENGTH}}|[A-Z0-9]{${LEGACY_CODE_LENGTH}})$`);

/**
 * Recovery codes: ten single-use codes (25 characters from a 30-letter alphabet in five groups, about 122 bits each),
 * shown once and stored only as keyed hashes (HMAC-SHA-256 under a key derived from the sealing key, bound to the
 * user id), so a copy of the database does not reveal them, and even with the key a code cannot be found by trying:
 * at 112 bits or more ASVS 5.0 (6.5.2) accepts a standard hash. Using a code is one atomic store operation, so a
 * code works exactly once. Looking a hash up in the store compares keyed hashes, never the codes, so its timing
 * tells an attacker nothing. Codes of the earlier 10-character format keep working until used or replaced.
 *
 * @example
 * const recovery = new RecoveryCodes(credentials, createSecretSealer({ key: sealingKey }));
 * const codes = await recovery.regenerate('local|alice'); // show once
 * await recovery.use('local|alice', codes[0]); // true, then false
 */
export class RecoveryCodes {
  private readonly keys: Buffer[];

  /** The hashing keys derive from the sealer's keys: codes hashed under a previous key still work after rotation. */
  constructor(
    private readonly credentials: CredentialStore,
    sealer: SecretSealer,
  ) {
    this.keys = sealer.derivedKeys('recovery codes');
  }

  /** Replaces the user's codes with a fresh set and returns them, formatted `XXXXX-XXXXX-XXXXX-XXXXX-XXXXX`, to show once. */
  async regenerate(userId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => {
      const raw = Array.from({ length: CODE_LENGTH }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
      return Array.from({ length: GROUPS }, (_, group) => raw.slice(group * GROUP, (group + 1) * GROUP)).join('-');
    });
    await this.credentials.setRecoveryCodes(
      userId,
      codes.map((code) => this.hash(this.keys[0] as Buffer, userId, normalize(code))),
    );
    return codes;
  }

  /** Uses one code: true the first time, false when unknown or already used. */
  async use(userId: string, code: string): Promise<boolean> {
    const normalized = normalize(code);
    if (!TYPED_CODE.test(normalized)) return false;
    for (const key of this.keys) {
      if (await this.credentials.useRecoveryCode(userId, this.hash(key, userId, normalized))) return true;
    }
    return false;
  }

  /** Removes every code of the user, used or not (the codes back up an authenticator app that is gone). */
  async clear(userId: string): Promise<void> {
    await this.credentials.setRecoveryCodes(userId, []);
  }

  /** How many unused codes the user has left. */
  remaining(userId: string): Promise<number> {
    return this.credentials.remainingRecoveryCodes(userId);
  }

  private hash(key: Buffer, userId: string, code: string): string {
    // The user id is hashed in, so one user's code is no code of another's.
    return createHmac('sha256', key).update(userId).update('\0').update(code).digest('base64url');
  }
}

/** Upper case without separators or spaces, as codes are typed by hand. */
function normalize(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, '');
}
