/**
 * Where a user's second factors live: passkeys (WebAuthn credentials), a TOTP secret and recovery codes. Two
 * adapters implement it, one on the kit's {@link KeyValueStore} (memory for the embedded demo, Redis) and one on
 * PostgreSQL; both pass the same contract suite. Users are named by their kit user id (`<source>|<subject>`), never
 * by a bare subject.
 */
export interface CredentialStore {
  /** The user's passkeys, oldest first. */
  listPasskeys(userId: string): Promise<StoredPasskey[]>;
  /** The passkey with this credential id, whoever owns it (a passwordless sign-in starts from the credential). */
  findPasskey(credentialId: string): Promise<StoredPasskey | undefined>;
  /** Saves a new passkey; rejects with `CredentialConflictError` when the credential id is already registered. */
  addPasskey(passkey: StoredPasskey): Promise<void>;
  /**
   * Records a successful assertion: the new signature counter, backup state and time of use. Only when the stored
   * counter is still `expectedCounter` (compare-and-set), so two concurrent assertions cannot both pass a counter
   * check; returns false when it changed in between.
   */
  recordPasskeyUse(
    credentialId: string,
    expectedCounter: number,
    use: { counter: number; backedUp: boolean; usedAt: number },
  ): Promise<boolean>;
  /** Renames one of the user's passkeys; false when the user has no such passkey. */
  renamePasskey(userId: string, credentialId: string, name: string): Promise<boolean>;
  /** Removes one of the user's passkeys; false when the user has no such passkey. */
  removePasskey(userId: string, credentialId: string): Promise<boolean>;

  /** The user's TOTP enrolment, the secret still sealed, or undefined when none. */
  getTotp(userId: string): Promise<StoredTotp | undefined>;
  /** Saves (or replaces) the user's TOTP enrolment. */
  setTotp(userId: string, totp: StoredTotp): Promise<void>;
  removeTotp(userId: string): Promise<boolean>;
  /**
   * Moves the last accepted time step forward to `step` only when it is greater than the stored one, atomically;
   * returns false for a step at or before the last accepted one, so a code is accepted at most once (replay).
   */
  advanceTotpStep(userId: string, step: number): Promise<boolean>;

  /** Replaces the user's recovery codes with these hashes (all unused). */
  setRecoveryCodes(userId: string, codeHashes: readonly string[]): Promise<void>;
  /** Marks the code with this hash used, atomically; false when it is unknown or already used. */
  useRecoveryCode(userId: string, codeHash: string): Promise<boolean>;
  /** How many of the user's recovery codes are still unused. */
  remainingRecoveryCodes(userId: string): Promise<number>;

  /** Resolves when the backing service answers; rejects with `StoreUnavailableError` otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A registered WebAuthn credential. Binary fields are base64url strings. */
export interface StoredPasskey {
  /** The credential id (base64url), unique across all users. */
  readonly credentialId: string;
  /** The kit user id that registered it. */
  readonly userId: string;
  /** The COSE public key (base64url). */
  readonly publicKey: string;
  /** The signature counter last seen; 0 for authenticators that do not count. */
  readonly counter: number;
  /** `AuthenticatorTransport` values the browser reported, for `allowCredentials` hints. */
  readonly transports: readonly string[];
  /** `singleDevice` or `multiDevice` (a synced passkey), from the registration's backup eligibility flag. */
  readonly deviceType: 'singleDevice' | 'multiDevice';
  /** Whether the credential is currently backed up (synced). */
  readonly backedUp: boolean;
  /** A name the user chose ("YubiKey", "Laptop"). */
  readonly name: string;
  /** Epoch seconds of registration and of the last use. */
  readonly createdAt: number;
  readonly lastUsedAt?: number;
}

/** A TOTP enrolment. The secret is sealed (encrypted) by the caller before it reaches the store. */
export interface StoredTotp {
  /** The secret, sealed with the key from the options (never the plain base32). */
  readonly sealedSecret: string;
  /** Epoch seconds of enrolment. */
  readonly createdAt: number;
}

/** A passkey with this credential id is already registered (to this user or another). */
export class CredentialConflictError extends Error {
  override readonly name = 'CredentialConflictError';
  readonly code = 'credential_conflict';
  constructor(message = 'this credential is already registered', options?: { cause?: unknown }) {
    super(message, options);
  }
}
