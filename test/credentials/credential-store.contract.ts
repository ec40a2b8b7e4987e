import { CredentialConflictError, type CredentialStore, type StoredPasskey } from '../../lib/credentials';

/** One implementation under test: a fresh, empty store and how to dispose of it. */
export type CredentialStoreHarness = { store: CredentialStore; cleanup: () => Promise<void> };

/** A passkey record for the contract, with the given fields changed. */
export function passkeyOf(credentialId: string, userId: string, changes: Partial<StoredPasskey> = {}): StoredPasskey {
  return {
    credentialId,
    userId,
    publicKey: `pk-${credentialId}`,
    counter: 0,
    transports: ['internal', 'hybrid'],
    deviceType: 'multiDevice',
    backedUp: true,
    name: 'Laptop',
    createdAt: 1_800_000_000,
    ...changes,
  };
}

const ALICE = 'local|alice';
const BOB = 'local|bob';

/**
 * The behaviour every {@link CredentialStore} adapter must show, run by `credential-store-contract.test.ts`
 * against each of them. The atomic rules (replay, single use, counter compare-and-set) are raced with many
 * concurrent calls: exactly one may win.
 *
 * @example
 * describeCredentialStoreContract('KeyValueCredentialStore on MemoryStore', async () => ({ store, cleanup }));
 */
export function describeCredentialStoreContract(name: string, open: () => Promise<CredentialStoreHarness>): void {
  describe(`${name} honours the CredentialStore contract`, () => {
    let harness: CredentialStoreHarness;
    let store: CredentialStore;
    beforeEach(async () => {
      harness = await open();
      store = harness.store;
    });
    afterEach(() => harness.cleanup());

    describe('passkeys', () => {
      it('lists a user’s passkeys oldest first and never another user’s', async () => {
        await store.addPasskey(passkeyOf('cred-b', ALICE, { createdAt: 1_800_000_200, lastUsedAt: 1_800_000_300 }));
        await store.addPasskey(
          passkeyOf('cred-a', ALICE, { createdAt: 1_800_000_100, transports: [], deviceType: 'singleDevice', backedUp: false }),
        );
        await store.addPasskey(passkeyOf('cred-c', BOB));
        const listed = await store.listPasskeys(ALICE);
        expect(listed).toEqual([
          passkeyOf('cred-a', ALICE, { createdAt: 1_800_000_100, transports: [], deviceType: 'singleDevice', backedUp: false }),
          passkeyOf('cred-b', ALICE, { createdAt: 1_800_000_200, lastUsedAt: 1_800_000_300 }),
        ]);
        expect((await store.listPasskeys(BOB)).map((passkey) => passkey.credentialId)).toEqual(['cred-c']);
        expect(await store.listPasskeys('local|nobody')).toEqual([]);
      });

      it('finds a passkey by credential id whoever owns it', async () => {
        await store.addPasskey(passkeyOf('cred-x', BOB));
        expect(await store.findPasskey('cred-x')).toEqual(passkeyOf('cred-x', BOB));
        expect(await store.findPasskey('cred-missing')).toBeUndefined();
      });

      it('refuses a credential id already registered, to the same user or another, keeping the first', async () => {
        await store.addPasskey(passkeyOf('cred-1', ALICE));
        await expect(store.addPasskey(passkeyOf('cred-1', ALICE, { name: 'again' }))).rejects.toBeInstanceOf(CredentialConflictError);
        await expect(store.addPasskey(passkeyOf('cred-1', BOB))).rejects.toBeInstanceOf(CredentialConflictError);
        expect(await store.findPasskey('cred-1')).toEqual(passkeyOf('cred-1', ALICE));
        expect(await store.listPasskeys(BOB)).toEqual([]);
      });

      it('lets exactly one of many concurrent registrations of one credential id win', async () => {
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, index) => store.addPasskey(passkeyOf('cred-race', index % 2 ? ALICE : BOB))),
        );
        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
        const owner = (await store.findPasskey('cred-race'))?.userId;
        expect((await store.listPasskeys(owner as string)).map((passkey) => passkey.credentialId)).toEqual(['cred-race']);
      });

      it('records a use only from the expected counter (compare-and-set)', async () => {
        await store.addPasskey(passkeyOf('cred-1', ALICE, { counter: 5 }));
        expect(await store.recordPasskeyUse('cred-1', 4, { counter: 9, backedUp: false, usedAt: 1_800_000_500 })).toBe(false);
        expect(await store.recordPasskeyUse('cred-1', 5, { counter: 6, backedUp: false, usedAt: 1_800_000_500 })).toBe(true);
        expect(await store.findPasskey('cred-1')).toEqual(
          passkeyOf('cred-1', ALICE, { counter: 6, backedUp: false, lastUsedAt: 1_800_000_500 }),
        );
        expect(await store.recordPasskeyUse('cred-missing', 0, { counter: 1, backedUp: false, usedAt: 1 })).toBe(false);
      });

      it('lets exactly one of many concurrent uses from the same counter pass', async () => {
        await store.addPasskey(passkeyOf('cred-1', ALICE, { counter: 10 }));
        const wins = await Promise.all(
          Array.from({ length: 25 }, (_, index) =>
            store.recordPasskeyUse('cred-1', 10, { counter: 11 + index, backedUp: true, usedAt: 1 }),
          ),
        );
        expect(wins.filter(Boolean)).toHaveLength(1);
        const winner = wins.indexOf(true);
        expect((await store.findPasskey('cred-1'))?.counter).toBe(11 + winner);
      });

      it('renames and removes only the owner’s passkey', async () => {
        await store.addPasskey(passkeyOf('cred-1', ALICE));
        expect(await store.renamePasskey(BOB, 'cred-1', 'stolen')).toBe(false);
        expect(await store.removePasskey(BOB, 'cred-1')).toBe(false);
        expect(await store.renamePasskey(ALICE, 'cred-1', 'YubiKey 5')).toBe(true);
        expect((await store.findPasskey('cred-1'))?.name).toBe('YubiKey 5');
        expect(await store.renamePasskey(ALICE, 'cred-missing', 'x')).toBe(false);
        expect(await store.removePasskey(ALICE, 'cred-1')).toBe(true);
        expect(await store.removePasskey(ALICE, 'cred-1')).toBe(false);
        expect(await store.findPasskey('cred-1')).toBeUndefined();
        expect(await store.listPasskeys(ALICE)).toEqual([]);
        // The credential id can be registered again once removed.
        await store.addPasskey(passkeyOf('cred-1', BOB));
        expect((await store.findPasskey('cred-1'))?.userId).toBe(BOB);
      });

      it('keeps user ids with separators and braces apart', async () => {
        await store.addPasskey(passkeyOf('cred-1', 'oidc|a}:b{'));
        await store.addPasskey(passkeyOf('cred-2', 'oidc|a'));
        expect((await store.listPasskeys('oidc|a}:b{')).map((passkey) => passkey.credentialId)).toEqual(['cred-1']);
        expect((await store.listPasskeys('oidc|a')).map((passkey) => passkey.credentialId)).toEqual(['cred-2']);
      });
    });

    describe('TOTP', () => {
      it('saves, replaces, reads and removes an enrolment per user', async () => {
        expect(await store.getTotp(ALICE)).toBeUndefined();
        await store.setTotp(ALICE, { sealedSecret: 'v1.k.iv.one', createdAt: 1_800_000_000 });
        await store.setTotp(ALICE, { sealedSecret: 'v1.k.iv.two', createdAt: 1_800_000_100 });
        expect(await store.getTotp(ALICE)).toEqual({ sealedSecret: 'v1.k.iv.two', createdAt: 1_800_000_100 });
        expect(await store.getTotp(BOB)).toBeUndefined();
        expect(await store.removeTotp(BOB)).toBe(false);
        expect(await store.removeTotp(ALICE)).toBe(true);
        expect(await store.getTotp(ALICE)).toBeUndefined();
        expect(await store.removeTotp(ALICE)).toBe(false);
      });

      it('accepts each time step at most once and never one at or before the last accepted', async () => {
        expect(await store.advanceTotpStep(ALICE, 60_000_000)).toBe(true);
        expect(await store.advanceTotpStep(ALICE, 60_000_000)).toBe(false);
        expect(await store.advanceTotpStep(ALICE, 59_999_999)).toBe(false);
        expect(await store.advanceTotpStep(ALICE, 60_000_001)).toBe(true);
        // Another user's steps are their own.
        expect(await store.advanceTotpStep(BOB, 60_000_000)).toBe(true);
      });

      it('lets exactly one of many concurrent presentations of one step pass', async () => {
        const wins = await Promise.all(Array.from({ length: 30 }, () => store.advanceTotpStep(ALICE, 60_000_010)));
        expect(wins.filter(Boolean)).toHaveLength(1);
      });

      it('lets only the highest step stand when several race', async () => {
        const wins = await Promise.all(Array.from({ length: 10 }, (_, index) => store.advanceTotpStep(ALICE, 60_000_100 + index)));
        expect(wins.some(Boolean)).toBe(true);
        expect(await store.advanceTotpStep(ALICE, 60_000_109)).toBe(false);
        expect(await store.advanceTotpStep(ALICE, 60_000_110)).toBe(true);
      });
    });

    describe('recovery codes', () => {
      const hashes = Array.from({ length: 10 }, (_, index) => `hash-${index}`);

      it('uses each code once and counts the rest', async () => {
        expect(await store.remainingRecoveryCodes(ALICE)).toBe(0);
        await store.setRecoveryCodes(ALICE, hashes);
        expect(await store.remainingRecoveryCodes(ALICE)).toBe(10);
        expect(await store.useRecoveryCode(ALICE, 'hash-3')).toBe(true);
        expect(await store.useRecoveryCode(ALICE, 'hash-3')).toBe(false);
        expect(await store.useRecoveryCode(ALICE, 'hash-unknown')).toBe(false);
        expect(await store.useRecoveryCode(BOB, 'hash-4')).toBe(false);
        expect(await store.remainingRecoveryCodes(ALICE)).toBe(9);
      });

      it('lets exactly one of many concurrent uses of one code pass, and distinct codes all pass', async () => {
        await store.setRecoveryCodes(ALICE, hashes);
        const same = await Promise.all(Array.from({ length: 20 }, () => store.useRecoveryCode(ALICE, 'hash-0')));
        expect(same.filter(Boolean)).toHaveLength(1);
        const distinct = await Promise.all(hashes.slice(1).map((hash) => store.useRecoveryCode(ALICE, hash)));
        expect(distinct.every(Boolean)).toBe(true);
        expect(await store.remainingRecoveryCodes(ALICE)).toBe(0);
      });

      it('replaces every code when regenerated, used or not', async () => {
        await store.setRecoveryCodes(ALICE, hashes);
        await store.useRecoveryCode(ALICE, 'hash-1');
        await store.setRecoveryCodes(ALICE, ['new-1', 'new-2', 'new-1']);
        expect(await store.remainingRecoveryCodes(ALICE)).toBe(2);
        expect(await store.useRecoveryCode(ALICE, 'hash-2')).toBe(false);
        expect(await store.useRecoveryCode(ALICE, 'new-2')).toBe(true);
      });
    });

    it('answers ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
