import type { KeyObject } from 'node:crypto';

/** The JWS algorithms the kit signs and verifies. Anything else (`none` above all) is refused. */
export const SUPPORTED_ALGORITHMS = ['HS256', 'HS384', 'HS512', 'RS256', 'PS256', 'ES256'] as const;
export type SupportedAlgorithm = (typeof SUPPORTED_ALGORITHMS)[number];

const SUPPORTED = new Set<string>(SUPPORTED_ALGORITHMS);

/** True for the algorithms of {@link SUPPORTED_ALGORITHMS}; exact, case-sensitive match as RFC 7515 requires. */
export function isSupportedAlgorithm(alg: unknown): alg is SupportedAlgorithm {
  return typeof alg === 'string' && SUPPORTED.has(alg);
}

export function isHmacAlgorithm(alg: string): boolean {
  return alg === 'HS256' || alg === 'HS384' || alg === 'HS512';
}

/** RFC 7518 §3.2: an HMAC key must be at least as long as the hash output. */
export function minimumSecretBytes(alg: string): number {
  return alg === 'HS512' ? 64 : alg === 'HS384' ? 48 : 32;
}

export const MINIMUM_RSA_BITS = 2048;

/**
 * Whether a key object can verify (or sign) with this algorithm: HS* need a secret of the minimum size, RS256 a
 * plain RSA key, PS256 a plain RSA key, ES256 a P-256 key; RSA keys need 2048 bits or more.
 */
export function keyFitsAlgorithm(key: KeyObject, alg: string): boolean {
  if (isHmacAlgorithm(alg)) return key.type === 'secret' && (key.symmetricKeySize ?? 0) >= minimumSecretBytes(alg);
  if (key.type === 'secret') return false;
  const details = key.asymmetricKeyDetails;
  switch (alg) {
    case 'RS256':
    case 'PS256':
      return key.asymmetricKeyType === 'rsa' && (details?.modulusLength ?? 0) >= MINIMUM_RSA_BITS;
    case 'ES256':
      return key.asymmetricKeyType === 'ec' && details?.namedCurve === 'prime256v1';
    default:
      return false;
  }
}

/** Key ids the kit accepts: short and printable, so a kid can never act as a path, a query or a log injection. */
const KID_PATTERN = /^[A-Za-z0-9._~+=-]{1,128}$/;

export function isAcceptableKid(kid: unknown): kid is string {
  return typeof kid === 'string' && KID_PATTERN.test(kid) && !kid.includes('..');
}
