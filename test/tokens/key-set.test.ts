import { createPublicKey, createSecretKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { KeySet, TokenError } from '../../lib/tokens';
import { ecPair, loadJose, rsaPair } from '../helpers/jose-tokens';

describe('KeySet validation', () => {
  it.each([
    ['HS256', 31],
    ['HS384', 47],
    ['HS512', 63],
  ] as const)('refuses an %s secret shorter than the hash output (%i bytes)', (alg, bytes) => {
    expect(() => new KeySet([{ kid: 'k', alg, secret: randomBytes(bytes) }])).toThrow(TypeError);
    expect(() => new KeySet([{ kid: 'k', alg, secret: randomBytes(bytes + 1) }])).not.toThrow();
  });

  it('refuses a 1024-bit RSA key for RS256 and PS256', () => {
    const { privateKey } = rsaPair(1024);
    expect(() => new KeySet([{ kid: 'k', alg: 'RS256', privateKey }])).toThrow(/1024 bits; RS256 needs at least 2048/);
    expect(() => new KeySet([{ kid: 'k', alg: 'PS256', privateKey }])).toThrow(TypeError);
  });

  it('refuses a key whose type does not match its alg', () => {
    const ec = ecPair();
    const rsa = rsaPair();
    expect(() => new KeySet([{ kid: 'k', alg: 'RS256', privateKey: ec.privateKey }])).toThrow(/cannot be used with RS256/);
    expect(() => new KeySet([{ kid: 'k', alg: 'ES256', publicKey: rsa.publicKey }])).toThrow(TypeError);
    expect(() => new KeySet([{ kid: 'k', alg: 'HS256', secret: rsa.publicKey as never }])).toThrow(TypeError);
    expect(() => new KeySet([{ kid: 'k', alg: 'RS256', secret: randomBytes(32) } as never])).toThrow(TypeError);
  });

  it('refuses ES256 on a curve other than P-256', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'secp384r1' });
    expect(() => new KeySet([{ kid: 'k', alg: 'ES256', privateKey }])).toThrow(/P-256/);
  });

  it('refuses unsupported algorithms, none included', () => {
    for (const alg of ['none', 'RS512', 'hs256', 'EdDSA']) {
      expect(() => new KeySet([{ kid: 'k', alg: alg as never, secret: randomBytes(64) }])).toThrow(/alg must be one of/);
    }
  });

  it('refuses path- or query-looking kids, duplicate kids and an unknown activeKid', () => {
    const secret = randomBytes(32);
    for (const kid of ['../../etc/passwd', "' OR 1=1 --", '', 'a'.repeat(129), 'a b']) {
      expect(() => new KeySet([{ kid, alg: 'HS256', secret }])).toThrow(/kid must be/);
    }
    expect(
      () =>
        new KeySet([
          { kid: 'a', alg: 'HS256', secret },
          { kid: 'a', alg: 'HS256', secret },
        ]),
    ).toThrow(/appears twice/);
    expect(() => new KeySet([{ kid: 'a', alg: 'HS256', secret }], { activeKid: 'b' })).toThrow(/activeKid "b"/);
  });

  it('refuses a public key that does not belong to the private key', () => {
    expect(() => new KeySet([{ kid: 'k', alg: 'ES256', privateKey: ecPair().privateKey, publicKey: ecPair().publicKey }])).toThrow(
      /does not belong/,
    );
  });

  it('refuses an empty definition list', () => {
    expect(() => new KeySet([])).toThrow(TypeError);
  });

  it('accepts PEM strings, JWK objects and KeyObjects', () => {
    const { privateKey, publicKey } = rsaPair();
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const jwk = publicKey.export({ format: 'jwk' });
    const keys = new KeySet([
      { kid: 'pem', alg: 'RS256', privateKey: pem },
      { kid: 'jwk', alg: 'PS256', publicKey: jwk },
      { kid: 'obj', alg: 'HS256', secret: createSecretKey(randomBytes(32)) },
    ]);
    expect(keys.kids).toEqual(['pem', 'jwk', 'obj']);
    expect(keys.activeKid).toBe('pem');
  });
});

describe('KeySet rotation and lookup', () => {
  const current = ecPair();
  const previous = ecPair();
  const keys = new KeySet(
    [
      { kid: 'old', alg: 'ES256', publicKey: previous.publicKey },
      { kid: 'new', alg: 'ES256', privateKey: current.privateKey },
    ],
    { activeKid: 'new' },
  );

  it('signs with the active key and verifies with every key', () => {
    expect(keys.signingKey.kid).toBe('new');
    expect(keys.signingKey.key.type).toBe('private');
    expect(keys.find('old', 'ES256')?.equals(previous.publicKey)).toBe(true);
    expect(keys.find('new', 'ES256')?.equals(createPublicKey(current.privateKey))).toBe(true);
  });

  it('binds each kid to exactly one algorithm', () => {
    expect(keys.find('new', 'RS256')).toBeUndefined();
    expect(() => keys.getKey('new', 'HS256')).toThrow(expect.objectContaining({ reason: 'alg_mismatch' }));
    expect(() => keys.getKey('missing', 'ES256')).toThrow(TokenError);
  });

  it('without a kid, accepts only when exactly one key has that alg', () => {
    expect(keys.find(undefined, 'ES256')).toBeUndefined();
    const single = KeySet.generate('ES256', 'only');
    expect(single.find(undefined, 'ES256')).toBeDefined();
  });

  it('refuses an activeKid that has only a public key', () => {
    expect(() => new KeySet([{ kid: 'old', alg: 'ES256', publicKey: previous.publicKey }], { activeKid: 'old' })).toThrow(
      /only a public key/,
    );
    expect(() => new KeySet([{ kid: 'old', alg: 'ES256', publicKey: previous.publicKey }]).signingKey).toThrow(/no signing key/);
  });
});

describe('KeySet.publicJwks', () => {
  it('publishes public members with kid, alg and use, and never an HS secret', async () => {
    const rsa = rsaPair();
    const secret = randomBytes(32);
    const keys = new KeySet([
      { kid: 'rsa', alg: 'RS256', privateKey: rsa.privateKey },
      { kid: 'ec', alg: 'ES256', privateKey: ecPair().privateKey },
      { kid: 'hmac', alg: 'HS256', secret },
    ]);
    const { keys: published } = keys.publicJwks();
    expect(published.map((key) => [key.kid, key.alg, key.use])).toEqual([
      ['rsa', 'RS256', 'sig'],
      ['ec', 'ES256', 'sig'],
    ]);
    const text = JSON.stringify(published);
    for (const privateMember of ['"d"', '"p"', '"q"', '"dp"', '"dq"', '"qi"', '"k"']) expect(text).not.toContain(privateMember);
    expect(text).not.toContain(secret.toString('base64url'));
    const jose = await loadJose();
    const imported = await jose.importJWK(published[0] as never, 'RS256');
    expect((imported as { type: string }).type).toBe('public');
  });

  it('returns a copy the caller cannot use to alter the set', () => {
    const keys = KeySet.generate('ES256', 'k');
    const first = keys.publicJwks();
    (first.keys[0] as Record<string, unknown>).kid = 'changed';
    expect(keys.publicJwks().keys[0]?.kid).toBe('k');
  });
});

describe('KeySet.generate', () => {
  it.each(['HS256', 'HS384', 'HS512', 'RS256', 'PS256', 'ES256'] as const)('generates a usable %s key', (alg) => {
    const keys = KeySet.generate(alg, 'demo');
    expect(keys.signingKey).toMatchObject({ kid: 'demo', alg });
    expect(keys.find('demo', alg)).toBeDefined();
  });
});
