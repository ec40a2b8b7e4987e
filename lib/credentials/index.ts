export type { CredentialStore, StoredPasskey, StoredTotp } from './credential-store';
export { CredentialConflictError } from './credential-store';
export { passkeyRecords, type PasskeyRecords } from './passkey-records';
export { PasskeyCeremonies, PasskeyVerificationError, passkeyMethods, passkeyUserHandle } from './passkey-ceremonies';
export type { PasskeyAssertion, PasskeyCeremonyOptions, PasskeyRefusal, PasskeyUser } from './passkey-ceremonies';
export { passkeyOriginAllowed } from './passkey-origin';
