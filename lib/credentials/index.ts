export type { CredentialStore, StoredPasskey, StoredTotp } from './credential-store';
export { CredentialConflictError } from './credential-store';
export { KeyValueCredentialStore } from './kv-credential-store';
export {
  PostgresCredentialStore,
  type PostgresCredentialStoreOptions,
  type PgPool,
  type PgPoolClient,
  type PgQueryResult,
} from './postgres-credential-store';
export { createSecretSealer, SealedSecretError, type SecretSealer, type SecretSealerOptions } from './secret-sealer';
export { TotpAuthenticator, type TotpAuthenticatorOptions, type TotpCheck } from './totp-authenticator';
export { RecoveryCodes, RECOVERY_CODE_COUNT } from './recovery-codes';
