import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword } from '../../lib/util/password-hash';
import { OptionsError } from '../../lib/util/options';
import { fileUserDirectory, isWritableUserDirectory, type UserRecord } from '../../lib/accounts';

const FAST = { N: 1024, r: 8, p: 1 };
let records: UserRecord[];

beforeAll(async () => {
  records = [
    { id: 'u-alice', username: 'alice', name: 'Alice', roles: ['admin'], passwordHash: await hashPassword('alice-password', FAST) },
    { id: 'u-bob', username: 'Bob', name: 'Bob', roles: [], passwordHash: await hashPassword('bob-password', FAST) },
    {
      id: 'u-mallory',
      username: 'mallory',
      name: 'Mallory',
      roles: [],
      passwordHash: await hashPassword('mallory-password', FAST),
      disabled: true,
    },
  ];
});

describe('fileUserDirectory', () => {
  it('returns the user without its hash for the right password, matching the username case-insensitively', async () => {
    const users = fileUserDirectory(records);
    expect(await users.verifyPassword('ALICE', 'alice-password')).toEqual({ id: 'u-alice', name: 'Alice', roles: ['admin'] });
    expect(await users.verifyPassword('bob', 'bob-password')).toEqual({ id: 'u-bob', name: 'Bob', roles: [] });
  });

  it('answers null alike for a wrong password, an unknown user and a disabled user', async () => {
    const users = fileUserDirectory(records);
    expect(await users.verifyPassword('alice', 'wrong')).toBeNull();
    expect(await users.verifyPassword('nobody', 'alice-password')).toBeNull();
    expect(await users.verifyPassword('mallory', 'mallory-password')).toBeNull();
  });

  it('spends scrypt work on unknown users too, so timing does not reveal which accounts exist', async () => {
    const slow = [{ ...records[0]!, passwordHash: await hashPassword('pw', { N: 16384, r: 8, p: 1 }) }];
    const users = fileUserDirectory(slow);
    await users.verifyPassword('nobody', 'x'); // builds the decoy hash once
    const once = async (name: string) => {
      const start = process.hrtime.bigint();
      await users.verifyPassword(name, 'wrong');
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    // Interleaved, and the fastest of each kept: a busy machine only ever adds time, so the minimum is the cost.
    const knownTimes: number[] = [];
    const unknownTimes: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      knownTimes.push(await once('alice'));
      unknownTimes.push(await once('nobody'));
    }
    const known = Math.min(...knownTimes);
    const unknown = Math.min(...unknownTimes);
    expect(unknown).toBeGreaterThan(known * 0.5);
    expect(unknown).toBeGreaterThan(5);
  });

  it('reads records from a JSON file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'users-'));
    try {
      const file = join(dir, 'users.json');
      writeFileSync(file, JSON.stringify(records));
      const users = fileUserDirectory(file);
      expect(await users.findById('u-bob')).toEqual({ id: 'u-bob', name: 'Bob', roles: [] });
      expect(await users.findById('u-none')).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is not changed by later changes to the caller's records", async () => {
    const copy = records.map((r) => ({ ...r, roles: [...r.roles] }));
    const users = fileUserDirectory(copy);
    copy[1]!.roles.push('admin');
    copy[1]!.passwordHash = copy[0]!.passwordHash;
    expect(await users.verifyPassword('bob', 'bob-password')).toEqual({ id: 'u-bob', name: 'Bob', roles: [] });
  });

  it.each([
    ['a missing file', 'no/such/users.json', /cannot read users/],
    ['a non-array', { users: [] }, /expected an array/],
    [
      'a record without username',
      [{ id: 'x', name: 'X', roles: [], passwordHash: 'scrypt$1024$8$1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA' }],
      /needs a non-empty string "username"/,
    ],
    ['a plain-text password', [{ id: 'x', username: 'x', name: 'X', roles: [], passwordHash: 'hunter2' }], /bad passwordHash/],
  ])('rejects %s when built', (_label, source, message) => {
    expect(() => fileUserDirectory(source as never)).toThrow(message);
  });

  it('names its identity source: directory:local unless the source option names another directory', () => {
    expect(fileUserDirectory(records).source).toBe('directory:local');
    expect(fileUserDirectory(records, { source: 'directory:staff' }).source).toBe('directory:staff');
  });

  it.each([
    [{ sourse: 'directory:staff' }, /fileUserDirectory: unknown option "sourse" \(did you mean "source"\?\)/],
    [{ source: 'staff' }, /fileUserDirectory: source must be "<kind>:<name>"/],
    [{ source: 'oidc:https://idp.example.test' }, /fileUserDirectory: source must be "directory:<name>"/],
    [{ source: 'directory:a|b' }, /fileUserDirectory: source must be "<kind>:<name>"/],
  ])('refuses the options %j with an OptionsError', (options, message) => {
    expect(() => fileUserDirectory(records, options as never)).toThrow(OptionsError);
    expect(() => fileUserDirectory(records, options as never)).toThrow(message);
  });

  it('rejects duplicate usernames that differ only in case', () => {
    expect(() => fileUserDirectory([records[0]!, { ...records[0]!, id: 'other', username: 'ALICE' }])).toThrow(/appears twice/);
  });
});

describe('fileUserDirectory is read-only', () => {
  it('is not a writable directory, so account features refuse it when they are set up', () => {
    expect(isWritableUserDirectory(fileUserDirectory(records))).toBe(false);
  });

  it.each(['createUser', 'setPasswordHash', 'setEmail', 'setDisabled', 'remove'])(
    'refuses %s() with an error that names the writable directories, and changes nothing',
    async (operation) => {
      const users = fileUserDirectory(records) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      const error = await users[operation]!('u-alice', 'x').then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(OptionsError);
      expect((error as Error).message).toBe(
        `fileUserDirectory is read-only: ${operation}() needs a writable directory (memoryUserDirectory, redisUserDirectory or ` +
          'postgresUserDirectory); edit the file and restart to change its users',
      );
      expect(await (users as unknown as ReturnType<typeof fileUserDirectory>).verifyPassword('alice', 'alice-password')).toMatchObject({
        id: 'u-alice',
      });
    },
  );
});
