import { CredentialConflictError, type StoredPasskey } from '../../lib/credentials/credential-store';
import { passkeyRecords, type PasskeyRecords } from '../../lib/credentials/passkey-records';
import { MemoryStore, type KeyValueStore } from '../../lib/store';
import { testRedisStore } from '../helpers/redis';

const passkey = (credentialId: string, userId: string, createdAt: number): StoredPasskey => ({
  credentialId,
  userId,
  publicKey: 'cHVibGlj',
  counter: 0,
  transports: ['internal'],
  deviceType: 'singleDevice',
  backedUp: false,
  name: credentialId,
  createdAt,
});

const stores: Array<[string, () => Promise<{ store: KeyValueStore; cleanup: () => Promise<void> }>]> = [
  ['MemoryStore', async () => ({ store: new MemoryStore(), cleanup: async () => undefined })],
  ['RedisStore', () => testRedisStore('passkey-records')],
];

describe.each(stores)('passkeyRecords on %s', (_name, open) => {
  let harness: { store: KeyValueStore; cleanup: () => Promise<void> };
  let records: PasskeyRecords;
  beforeEach(async () => {
    harness = await open();
    records = passkeyRecords(harness.store);
  });
  afterEach(async () => {
    await harness.cleanup();
    await harness.store.close();
  });

  it("lists a user's passkeys oldest first and finds one by credential id", async () => {
    await records.addPasskey(passkey('b', 'u|alice', 20));
    await records.addPasskey(passkey('a', 'u|alice', 10));
    await records.addPasskey(passkey('c', 'u|bob', 5));
    expect((await records.listPasskeys('u|alice')).map((p) => p.credentialId)).toEqual(['a', 'b']);
    expect((await records.findPasskey('c'))?.userId).toBe('u|bob');
    expect(await records.findPasskey('missing')).toBeUndefined();
  });

  it('registers a credential id once across all users', async () => {
    await records.addPasskey(passkey('a', 'u|alice', 1));
    await expect(records.addPasskey(passkey('a', 'u|bob', 2))).rejects.toBeInstanceOf(CredentialConflictError);
    expect(await records.listPasskeys('u|bob')).toEqual([]);
  });

  it('records a use only from the counter the caller verified against', async () => {
    await records.addPasskey(passkey('a', 'u|alice', 1));
    expect(await records.recordPasskeyUse('a', 0, { counter: 5, backedUp: true, usedAt: 9 })).toBe(true);
    expect(await records.recordPasskeyUse('a', 0, { counter: 6, backedUp: true, usedAt: 10 })).toBe(false);
    expect(await records.findPasskey('a')).toMatchObject({ counter: 5, backedUp: true, lastUsedAt: 9 });
  });

  it("renames and removes only the owner's passkey", async () => {
    await records.addPasskey(passkey('a', 'u|alice', 1));
    expect(await records.renamePasskey('u|bob', 'a', 'Stolen')).toBe(false);
    expect(await records.removePasskey('u|bob', 'a')).toBe(false);
    expect(await records.renamePasskey('u|alice', 'a', 'YubiKey')).toBe(true);
    expect((await records.findPasskey('a'))?.name).toBe('YubiKey');
    expect(await records.removePasskey('u|alice', 'a')).toBe(true);
    expect(await records.findPasskey('a')).toBeUndefined();
    expect(await records.listPasskeys('u|alice')).toEqual([]);
  });
});
