import type { OptionSpec } from '../util/options';
import type { CredentialStore } from './credential-store';

/** The part of a {@link CredentialStore} that passkeys need; every full `CredentialStore` is one. */
export type PasskeyRecords = Pick<
  CredentialStore,
  'listPasskeys' | 'findPasskey' | 'addPasskey' | 'recordPasskeyUse' | 'renamePasskey' | 'removePasskey'
>;

/** The spec of an option that takes a {@link PasskeyRecords}: a full `CredentialStore` passes as well. */
export const PASSKEY_RECORDS_OPTION: OptionSpec = {
  type: 'object',
  required: true,
  expected: 'a CredentialStore, e.g. new KeyValueCredentialStore(store)',
  check: (records: Partial<PasskeyRecords>) =>
    typeof records.findPasskey === 'function' && typeof records.recordPasskeyUse === 'function' && typeof records.addPasskey === 'function'
      ? undefined
      : 'must be a CredentialStore, e.g. new KeyValueCredentialStore(store)',
};
