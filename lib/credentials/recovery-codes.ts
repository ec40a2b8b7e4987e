import { createHmac, randomInt } from 'node:crypto';
import type { CredentialStore } from './credential-store';
import type { SecretSealer } from './secret-sealer';

/** How many codes a set holds. */
export const RECOVERY_CODE_COUNT = 10;

// Crockford-like alphabet without 0/O, 1/I/L and U: codes are read off paper and typed by hand.
const ALPHABET = '23456789ABCDEFGHJKMNPQRSTVWXYZ';
const GROUP = 5;

/**
 * Recovery codes: ten single-use codes (10 characters from a 30-letter alphabet, about 49 bits each), shown once
 * and stored only as keyed hashes (HMAC-SHA-256 under a key derived from the sealing key), so a copy of the
 * database does not reveal them. Using a code is one atomic store operation, so a code works exactly once.
 * Looking a hash up in the store compares keyed hashes, never the codes, so its timing tells an attacker nothing.
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

  /** Replaces the user's codes with a fresh set and returns them, formatted `XXXXX-XXXXX`, to show once. */
  async regenerate(userId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => {
      const raw = Array.from({ length: GROUP * 2 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
      return `${raw.slice(0, GROUP)}-${raw.slice(GROUP)}`;
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
    if (!/^[A-Z0-9]{10}$/.test(normalized)) return false;
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
