import { ConflictError, UnprocessableEntityError } from '../../lib/http/errors';
import type { Account, NewAccount, WritableUserDirectory } from '../../lib/accounts';
import { hashPassword } from '../../lib/util/password-hash';
import { interleavedMedians, ratiosTo } from '../helpers/timing';

/** One implementation under test: a fresh, empty directory and how to dispose of it. */
export type UserDirectoryHarness = { users: WritableUserDirectory; cleanup: () => Promise<void> };

// Cheap hashes: the contract is about storage, not scrypt's cost.
const FAST = { N: 1024, r: 8, p: 1 } as const;
const hashes = new Map<string, Promise<string>>();
/** A scrypt hash of `password`, made once per password for the whole suite. */
function hashOf(password: string): Promise<string> {
  let hash = hashes.get(password);
  if (!hash) {
    hash = hashPassword(password, FAST);
    hashes.set(password, hash);
  }
  return hash;
}

async function alice(changes: Partial<NewAccount> = {}): Promise<NewAccount> {
  return {
    id: 'u-alice',
    username: 'Alice',
    name: 'Alice Liddell',
    roles: ['admin'],
    email: 'Alice@Example.test',
    passwordHash: await hashOf('alice-password'),
    ...changes,
  };
}

/** What a call rejected with (or undefined when it resolved). */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

function expectConflict(error: unknown, code: string): void {
  expect(error).toBeInstanceOf(ConflictError);
  expect(error).toMatchObject({ status: 409, code });
}

/**
 * Creates a known account in `users`, then expects the store calls `calls` records (the caller's recorder of its
 * adapter's store) to be the same for an unknown username or address as for the known one, so the answer time does
 * not tell them apart. Answers the calls of a known username's password check.
 *
 * @example
 * expect(await expectSameStoreWorkForUnknownNames(users, calls)).toEqual(['get', 'get']);
 */
export async function expectSameStoreWorkForUnknownNames(users: WritableUserDirectory, calls: string[]): Promise<string[]> {
  await users.createUser({
    id: 'u-known',
    username: 'known',
    name: 'Known',
    email: 'known@example.test',
    passwordHash: await hashOf('known'),
  });
  const callsOf = async (operation: () => Promise<unknown>) => {
    calls.length = 0;
    await operation();
    return [...calls];
  };
  const known = await callsOf(() => users.verifyPassword('known', 'wrong'));
  expect(await callsOf(() => users.verifyPassword('unknown', 'wrong'))).toEqual(known);
  expect(await callsOf(() => users.findByEmail('unknown@example.test'))).toEqual(
    await callsOf(() => users.findByEmail('known@example.test')),
  );
  return known;
}

/**
 * The behaviour every {@link WritableUserDirectory} must show, run by `user-directory-contract.test.ts` against
 * memory, Redis (and a Redis Cluster under scripts/test-cluster.sh) and PostgreSQL. The atomic rules (unique
 * usernames and addresses, no lost update, conditional writes) are raced with many concurrent calls.
 *
 * @example
 * describeUserDirectoryContract('memoryUserDirectory', async () => ({ users: memoryUserDirectory(), cleanup: async () => {} }));
 */
export function describeUserDirectoryContract(name: string, open: () => Promise<UserDirectoryHarness>): void {
  describe(`${name} honours the WritableUserDirectory contract`, () => {
    let harness: UserDirectoryHarness;
    let users: WritableUserDirectory;
    beforeEach(async () => {
      harness = await open();
      users = harness.users;
    });
    afterEach(() => harness.cleanup());

    describe('creating and finding accounts', () => {
      it('creates an account with its defaults and finds it by id, username and address, case-insensitively, without the hash', async () => {
        const before = Date.now();
        const created = await users.createUser(await alice());
        const expected: Account = {
          id: 'u-alice',
          username: 'Alice',
          name: 'Alice Liddell',
          roles: ['admin'],
          email: 'Alice@Example.test',
          emailVerified: false,
          disabled: false,
          hasPassword: true,
          credentialVersion: 1,
          createdAt: created.createdAt,
          changedAt: created.createdAt,
        };
        expect(created).toEqual(expected);
        expect(created.createdAt).toBeGreaterThanOrEqual(before);
        expect(created.createdAt).toBeLessThanOrEqual(Date.now());
        expect(await users.findById('u-alice')).toEqual(expected);
        expect(await users.findByUsername(' ALICE ')).toEqual(expected);
        expect(await users.findByEmail('alice@example.TEST')).toEqual(expected);
        expect(JSON.stringify(await users.findById('u-alice'))).not.toContain('scrypt$');
        expect(await users.findById('u-nobody')).toBeNull();
        expect(await users.findByUsername('nobody')).toBeNull();
        expect(await users.findByEmail('nobody@example.test')).toBeNull();
        expect(await users.findByUsername('')).toBeNull();
      });

      it('gives an account without an id a random one, and keeps attributes and roles as copies', async () => {
        const attributes = { team: 'blue', level: 3, admin: true, note: null };
        const roles = ['viewer'];
        const created = await users.createUser({ username: 'carol', name: 'Carol', roles, attributes });
        expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
        roles.push('admin');
        attributes.team = 'red';
        expect(await users.findById(created.id)).toMatchObject({
          roles: ['viewer'],
          attributes: { team: 'blue', level: 3, admin: true, note: null },
        });
        expect(created).toMatchObject({ hasPassword: false, emailVerified: false });
        expect(created.email).toBeUndefined();
      });

      it('refuses a username or address another account has (in any case) and an id in use, creating nothing', async () => {
        await users.createUser(await alice());
        expectConflict(
          await rejectionOf(users.createUser(await alice({ id: 'u-2', email: 'other@example.test', username: 'aLiCe' }))),
          'username_taken',
        );
        expectConflict(
          await rejectionOf(users.createUser(await alice({ id: 'u-2', username: 'alice2', email: 'ALICE@example.test' }))),
          'email_taken',
        );
        expectConflict(await rejectionOf(users.createUser(await alice({ username: 'alice3', email: 'third@example.test' }))), 'id_taken');
        expect(await users.findById('u-2')).toBeNull();
        // The refused attempts left their other username and address free.
        expect(await users.findByUsername('alice2')).toBeNull();
        expect(await users.findByEmail('other@example.test')).toBeNull();
        await users.createUser(await alice({ id: 'u-2', username: 'alice2', email: 'other@example.test' }));
        await users.createUser(await alice({ id: 'u-3', username: 'alice3', email: 'third@example.test' }));
        expect((await users.listAccounts()).total).toBe(3);
      });

      it('lets exactly one of many concurrent creations of one username win', async () => {
        const results = await Promise.allSettled(
          Array.from({ length: 16 }, (_, index) =>
            users.createUser({ id: `u-${index}`, username: index % 2 ? 'Racer' : 'racer', name: `R${index}` }),
          ),
        );
        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
        for (const result of results) if (result.status === 'rejected') expectConflict(result.reason, 'username_taken');
        const winner = await users.findByUsername('racer');
        expect((await users.listAccounts()).accounts.map((account) => account.id)).toEqual([winner!.id]);
      });

      it('lets exactly one of many concurrent creations with one address win', async () => {
        const results = await Promise.allSettled(
          Array.from({ length: 16 }, (_, index) =>
            users.createUser({ id: `u-${index}`, username: `user${index}`, name: 'U', email: 'shared@example.test' }),
          ),
        );
        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
        const owner = await users.findByEmail('SHARED@example.test');
        expect((await users.listAccounts()).accounts.map((account) => account.id)).toEqual([owner!.id]);
      });

      it.each<[string, Partial<NewAccount>, string]>([
        ['an empty username', { username: '  ' }, 'username'],
        ['a username with a control character', { username: 'al\u0000ice' }, 'username'],
        ['a malformed address', { email: 'alice at example' }, 'email'],
        ['a plain-text password', { passwordHash: 'hunter2' }, 'passwordHash'],
        ['an id with a space', { id: 'u alice' }, 'id'],
        ['roles that are not strings', { roles: [1] as never }, 'roles'],
      ])('refuses %s with a 422 naming the field, creating nothing', async (_label, changes, field) => {
        const error = await rejectionOf(users.createUser(await alice(changes)));
        expect(error).toBeInstanceOf(UnprocessableEntityError);
        expect((error as UnprocessableEntityError).errors.map((fieldError) => fieldError.field)).toEqual([field]);
        expect((await users.listAccounts()).total).toBe(0);
      });

      it('keeps ids and usernames with separators and braces apart', async () => {
        await users.createUser({ id: 'a}:b{', username: 'x}:{y', name: 'One', email: 'one@example.test' });
        await users.createUser({ id: 'a', username: 'x', name: 'Two', email: 'two@example.test' });
        expect((await users.findById('a}:b{'))?.name).toBe('One');
        expect((await users.findById('a'))?.name).toBe('Two');
        expect((await users.findByUsername('x}:{y'))?.id).toBe('a}:b{');
        expect((await users.findByUsername('x'))?.id).toBe('a');
      });
    });

    describe('checking passwords', () => {
      it('answers the account for the right password, case-insensitively on the username, and null alike otherwise', async () => {
        await users.createUser(await alice());
        await users.createUser({ id: 'u-nopass', username: 'nopass', name: 'No Password' });
        await users.createUser({ id: 'u-off', username: 'off', name: 'Off', disabled: true, passwordHash: await hashOf('off-password') });
        expect(await users.verifyPassword('ALICE', 'alice-password')).toMatchObject({
          id: 'u-alice',
          name: 'Alice Liddell',
          roles: ['admin'],
        });
        expect(await users.verifyPassword('alice', 'Alice-password')).toBeNull();
        expect(await users.verifyPassword('nobody', 'alice-password')).toBeNull();
        expect(await users.verifyPassword('nopass', '')).toBeNull();
        expect(await users.verifyPassword('off', 'off-password')).toBeNull();
        expect(await users.verifyPassword('', 'x')).toBeNull();
      });
    });

    describe('telling nobody which accounts exist', () => {
      it('spends on an unknown username, a disabled account and one without a password the scrypt work of a known one, whatever parameters the hashes use', async () => {
        // Hashes an eighth of the default cost (N=2^12): a decoy made with the defaults would take eight times as long.
        const hash = await hashPassword('timed-password', { N: 4096, r: 8, p: 1 });
        await users.createUser({ id: 'u-timed', username: 'timed', name: 'Timed', passwordHash: hash });
        await users.createUser({ id: 'u-timed-off', username: 'timed-off', name: 'Off', disabled: true, passwordHash: hash });
        await users.createUser({ id: 'u-timed-none', username: 'timed-none', name: 'No password' });
        const medians = await interleavedMedians(
          {
            known: () => users.verifyPassword('timed', 'wrong-password'),
            unknown: () => users.verifyPassword('nobody-at-all', 'wrong-password'),
            disabled: () => users.verifyPassword('timed-off', 'timed-password'),
            passwordless: () => users.verifyPassword('timed-none', 'wrong-password'),
          },
          11,
          'cpu',
        );
        const within = { ratio: expect.any(Number), within: true };
        expect(ratiosTo(medians, 'known', 1.6)).toEqual({ unknown: within, disabled: within, passwordless: within });
      });
    });

    describe('changing the password', () => {
      it('replaces the hash, records the time and bumps the credential version', async () => {
        const created = await users.createUser(await alice());
        const changed = await users.setPasswordHash('u-alice', await hashOf('new-password'));
        expect(changed).toMatchObject({ id: 'u-alice', credentialVersion: 2, hasPassword: true });
        expect(changed!.passwordChangedAt).toBeGreaterThanOrEqual(created.createdAt);
        expect(changed!.changedAt).toBe(changed!.passwordChangedAt);
        expect(await users.verifyPassword('alice', 'alice-password')).toBeNull();
        expect(await users.verifyPassword('alice', 'new-password')).toMatchObject({ id: 'u-alice', credentialVersion: 2 });
        expect(await users.findById('u-alice')).toEqual(changed);
      });

      it('changes nothing for an unknown account, a stale credential version or a hash it could not verify', async () => {
        await users.createUser(await alice());
        expect(await users.setPasswordHash('u-nobody', await hashOf('x-password'))).toBeNull();
        expect(await users.setPasswordHash('u-alice', await hashOf('x-password'), { ifCredentialVersion: 2 })).toBeNull();
        expect(await rejectionOf(users.setPasswordHash('u-alice', 'plain-text'))).toBeInstanceOf(UnprocessableEntityError);
        expect(await users.findById('u-alice')).toMatchObject({ credentialVersion: 1 });
        expect(await users.verifyPassword('alice', 'alice-password')).not.toBeNull();
        expect(await users.setPasswordHash('u-alice', await hashOf('x-password'), { ifCredentialVersion: 1 })).toMatchObject({
          credentialVersion: 2,
        });
      });

      it('loses no change when many run at once: each bumps the version once', async () => {
        await users.createUser(await alice());
        const hash = await hashOf('racing-password');
        await Promise.all(Array.from({ length: 10 }, () => users.setPasswordHash('u-alice', hash)));
        expect(await users.findById('u-alice')).toMatchObject({ credentialVersion: 11 });
      });

      it('lets exactly one of many concurrent changes conditional on the same version win (a reset link used twice at once)', async () => {
        await users.createUser(await alice());
        const results = await Promise.all(
          Array.from({ length: 12 }, async (_, index) =>
            users.setPasswordHash('u-alice', await hashOf(`reset-${index % 3}`), { ifCredentialVersion: 1 }),
          ),
        );
        expect(results.filter((result) => result !== null)).toHaveLength(1);
        expect(await users.findById('u-alice')).toMatchObject({ credentialVersion: 2 });
      });
    });

    describe('changing the email address', () => {
      it('moves the account to a new address, frees the old one and bumps the version; the new address starts unverified', async () => {
        await users.createUser(await alice({ emailVerified: true }));
        expect(await users.findById('u-alice')).toMatchObject({ emailVerified: true, credentialVersion: 1 });
        const changed = await users.setEmail('u-alice', 'alice.new@example.test');
        expect(changed).toMatchObject({ email: 'alice.new@example.test', emailVerified: false, credentialVersion: 2 });
        expect((await users.findByEmail('ALICE.NEW@example.test'))?.id).toBe('u-alice');
        expect(await users.findByEmail('alice@example.test')).toBeNull();
        await users.createUser({ id: 'u-other', username: 'other', name: 'Other', email: 'alice@example.test' });
        expect((await users.findByEmail('alice@example.test'))?.id).toBe('u-other');
      });

      it('marks the same address verified without bumping the version, and a stale version changes nothing', async () => {
        await users.createUser(await alice());
        expect(await users.setEmail('u-alice', 'alice@example.test', { verified: true, ifCredentialVersion: 7 })).toBeNull();
        expect(await users.setEmail('u-alice', 'alice@example.test', { verified: true, ifCredentialVersion: 1 })).toMatchObject({
          email: 'alice@example.test',
          emailVerified: true,
          credentialVersion: 1,
        });
        expect((await users.findByEmail('Alice@Example.test'))?.id).toBe('u-alice');
      });

      it('refuses an address another account has, changing nothing', async () => {
        await users.createUser(await alice());
        await users.createUser({ id: 'u-bob', username: 'bob', name: 'Bob', email: 'bob@example.test' });
        expectConflict(await rejectionOf(users.setEmail('u-bob', 'ALICE@example.test')), 'email_taken');
        expect(await users.findById('u-bob')).toMatchObject({ email: 'bob@example.test', credentialVersion: 1 });
        expect((await users.findByEmail('bob@example.test'))?.id).toBe('u-bob');
        expect((await users.findByEmail('alice@example.test'))?.id).toBe('u-alice');
        expect(await rejectionOf(users.setEmail('u-bob', 'not an address'))).toBeInstanceOf(UnprocessableEntityError);
        expect(await users.setEmail('u-nobody', 'free@example.test')).toBeNull();
        // Neither refused nor failed attempts hold the address.
        await users.createUser({ id: 'u-carol', username: 'carol', name: 'Carol', email: 'free@example.test' });
      });

      it('removes the address with null, freeing it', async () => {
        await users.createUser(await alice({ emailVerified: true }));
        const changed = await users.setEmail('u-alice', null);
        expect(changed).toMatchObject({ emailVerified: false, credentialVersion: 2 });
        expect(changed!.email).toBeUndefined();
        expect(await users.findByEmail('alice@example.test')).toBeNull();
      });

      it('gives an address wanted by two accounts at once to exactly one of them', async () => {
        await users.createUser({ id: 'u-1', username: 'one', name: 'One' });
        await users.createUser({ id: 'u-2', username: 'two', name: 'Two' });
        const results = await Promise.allSettled([
          users.setEmail('u-1', 'wanted@example.test'),
          users.setEmail('u-2', 'wanted@example.test'),
        ]);
        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
        const owner = (await users.findByEmail('wanted@example.test'))!.id;
        const other = owner === 'u-1' ? 'u-2' : 'u-1';
        expect((await users.findById(owner))?.email).toBe('wanted@example.test');
        expect((await users.findById(other))?.email).toBeUndefined();
      });
    });

    describe('disabling, enabling and removing', () => {
      it('disables an account (no password sign-in, a version bump), enables it again, and ignores a repeat', async () => {
        await users.createUser(await alice());
        expect(await users.setDisabled('u-alice', true)).toMatchObject({ disabled: true, credentialVersion: 2 });
        expect(await users.verifyPassword('alice', 'alice-password')).toBeNull();
        expect(await users.findById('u-alice')).toMatchObject({ disabled: true });
        expect(await users.setDisabled('u-alice', true)).toMatchObject({ disabled: true, credentialVersion: 2 });
        expect(await users.setDisabled('u-alice', false)).toMatchObject({ disabled: false, credentialVersion: 3 });
        expect(await users.verifyPassword('alice', 'alice-password')).toMatchObject({ id: 'u-alice' });
        expect(await users.setDisabled('u-nobody', true)).toBeNull();
      });

      it('removes an account and frees its username and address', async () => {
        await users.createUser(await alice());
        expect(await users.remove('u-alice')).toBe(true);
        expect(await users.remove('u-alice')).toBe(false);
        expect(await users.findById('u-alice')).toBeNull();
        expect(await users.findByUsername('alice')).toBeNull();
        expect(await users.findByEmail('alice@example.test')).toBeNull();
        expect(await users.verifyPassword('alice', 'alice-password')).toBeNull();
        expect((await users.listAccounts()).total).toBe(0);
        await users.createUser(await alice({ id: 'u-alice-2' }));
        expect((await users.findByUsername('alice'))?.id).toBe('u-alice-2');
      });
    });

    describe('listing for an admin page', () => {
      beforeEach(async () => {
        const people = ['dave', 'Bob', 'alice', 'Eve', 'carol', 'frank', 'grace'];
        for (const [index, username] of people.entries()) {
          await users.createUser({
            id: `u-${index}`,
            username,
            name: `${username} Person`,
            email: `${username.toLowerCase()}@corp-${index % 2}.example`,
          });
        }
        await users.createUser({ id: 'u-pct', username: 'per%cent_', name: 'Literal', email: 'literal@example.test' });
      });

      it('pages accounts in username order, case-insensitively, with the total', async () => {
        const first = await users.listAccounts({ limit: 3 });
        expect(first.accounts.map((account) => account.username)).toEqual(['alice', 'Bob', 'carol']);
        expect(first).toMatchObject({ total: 8, offset: 0, limit: 3 });
        const last = await users.listAccounts({ offset: 6, limit: 3 });
        expect(last.accounts.map((account) => account.username)).toEqual(['grace', 'per%cent_']);
        expect((await users.listAccounts({ offset: 20 })).accounts).toEqual([]);
        expect((await users.listAccounts({ offset: 20 })).total).toBe(8);
        expect(JSON.stringify(first)).not.toContain('scrypt$');
      });

      it('finds text in the username, the name or the address, case-insensitively, taking % and _ literally', async () => {
        expect((await users.listAccounts({ search: 'BOB' })).accounts.map((account) => account.id)).toEqual(['u-1']);
        expect((await users.listAccounts({ search: 'corp-1' })).accounts.map((account) => account.username)).toEqual([
          'Bob',
          'Eve',
          'frank',
        ]);
        expect((await users.listAccounts({ search: 'person' })).total).toBe(7);
        expect((await users.listAccounts({ search: '%' })).accounts.map((account) => account.id)).toEqual(['u-pct']);
        expect((await users.listAccounts({ search: 't_' })).accounts.map((account) => account.id)).toEqual(['u-pct']);
        expect((await users.listAccounts({ search: 'nobody-like-this' })).total).toBe(0);
      });

      it.each([{ limit: 0 }, { limit: 501 }, { offset: -1 }, { offset: 1.5 }, { search: 'a\nb' }])(
        'refuses the query %j with a 422',
        async (query) => {
          expect(await rejectionOf(users.listAccounts(query))).toBeInstanceOf(UnprocessableEntityError);
        },
      );
    });
  });
}
