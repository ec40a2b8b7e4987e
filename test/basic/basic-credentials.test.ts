import crypto from 'node:crypto';
import { basicCredentials } from '../../lib/basic/basic-credentials';
import { hashPassword } from '../../lib/portal/password-hash';

// Cheap scrypt parameters keep the suite fast; the cost does not change what is being tested.
const CHEAP = { N: 1024, r: 8, p: 1 };

afterEach(() => jest.restoreAllMocks());

describe('basicCredentials', () => {
  let verify: ReturnType<typeof basicCredentials>;
  beforeAll(async () => {
    verify = basicCredentials({
      alice: 'alice-plain-password',
      bob: { passwordHash: await hashPassword('bob-password', CHEAP), name: 'Bob', roles: ['editor'] },
      carol: { password: 'carol-password', roles: ['viewer'] },
      dave: await hashPassword('dave-password', CHEAP),
    });
  });

  it('accepts plain and hashed entries with the right password', async () => {
    expect(await verify('alice', 'alice-plain-password', undefined)).toEqual({ id: 'alice', name: 'alice', roles: [] });
    expect(await verify('bob', 'bob-password', undefined)).toEqual({ id: 'bob', name: 'Bob', roles: ['editor'] });
    expect(await verify('carol', 'carol-password', undefined)).toEqual({ id: 'carol', name: 'carol', roles: ['viewer'] });
    expect(await verify('dave', 'dave-password', undefined)).toEqual({ id: 'dave', name: 'dave', roles: [] });
  });

  it.each([
    ['a wrong plain password', 'alice', 'wrong'],
    ['a wrong hashed password', 'bob', 'wrong'],
    ['another user’s password', 'carol', 'alice-plain-password'],
    ['the stored hash itself as the password', 'dave', 'scrypt$1024$8$1$'],
    ['an unknown user', 'mallory', 'alice-plain-password'],
    ['a user-id differing only in case', 'Alice', 'alice-plain-password'],
    ['an Object.prototype name', 'constructor', ''],
  ])('refuses %s', async (_name, username, password) => {
    expect(await verify(username, password, undefined)).toBeNull();
  });

  it('does the same work for every user-id, known or not, plain or hashed', async () => {
    const equal = jest.spyOn(crypto, 'timingSafeEqual');
    const scrypt = jest.spyOn(crypto, 'scrypt');
    const work: Record<string, [number, number]> = {};
    for (const [username, password] of [
      ['alice', 'alice-plain-password'],
      ['alice', 'wrong'],
      ['bob', 'bob-password'],
      ['bob', 'wrong'],
      ['mallory', 'anything'],
    ] as const) {
      equal.mockClear();
      scrypt.mockClear();
      await verify(username, password, undefined);
      work[`${username}/${password}`] = [equal.mock.calls.length, scrypt.mock.calls.length];
    }
    expect(new Set(Object.values(work).map(String))).toEqual(new Set(['2,1']));
  });

  it('uses no scrypt at all for a table of plain passwords, and one digest comparison per call', async () => {
    const plainOnly = basicCredentials({ svc: 'service-password' });
    const equal = jest.spyOn(crypto, 'timingSafeEqual');
    const scrypt = jest.spyOn(crypto, 'scrypt');
    await plainOnly('svc', 'service-password', undefined);
    await plainOnly('nobody', 'service-password', undefined);
    expect([equal.mock.calls.length, scrypt.mock.calls.length]).toEqual([2, 0]);
  });

  it('compares plain passwords after Unicode NFC normalisation, as hashed ones are', async () => {
    const table = basicCredentials({ erika: 'p\u00e4ss' });
    expect(await table('erika', 'pa\u0308ss', undefined)).not.toBeNull();
    expect(await table('erika', 'pass', undefined)).toBeNull();
  });

  it('hands out a fresh user object each time', async () => {
    const first = await verify('bob', 'bob-password', undefined);
    (first?.roles as string[]).push('admin');
    expect((await verify('bob', 'bob-password', undefined))?.roles).toEqual(['editor']);
  });
});

describe('basicCredentials: the table is validated when it is built', () => {
  it.each<[string, unknown, RegExp]>([
    ['a user-id with a colon', { 'a:b': 'x' }, /user-id "a:b" must be non-empty, without ":"/],
    ['an empty user-id', { '': 'x' }, /user-id "" must be non-empty/],
    [
      'both password and passwordHash',
      { a: { password: 'x', passwordHash: 'scrypt$…' } },
      /password and passwordHash cannot be used together/,
    ],
    ['neither password nor passwordHash', { a: { roles: [] } }, /the entry of "a": give one of password, passwordHash/],
    ['an empty password', { a: '' }, /password must be a non-empty string/],
    [
      'a hash given as a plain password',
      { a: { password: 'scrypt$1024$8$1$abc$def' } },
      /looks like an scrypt hash; pass it as passwordHash/,
    ],
    ['a malformed hash', { a: 'scrypt$broken' }, /expected "scrypt\$N\$r\$p\$salt\$hash"/],
    [
      'an unknown entry option',
      { a: { password: 'x', role: 'admin' } },
      /the entry of "a": unknown option "role" \(did you mean "roles"\?\)/,
    ],
    ['a misspelled passwordHash', { a: { passwordHsah: 'scrypt$…' } }, /unknown option "passwordHsah" \(did you mean "passwordHash"\?\)/],
    ['roles that are not a list', { a: { password: 'x', roles: 'admin' } }, /the entry of "a": roles must be an array of role names/],
    ['an empty table', {}, /empty; nobody could log in/],
    ['no table', undefined, /pass a table of users/],
  ])('throws a TypeError for %s', (_name, table, message) => {
    expect(() => basicCredentials(table as never)).toThrow(TypeError);
    expect(() => basicCredentials(table as never)).toThrow(message);
  });
});
