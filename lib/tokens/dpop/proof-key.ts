import { constants, createPublicKey, verify, type KeyObject, type VerifyKeyObjectInput } from 'node:crypto';
import { sha256 } from '../../util/digest';
import { DpopError } from './dpop-error';

/**
 * The JWS algorithms a DPoP proof may use: asymmetric only (RFC 9449 §4.3 check 5), so `none` and HS* can never be
 * listed. `Ed25519` is the fully specified name of `EdDSA` over Ed25519 (RFC 9864) that newer clients send.
 */
export const DPOP_ALGORITHMS = [
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
  'RS256',
  'RS384',
  'RS512',
  'EdDSA',
  'Ed25519',
] as const;
/** One of {@link DPOP_ALGORITHMS}. */
export type DpopAlgorithm = (typeof DPOP_ALGORITHMS)[number];

/**
 * Accepted when no list is given: what openid-client, oauth4webapi, the `dpop` package and browsers' WebCrypto make
 * (ES256 first, as they default to it), without the rarely used P-521 and the larger RSA hashes.
 */
export const DEFAULT_DPOP_ALGORITHMS: readonly DpopAlgorithm[] = Object.freeze(['ES256', 'ES384', 'EdDSA', 'Ed25519', 'PS256', 'RS256']);

const ALGORITHMS = new Set<string>(DPOP_ALGORITHMS);

/** True for the algorithms of {@link DPOP_ALGORITHMS}: exact, case-sensitive match as RFC 7515 requires. */
export function isDpopAlgorithm(alg: unknown): alg is DpopAlgorithm {
  return typeof alg === 'string' && ALGORITHMS.has(alg);
}

const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/**
 * Whether a value has the shape of an RFC 7638 SHA-256 thumbprint (32 bytes, base64url): what `cnf.jkt` and
 * `dpopJkt` hold.
 *
 * @example
 * isThumbprint(proof.jkt); // true
 */
export function isThumbprint(value: unknown): value is string {
  return typeof value === 'string' && THUMBPRINT.test(value);
}

/** A proof key made usable: its RFC 7638 thumbprint, the key object and what it can verify. */
interface ProofKey {
  jkt: string;
  key: KeyObject;
  /** `EC:P-256`, `RSA`, `OKP:Ed25519`: matched against the proof's algorithm. */
  family: string;
  /** The public members only, as the thumbprint covers them. */
  jwk: Readonly<Record<string, string>>;
}

// Private members of every key type (RFC 7518 §6.2.2, §6.3.2; RFC 8037 §2) and a symmetric key's value.
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const BASE64URL = /^[A-Za-z0-9_-]+$/;
// An RSA modulus above 8192 bits would make each verification cost milliseconds: a cheap way to load the server.
const MAX_RSA_BITS = 8192;
const MIN_RSA_BITS = 2048;
const EC_CURVES = new Set(['P-256', 'P-384', 'P-521']);
const OKP_CURVES = new Set(['Ed25519', 'Ed448']);
const KEYS_REMEMBERED = 1000;

function member(jwk: Record<string, unknown>, name: string, maxLength: number): string {
  const value = jwk[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength || !BASE64URL.test(value)) {
    throw new DpopError('bad_jwk');
  }
  return value;
}

/** The members RFC 7638 §3.2 hashes, in its (lexicographic) order; undefined for a key type a proof cannot use. */
function requiredMembers(jwk: Record<string, unknown>): Record<string, string> {
  switch (jwk.kty) {
    case 'EC': {
      if (typeof jwk.crv !== 'string' || !EC_CURVES.has(jwk.crv)) throw new DpopError('bad_jwk');
      return { crv: jwk.crv, kty: 'EC', x: member(jwk, 'x', 88), y: member(jwk, 'y', 88) };
    }
    case 'RSA':
      return { e: member(jwk, 'e', 16), kty: 'RSA', n: member(jwk, 'n', Math.ceil(MAX_RSA_BITS / 6) + 1) };
    case 'OKP': {
      if (typeof jwk.crv !== 'string' || !OKP_CURVES.has(jwk.crv)) throw new DpopError('bad_jwk');
      return { crv: jwk.crv, kty: 'OKP', x: member(jwk, 'x', 88) };
    }
    default:
      throw new DpopError('bad_jwk');
  }
}

/**
 * The RFC 7638 thumbprint (SHA-256, base64url) of a public JWK: what an access token's `cnf.jkt` holds. Only the
 * required members count, so `kid`, `alg` or `use` do not change it.
 *
 * @example
 * jwkThumbprint({ kty: 'EC', crv: 'P-256', x: '…', y: '…' }); // 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs'
 */
export function jwkThumbprint(jwk: Record<string, unknown>): string {
  // JSON.stringify of members inserted in lexicographic order, without whitespace, is exactly RFC 7638's input.
  return sha256(JSON.stringify(requiredMembers(jwk)), 'base64url');
}

function familyOf(key: KeyObject, members: Record<string, string>): string {
  if (members.kty === 'RSA') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS || bits > MAX_RSA_BITS) throw new DpopError('bad_jwk');
    return 'RSA';
  }
  return `${members.kty}:${members.crv}`;
}

const FAMILY_OF_ALG: Record<DpopAlgorithm, (family: string) => boolean> = {
  ES256: (family) => family === 'EC:P-256',
  ES384: (family) => family === 'EC:P-384',
  ES512: (family) => family === 'EC:P-521',
  PS256: (family) => family === 'RSA',
  PS384: (family) => family === 'RSA',
  PS512: (family) => family === 'RSA',
  RS256: (family) => family === 'RSA',
  RS384: (family) => family === 'RSA',
  RS512: (family) => family === 'RSA',
  EdDSA: (family) => family === 'OKP:Ed25519' || family === 'OKP:Ed448',
  Ed25519: (family) => family === 'OKP:Ed25519',
};

const ECDSA_SIGNATURE_BYTES: Partial<Record<DpopAlgorithm, number>> = { ES256: 64, ES384: 96, ES512: 132 };

/** The one-shot form of `crypto.verify` with a callback: OpenSSL's work runs on libuv's thread pool. */
function verifyOffThread(
  algorithm: string | null,
  data: Buffer,
  key: VerifyKeyObjectInput | KeyObject,
  signature: Buffer,
): Promise<boolean> {
  return new Promise((resolve) => {
    // A signature OpenSSL cannot even parse is simply not valid.
    verify(algorithm, data, key, signature, (error, valid) => resolve(error === null && valid));
  });
}

/**
 * Whether `signature` over `signingInput` verifies with the key under `alg` (node:crypto, one call; ECDSA in the
 * JWS form, r‖s of fixed size). Every DPoP request costs one such check, which no cache can save, so it runs on
 * libuv's thread pool (the callback form of `crypto.verify`): the same CPU per check as on the main thread, while the
 * event loop serves other requests and a process can verify on several cores at once.
 */
export function verifySignature(alg: DpopAlgorithm, key: KeyObject, signingInput: string, signature: Buffer): Promise<boolean> {
  const data = Buffer.from(signingInput, 'ascii');
  const ecdsaBytes = ECDSA_SIGNATURE_BYTES[alg];
  if (ecdsaBytes !== undefined) {
    if (signature.length !== ecdsaBytes) return Promise.resolve(false);
    return verifyOffThread(`sha${alg.slice(2)}`, data, { key, dsaEncoding: 'ieee-p1363' }, signature);
  }
  if (alg.startsWith('PS')) {
    return verifyOffThread(
      `sha${alg.slice(2)}`,
      data,
      { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST },
      signature,
    );
  }
  if (alg.startsWith('RS')) return verifyOffThread(`sha${alg.slice(2)}`, data, key, signature);
  return verifyOffThread(null, data, key, signature);
}

/**
 * Proof keys made into `KeyObject`s, remembered by thumbprint: a client signs every proof with the same key, and
 * importing a JWK costs about as much as the signature check itself. The thumbprint covers every public member,
 * so two JWKs with one thumbprint are one key.
 */
export class ProofKeys {
  private readonly known = new Map<string, ProofKey>();

  /**
   * The usable public key of a proof's `jwk` header for `alg`, or a `DpopError`: `private_jwk` for a private key,
   * `bad_jwk` for anything else unusable (another type or curve than the algorithm's, RSA under 2048 bits, an
   * `alg`, `use` or `key_ops` member that says otherwise).
   *
   * @example
   * const { jkt, key } = proofKeys.resolve(header.jwk, 'ES256');
   */
  resolve(jwk: unknown, alg: DpopAlgorithm): ProofKey {
    if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw new DpopError('bad_jwk');
    const fields = jwk as Record<string, unknown>;
    // RFC 9449 §4.3 check 7: the proof says who holds the key; a key that travels with its private part is no proof.
    if (PRIVATE_MEMBERS.some((name) => fields[name] !== undefined)) throw new DpopError('private_jwk');
    if (fields.alg !== undefined && fields.alg !== alg) throw new DpopError('bad_jwk');
    if (fields.use !== undefined && fields.use !== 'sig') throw new DpopError('bad_jwk');
    if (fields.key_ops !== undefined && !(Array.isArray(fields.key_ops) && fields.key_ops.includes('verify'))) {
      throw new DpopError('bad_jwk');
    }
    const members = requiredMembers(fields);
    const jkt = sha256(JSON.stringify(members), 'base64url');
    let known = this.known.get(jkt);
    if (known === undefined) {
      let key: KeyObject;
      try {
        key = createPublicKey({ key: members, format: 'jwk' });
      } catch {
        // A point off its curve, a malformed modulus: node:crypto refuses to import it.
        throw new DpopError('bad_jwk');
      }
      known = { jkt, key, family: familyOf(key, members), jwk: Object.freeze(members) };
      if (this.known.size >= KEYS_REMEMBERED) this.known.delete(this.known.keys().next().value as string);
    } else {
      // Least recently used goes first: re-inserting moves a key to the end.
      this.known.delete(jkt);
    }
    this.known.set(jkt, known);
    if (!FAMILY_OF_ALG[alg](known.family)) throw new DpopError('bad_jwk');
    return known;
  }
}
