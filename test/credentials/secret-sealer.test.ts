import { randomBytes } from 'node:crypto';
import { createSecretSealer, SealedSecretError } from '../../lib/credentials';

const SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';

describe('createSecretSealer', () => {
  const key = randomBytes(32);
  const sealer = createSecretSealer({ key });

  it('opens what it sealed for the same user, and never shows the secret in the sealed text', () => {
    const sealed = sealer.seal('local|alice', SECRET);
    expect(sealed).not.toContain(SECRET);
    expect(sealed).toMatch(/^v1\.[\w-]{8}\.[\w-]{16}\.[\w-]+$/);
    expect(sealer.open('local|alice', sealed)).toBe(SECRET);
  });

  it('uses a fresh IV for every seal', () => {
    expect(sealer.seal('local|alice', SECRET)).not.toBe(sealer.seal('local|alice', SECRET));
  });

  it('refuses a sealed secret copied to another user (the user id is the associated data)', () => {
    const sealed = sealer.seal('local|alice', SECRET);
    expect(() => sealer.open('local|mallory', sealed)).toThrow(SealedSecretError);
  });

  it('refuses a sealed secret with any changed byte', () => {
    const sealed = sealer.seal('local|alice', SECRET);
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3] as string, 'base64url');
    body[0] = (body[0] as number) ^ 1;
    expect(() => sealer.open('local|alice', [...parts.slice(0, 3), body.toString('base64url')].join('.'))).toThrow(SealedSecretError);
    expect(() => sealer.open('local|alice', `${sealed}.extra`)).toThrow(SealedSecretError);
    expect(() => sealer.open('local|alice', 'v1.garbage')).toThrow(SealedSecretError);
  });

  it('refuses a secret sealed by an unknown key', () => {
    const other = createSecretSealer({ key: randomBytes(32) });
    expect(() => sealer.open('local|alice', other.seal('local|alice', SECRET))).toThrow(SealedSecretError);
  });

  it('opens secrets of a previous key after rotation, seals with the new one and says which need resealing', () => {
    const rotated = createSecretSealer({ key: randomBytes(32).toString('hex'), previousKeys: [key] });
    const old = sealer.seal('local|alice', SECRET);
    expect(rotated.open('local|alice', old)).toBe(SECRET);
    expect(rotated.needsResealing(old)).toBe(true);
    const fresh = rotated.seal('local|alice', SECRET);
    expect(rotated.needsResealing(fresh)).toBe(false);
    expect(() => sealer.open('local|alice', fresh)).toThrow(SealedSecretError);
  });

  it('accepts a key as 64 hex or 43 base64url characters and refuses anything not 32 bytes', () => {
    expect(() => createSecretSealer({ key: randomBytes(32).toString('base64url') })).not.toThrow();
    expect(() => createSecretSealer({ key: randomBytes(16) })).toThrow(/key must be 32 random bytes/);
    expect(() => createSecretSealer({ key: 'correct horse battery staple' })).toThrow(/32 random bytes/);
    expect(() => createSecretSealer({ key, previousKeys: [randomBytes(31)] })).toThrow(/previousKeys\[0\]/);
    expect(() => createSecretSealer({ key, keys: [] } as never)).toThrow(/unknown option|keys/);
  });
});
