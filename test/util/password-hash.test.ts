import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as kit from '../../lib';
import * as portal from '../../lib/portal';
import * as legacyPath from '../../lib/portal/password-hash';
import { DEFAULT_SCRYPT_PARAMETERS, hashPassword, parsePasswordHash, verifyPasswordHash } from '../../lib/util/password-hash';

const FAST = { N: 1024, r: 8, p: 1 };

describe('hashPassword', () => {
  it('produces scrypt$N$r$p$salt$hash with the default cost parameters', async () => {
    const encoded = await hashPassword('alice-password');
    expect(encoded).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(parsePasswordHash(encoded)).toMatchObject(DEFAULT_SCRYPT_PARAMETERS);
  });

  it('salts every hash, so equal passwords give different hashes', async () => {
    expect(await hashPassword('same', FAST)).not.toBe(await hashPassword('same', FAST));
  });

  it('refuses an empty password and a cost that is not a power of two', async () => {
    await expect(hashPassword('')).rejects.toThrow(TypeError);
    await expect(hashPassword('x', { N: 1000 })).rejects.toThrow(/N must be a power of two/);
  });
});

describe('verifyPasswordHash', () => {
  it('accepts the right password and rejects a wrong one', async () => {
    const encoded = await hashPassword('alice-password', FAST);
    await expect(verifyPasswordHash('alice-password', encoded)).resolves.toBe(true);
    await expect(verifyPasswordHash('alice-passwore', encoded)).resolves.toBe(false);
    await expect(verifyPasswordHash('', encoded)).resolves.toBe(false);
  });

  it('treats canonically equal Unicode spellings of a password as the same password', async () => {
    const encoded = await hashPassword('caf\u00e9', FAST);
    await expect(verifyPasswordHash('cafe\u0301', encoded)).resolves.toBe(true);
  });

  it('uses the cost parameters stored in the hash, not the defaults', async () => {
    const encoded = await hashPassword('pw', { N: 2048, r: 4, p: 2 });
    expect(parsePasswordHash(encoded)).toMatchObject({ N: 2048, r: 4, p: 2 });
    await expect(verifyPasswordHash('pw', encoded)).resolves.toBe(true);
  });
});

describe('parsePasswordHash', () => {
  it.each([
    ['not a hash'],
    ['bcrypt$10$abc'],
    ['scrypt$1024$8$1$c2FsdHNhbHQ$'],
    ['scrypt$1000$8$1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA'],
    ['scrypt$4194304$8$1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA'],
    ['scrypt$1024$8$1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA'],
  ])('rejects the malformed or dangerous hash %s with a TypeError', (encoded) => {
    expect(() => parsePasswordHash(encoded)).toThrow(TypeError);
  });
});

describe('where the hasher lives', () => {
  it('is one hasher, exported by lib/util, the portal and the package alike', () => {
    for (const module of [portal, kit, legacyPath]) {
      expect(module.hashPassword).toBe(hashPassword);
      expect(module.verifyPasswordHash).toBe(verifyPasswordHash);
      expect(module.parsePasswordHash).toBe(parsePasswordHash);
    }
    for (const module of [portal, legacyPath]) expect(module.DEFAULT_SCRYPT_PARAMETERS).toBe(DEFAULT_SCRYPT_PARAMETERS);
  });

  it('lets Basic verify hashes without importing the portal (lib/basic sits below lib/portal)', () => {
    const basic = join(__dirname, '../../lib/basic');
    const imports = readdirSync(basic)
      .filter((file) => file.endsWith('.ts'))
      .flatMap((file) => [...readFileSync(join(basic, file), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => `${file}: ${m[1]}`));
    expect(imports.filter((line) => line.includes('/portal'))).toEqual([]);
    expect(imports).toContain('basic-credentials.ts: ../util/password-hash');
  });
});
