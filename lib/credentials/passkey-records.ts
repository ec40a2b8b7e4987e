import type { KeyValueStore } from '../store/port';
import type { OptionSpec } from '../util/options';
import { CredentialConflictError, type CredentialStore, type StoredPasskey } from './credential-store';

/** The part of a {@link CredentialStore} that passkeys need; every full `CredentialStore` is one. */
export type PasskeyRecords = Pick<
  CredentialStore,
  'listPasskeys' | 'findPasskey' | 'addPasskey' | 'recordPasskeyUse' | 'renamePasskey' | 'removePasskey'
>;

/** The spec of an option that takes a {@link PasskeyRecords}: a full `CredentialStore` passes as well. */
export const PASSKEY_RECORDS_OPTION: OptionSpec = {
  type: 'object',
  required: true,
  expected: 'a CredentialStore or passkeyRecords(store)',
  check: (records: Partial<PasskeyRecords>) =>
    typeof records.findPasskey === 'function' && typeof records.recordPasskeyUse === 'function' && typeof records.addPasskey === 'function'
      ? undefined
      : 'must be a CredentialStore or passkeyRecords(store)',
};

// Each passkey is one key and each user's list one set; a credential id is base64url, so it never holds a brace.
const passkeyKey = (credentialId: string): string => `passkey:{${credentialId}}`;
const userKey = (userId: string): string => `passkeys-of:{${userId}}`;

function parse(text: string | null): StoredPasskey | undefined {
  return text === null ? undefined : (JSON.parse(text) as StoredPasskey);
}

/**
 * Passkeys kept in the kit's {@link KeyValueStore} (Redis, or memory for a single process): one record per
 * credential id, claimed with SET NX so a credential id is registered once across all users, and a set of
 * credential ids per user. Changes to a record are compare-and-set on its whole value, so a signature counter
 * only moves forward once per value even with concurrent assertions.
 *
 * @example
 * const passkeys = passkeyRecords(store);
 * const ceremonies = new PasskeyCeremonies({ store, passkeys, rpId: 'example.com', rpName: 'Example' });
 */
export function passkeyRecords(store: KeyValueStore): PasskeyRecords {
  async function change(credentialId: string, edit: (passkey: StoredPasskey) => StoredPasskey | undefined): Promise<boolean> {
    // A concurrent change makes the swap fail; read again and retry a few times rather than lose either change.
    for (let tries = 0; tries < 5; tries += 1) {
      const current = await store.get(passkeyKey(credentialId));
      const passkey = parse(current);
      if (current === null || passkey === undefined) return false;
      const next = edit(passkey);
      if (next === undefined) return false;
      if (await store.compareAndSet(passkeyKey(credentialId), current, JSON.stringify(next))) return true;
    }
    return false;
  }

  return {
    async listPasskeys(userId) {
      const ids = await store.members(userKey(userId));
      const found = await Promise.all(ids.map(async (id) => parse(await store.get(passkeyKey(id)))));
      return found
        .filter((passkey): passkey is StoredPasskey => passkey !== undefined && passkey.userId === userId)
        .sort((a, b) => a.createdAt - b.createdAt || a.credentialId.localeCompare(b.credentialId));
    },
    async findPasskey(credentialId) {
      return parse(await store.get(passkeyKey(credentialId)));
    },
    async addPasskey(passkey) {
      if (!(await store.setIfAbsent(passkeyKey(passkey.credentialId), JSON.stringify(passkey)))) throw new CredentialConflictError();
      await store.addToSet(userKey(passkey.userId), [passkey.credentialId]);
      await store.confirmWrites([passkeyKey(passkey.credentialId), userKey(passkey.userId)]);
    },
    async recordPasskeyUse(credentialId, expectedCounter, use) {
      // Only the swap from the counter this caller verified against counts: a second assertion that checked the
      // same stored counter loses, so a cloned authenticator racing the original cannot pass twice.
      const current = await store.get(passkeyKey(credentialId));
      const passkey = parse(current);
      if (current === null || passkey === undefined || passkey.counter !== expectedCounter) return false;
      const next: StoredPasskey = { ...passkey, counter: use.counter, backedUp: use.backedUp, lastUsedAt: use.usedAt };
      return store.compareAndSet(passkeyKey(credentialId), current, JSON.stringify(next));
    },
    async renamePasskey(userId, credentialId, name) {
      return change(credentialId, (passkey) => (passkey.userId === userId ? { ...passkey, name } : undefined));
    },
    async removePasskey(userId, credentialId) {
      const passkey = parse(await store.get(passkeyKey(credentialId)));
      if (passkey === undefined || passkey.userId !== userId) return false;
      await store.removeFromSet(userKey(userId), [credentialId]);
      const removed = (await store.delete(passkeyKey(credentialId))) > 0;
      await store.confirmWrites([passkeyKey(credentialId), userKey(userId)]);
      return removed;
    },
  };
}
