import { createHash, randomBytes } from 'node:crypto';
import type * as DpopModule from 'dpop' with { 'resolution-mode': 'import' };
import { b64url, loadJose, nowSeconds, type Jose } from './jose-tokens';

/** The `dpop` package (panva's), ESM-only: loaded with a dynamic import as jose is. */
export type Dpop = typeof DpopModule;
let dpopPromise: Promise<Dpop> | undefined;
export function loadDpop(): Promise<Dpop> {
  dpopPromise ??= import('dpop');
  return dpopPromise;
}

/** base64url(SHA-256(token)): a proof's `ath` (RFC 9449 §4.2). */
export function athOf(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

type JoseKey = Awaited<ReturnType<Jose['generateKeyPair']>>['privateKey'];

/** What a proof may be made with besides the defaults: any claim or header member replaced or removed (`undefined`). */
export interface ProofShape {
  htm: string;
  htu: string;
  /** The access token whose hash goes in `ath`. */
  accessToken?: string;
  nonce?: string;
  /** Claims set (or, with `undefined`, removed) after the defaults. */
  claims?: Record<string, unknown>;
  /** Header members set (or removed) after the defaults. */
  header?: Record<string, unknown>;
}

/**
 * A DPoP client's key pair and the proofs it signs, made with jose (an independent implementation), so each test
 * can bend one member of an otherwise valid proof.
 *
 * @example
 * const client = await ProofClient.create('ES256');
 * const proof = await client.proof({ htm: 'GET', htu: 'http://127.0.0.1:1234/api', accessToken });
 */
export class ProofClient {
  private constructor(
    readonly alg: string,
    readonly privateKey: JoseKey,
    readonly publicJwk: Record<string, unknown>,
    readonly privateJwk: Record<string, unknown>,
    readonly jkt: string,
    private readonly jose: Jose,
  ) {}

  static async create(
    alg: 'ES256' | 'ES384' | 'ES512' | 'PS256' | 'RS256' | 'EdDSA' | 'Ed25519' = 'ES256',
    options: { modulusLength?: number } = {},
  ): Promise<ProofClient> {
    const jose = await loadJose();
    const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true, ...options });
    const publicJwk = (await jose.exportJWK(publicKey)) as Record<string, unknown>;
    const privateJwk = (await jose.exportJWK(privateKey)) as Record<string, unknown>;
    return new ProofClient(alg, privateKey, publicJwk, privateJwk, await jose.calculateJwkThumbprint(publicJwk as never), jose);
  }

  /** The proof's claims: `jti` (random), `htm`, `htu`, `iat` (now), `ath` and `nonce` when given, then `claims`. */
  async proof(shape: ProofShape): Promise<string> {
    const claims: Record<string, unknown> = {
      jti: randomBytes(16).toString('base64url'),
      htm: shape.htm,
      htu: shape.htu,
      iat: nowSeconds(),
      ...(shape.accessToken !== undefined ? { ath: athOf(shape.accessToken) } : {}),
      ...(shape.nonce !== undefined ? { nonce: shape.nonce } : {}),
      ...shape.claims,
    };
    const header: Record<string, unknown> = { typ: 'dpop+jwt', alg: this.alg, jwk: this.publicJwk, ...shape.header };
    for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
    for (const [name, value] of Object.entries(header)) if (value === undefined) delete header[name];
    return new this.jose.CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
      .setProtectedHeader(header as never)
      .sign(this.privateKey);
  }
}

/** An unsigned (`alg: none`) proof of the given claims, with the key's public JWK in its header. */
export function unsignedProof(jwk: Record<string, unknown>, claims: Record<string, unknown>): string {
  return `${b64url(JSON.stringify({ typ: 'dpop+jwt', alg: 'none', jwk }))}.${b64url(JSON.stringify(claims))}.`;
}

/** The claims a valid proof of this request carries (fresh `jti`, `iat` now). */
export function proofClaims(htm: string, htu: string, accessToken?: string): Record<string, unknown> {
  return {
    jti: randomBytes(16).toString('base64url'),
    htm,
    htu,
    iat: nowSeconds(),
    ...(accessToken !== undefined ? { ath: athOf(accessToken) } : {}),
  };
}
