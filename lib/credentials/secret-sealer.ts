import { createCipheriv, createDecipheriv, createHash, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';

/** Options of {@link createSecretSealer}. */
export interface SecretSealerOptions {
  /** The 32-byte AES-256-GCM key that seals new secrets (a Buffer, or 64 hex characters / 43 base64url characters). */
  key: Buffer | string;
  /**
   * Keys that sealed secrets in the past: they still open them, never seal. Rotation: make the new key `key`, move
   * the old one here, and re-seal secrets as users sign in (see `SecretSealer.needsResealing`).
   */
  previousKeys?: ReadonlyArray<Buffer | string>;
}

/** Seals (encrypts and authenticates) a user's secret for storage, bound to that user. */
export interface SecretSealer {
  /** `v1.<key id>.<iv>.<ciphertext+tag>`, base64url parts; the user id is the associated data. */
  seal(userId: string, secret: string): string;
  /** The secret, or throws `SealedSecretError` when the text was not sealed for this user by a known key. */
  open(userId: string, sealed: string): string;
  /** True when `sealed` was made with a previous key, so the caller may seal it again with the current one. */
  needsResealing(sealed: string): boolean;
  /** 32-byte keys derived from the current key, then the previous ones, for another use (HKDF, `purpose` as info). */
  derivedKeys(purpose: string): Buffer[];
}

/** A sealed secret that does not open: tampered with, copied from another user, or sealed by an unknown key. */
export class SealedSecretError extends Error {
  override readonly name = 'SealedSecretError';
  readonly code = 'sealed_secret_invalid';
  constructor(message = 'the sealed secret does not open with the configured keys') {
    super(message);
  }
}

const OPTIONS: OptionSchema = {
  key: { type: ['buffer', 'string'], required: true, expected: 'a 32-byte key (Buffer, 64 hex or 43 base64url characters)' },
  previousKeys: { type: 'array' },
};

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

function keyBytes(who: string, key: unknown): Buffer {
  let bytes: Buffer | undefined;
  if (Buffer.isBuffer(key)) bytes = key;
  else if (typeof key === 'string' && /^[0-9a-f]{64}$/i.test(key)) bytes = Buffer.from(key, 'hex');
  else if (typeof key === 'string' && /^[A-Za-z0-9_-]{43}$/.test(key)) bytes = Buffer.from(key, 'base64url');
  if (bytes?.length !== 32) {
    throw new OptionsError(`${who} must be 32 random bytes (a Buffer, 64 hex or 43 base64url characters), e.g. crypto.randomBytes(32)`);
  }
  return bytes;
}

/** A short public name of a key, so a sealed secret says which key opens it without revealing anything of it. */
function keyId(bytes: Buffer): string {
  return createHash('sha256').update('express-sso-kit sealing key id\0').update(bytes).digest('base64url').slice(0, 8);
}

/**
 * Builds the AES-256-GCM sealer for TOTP secrets at rest. The key objects are built once here; each seal uses a
 * fresh random IV, and the user id is authenticated with the ciphertext, so a sealed secret copied to another
 * user's record does not open.
 *
 * @example
 * const sealer = createSecretSealer({ key: process.env.TOTP_SEALING_KEY! });
 * const sealed = sealer.seal('local|alice', 'JBSWY3DPEHPK3PXP');
 * sealer.open('local|alice', sealed); // 'JBSWY3DPEHPK3PXP'
 */
export function createSecretSealer(options: SecretSealerOptions): SecretSealer {
  checkOptions('createSecretSealer', options, OPTIONS);
  const current = keyBytes('createSecretSealer: key', options.key);
  const currentId = keyId(current);
  const keys = new Map<string, KeyObject>([[currentId, createSecretKey(current)]]);
  const allBytes = [current];
  (options.previousKeys ?? []).forEach((previous, index) => {
    const bytes = keyBytes(`createSecretSealer: previousKeys[${index}]`, previous);
    const id = keyId(bytes);
    if (!keys.has(id)) {
      keys.set(id, createSecretKey(bytes));
      allBytes.push(bytes);
    }
  });
  const currentKey = keys.get(currentId) as KeyObject;

  return {
    seal(userId, secret) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', currentKey, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(userId, 'utf8'));
      const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return [VERSION, currentId, iv.toString('base64url'), body.toString('base64url')].join('.');
    },
    open(userId, sealed) {
      const [version, id, ivText, bodyText, extra] = sealed.split('.');
      const key = id === undefined ? undefined : keys.get(id);
      if (version !== VERSION || key === undefined || ivText === undefined || bodyText === undefined || extra !== undefined) {
        throw new SealedSecretError();
      }
      const iv = Buffer.from(ivText, 'base64url');
      const body = Buffer.from(bodyText, 'base64url');
      if (iv.length !== IV_BYTES || body.length <= TAG_BYTES) throw new SealedSecretError();
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(userId, 'utf8'));
        decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
        return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        // GCM refuses a wrong user id (associated data), a wrong key or any changed byte alike.
        throw new SealedSecretError();
      }
    },
    needsResealing(sealed) {
      return sealed.split('.')[1] !== currentId;
    },
    derivedKeys(purpose) {
      return allBytes.map((bytes) => Buffer.from(hkdfSync('sha256', bytes, Buffer.alloc(0), `express-sso-kit ${purpose}`, 32)));
    },
  };
}
