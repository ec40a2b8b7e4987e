import { createPrivateKey, randomBytes, sign } from 'node:crypto';

/**
 * How the load generator signs a fresh DPoP proof for each request of a rotation entry: the client's key (a P-256
 * JWK, private part included, which never leaves the bench's processes) and what the proof names. Plain JSON, so
 * it travels to the load generator's process with the requests.
 */
export interface DpopProofSpec {
  privateJwk: Record<string, string>;
  htm: string;
  /** Absolute, as the server builds it: `http://127.0.0.1:<port>/me`. */
  htu: string;
  /** base64url(SHA-256(access token)). */
  ath: string;
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * A function that signs a new ES256 proof (fresh `jti`, `iat` now) on every call, with node:crypto: the key is
 * imported once, the header encoded once, so a proof costs one signature and a few microseconds besides.
 *
 * @example
 * const next = proofSigner(spec); headers.dpop = next();
 */
export function proofSigner(spec: DpopProofSpec): () => string {
  const key = createPrivateKey({ key: spec.privateJwk, format: 'jwk' });
  const { kty, crv, x, y } = spec.privateJwk;
  const header = b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv, x, y } });
  return () => {
    const payload = b64({
      jti: randomBytes(12).toString('base64url'),
      htm: spec.htm,
      htu: spec.htu,
      iat: Math.floor(Date.now() / 1000),
      ath: spec.ath,
    });
    const input = `${header}.${payload}`;
    return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  };
}
