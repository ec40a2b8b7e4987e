import { createSecretKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { isAcceptableKid, keyFitsAlgorithm } from '../../lib/tokens/algorithms';
import { isSupportedAlgorithm, SUPPORTED_ALGORITHMS } from '../../lib/tokens';

describe('algorithms', () => {
  it('supports exactly HS256/384/512, RS256, PS256 and ES256, case-sensitively', () => {
    expect(SUPPORTED_ALGORITHMS).toEqual(['HS256', 'HS384', 'HS512', 'RS256', 'PS256', 'ES256']);
    for (const alg of ['none', 'None', 'rs256', 'RS512', 'EdDSA', '', undefined]) expect(isSupportedAlgorithm(alg)).toBe(false);
  });

  it('fits keys to algorithms by type, size and curve', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey;
    const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey;
    expect(keyFitsAlgorithm(rsa, 'RS256')).toBe(true);
    expect(keyFitsAlgorithm(rsa, 'PS256')).toBe(true);
    expect(keyFitsAlgorithm(rsa, 'ES256')).toBe(false);
    expect(keyFitsAlgorithm(rsa, 'HS256')).toBe(false);
    expect(keyFitsAlgorithm(ec, 'ES256')).toBe(true);
    expect(keyFitsAlgorithm(createSecretKey(randomBytes(32)), 'HS256')).toBe(true);
    expect(keyFitsAlgorithm(createSecretKey(randomBytes(32)), 'HS512')).toBe(false);
    expect(keyFitsAlgorithm(createSecretKey(randomBytes(64)), 'RS256')).toBe(false);
  });

  it('accepts short printable kids and refuses path, query and control characters', () => {
    for (const kid of ['k1', '2026-11', 'NjVBRjY5MDlCMUIwNzU4RTA2QzZFMDQ4QzQ2MDAyQjVDNjk1RTM2Qg', 'a.b_c~d'])
      expect(isAcceptableKid(kid)).toBe(true);
    for (const kid of ['../../etc/passwd', "' OR 1=1 --", 'a/b', 'a\nb', '..', '', 'x'.repeat(129), 7, null])
      expect(isAcceptableKid(kid)).toBe(false);
  });
});
