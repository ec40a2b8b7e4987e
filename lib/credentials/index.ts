export type { CredentialStore, StoredPasskey, StoredTotp } from './credential-store';
export { CredentialConflictError } from './credential-store';
