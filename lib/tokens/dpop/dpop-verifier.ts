import type { KeyValueStore } from '../../store/port';
import { sha256 } from '../../util/digest';
import { checkOptions, OptionsError, within, type OptionSchema } from '../../util/options';
import { TokenError } from '../errors';
import { decodeSegment, normalizeTyp } from '../verify-jwt';
import { DpopError } from './dpop-error';
import { DpopNonces, NONCE_SCHEMA, type DpopNonceOptions } from './dpop-nonces';
import { normalizeHtu, normalizeHttpUri } from './http-uri';
import { DEFAULT_DPOP_ALGORITHMS, isDpopAlgorithm, ProofKeys, verifySignature, type DpopAlgorithm } from './proof-key';

/** Options of {@link DpopVerifier}. */
export interface DpopVerifierOptions {
  /**
   * Where each proof's `jti` is remembered until the proof could no longer be accepted, so it is accepted once
   * (RFC 9449 §11.1): a `RedisStore` shared by every process that accepts the proofs, or a `MemoryStore` for one.
   */
  replayStore: KeyValueStore;
  /** The proof algorithms accepted, all asymmetric. Default ES256, ES384, EdDSA, Ed25519, PS256, RS256. */
  algorithms?: readonly DpopAlgorithm[];
  /** How old a proof (`iat`) may be. Default 60 seconds; 1 to 300. */
  proofMaxAgeSeconds?: number;
  /** How far in the future a proof's `iat` may lie (the client's clock ahead of ours). Default 5 seconds; 0 to 60. */
  clockSkewSeconds?: number;
  /** Require server nonces (RFC 9449 §8, §9), derived from a shared secret: see {@link DpopNonceOptions}. Default: none. */
  nonce?: DpopNonceOptions;
  /** Longest proof accepted, in characters. Default 8192 (a proof with a 4096-bit RSA key is about 1,400). */
  maxProofLength?: number;
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** The request a proof must have been made for. */
export interface DpopRequestFacts {
  /** The request's method, e.g. `GET`; the proof's `htm` must equal it exactly. */
  method: string;
  /**
   * The request's target URI (its query, if any, is ignored), e.g. `https://api.example.test/orders`; in Express
   * take it from `dpopTargetUri(req)`, which honours `trust proxy` as the rest of the kit does.
   */
  uri: string;
  /** The access token sent with the proof (a resource request): the proof's `ath` must be its hash. */
  accessToken?: string;
  /** The key the access token is bound to (`cnf.jkt`): the proof must be signed with it. */
  boundJkt?: string;
}

/** A proof that passed every check. */
export interface VerifiedDpopProof {
  /** The RFC 7638 thumbprint of the proof's key: what a token bound to it carries as `cnf.jkt`. */
  jkt: string;
  /** The proof's public key, its RFC 7638 members only. */
  jwk: Readonly<Record<string, string>>;
  alg: DpopAlgorithm;
  jti: string;
  iat: number;
  /** With nonces: the nonce to hand the client with the answer (`DPoP-Nonce`) because the one it used is ageing. */
  nextNonce?: string;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const MAX_JTI_LENGTH = 256;

export const DPOP_VERIFIER_SCHEMA: OptionSchema = {
  replayStore: {
    type: 'object',
    required: true,
    expected: 'a KeyValueStore, e.g. new RedisStore(url) (or a MemoryStore for one process)',
    check: (store: KeyValueStore) =>
      typeof store.setIfAbsent === 'function' ? undefined : 'must be a KeyValueStore (a RedisStore or MemoryStore)',
  },
  algorithms: {
    type: 'string[]',
    expected: "a non-empty array of asymmetric algorithms such as ['ES256', 'EdDSA']",
    check: (algorithms: readonly string[]) => {
      if (algorithms.length === 0) return "must not be empty, e.g. ['ES256']";
      const wrong = algorithms.find((alg) => !isDpopAlgorithm(alg));
      // none and HS* can never sign a proof: a shared secret proves nothing about who holds it.
      return wrong === undefined
        ? undefined
        : `may only contain asymmetric algorithms (ES256, PS256, EdDSA, …), got ${JSON.stringify(wrong)}`;
    },
  },
  proofMaxAgeSeconds: { type: 'number', expected: 'a number of seconds from 1 to 300', check: within(1, 300) },
  clockSkewSeconds: { type: 'number', expected: 'a number of seconds from 0 to 60', check: within(0, 60) },
  nonce: { type: 'object', expected: 'an object { secret, rotationSeconds? }', members: NONCE_SCHEMA },
  maxProofLength: { type: 'integer', expected: 'a whole number of characters from 512 to 65536', check: within(512, 65536) },
  now: { type: 'function', expected: 'a function returning epoch milliseconds' },
};

/** The store key remembering one proof: its key and jti, hashed (a jti is the client's text), one hash tag each. */
function replayKey(jkt: string, jti: string): string {
  return `dpop:jti:{${sha256(`${jkt} ${jti}`, 'base64url')}}`;
}

function decoded(segment: string): Record<string, unknown> {
  try {
    return decodeSegment(segment);
  } catch (error) {
    throw new DpopError(error instanceof TokenError && error.reason === 'duplicate_member' ? 'duplicate_member' : 'proof_malformed');
  }
}

function claimOf<T>(claims: Record<string, unknown>, name: string, isValid: (value: unknown) => value is T): T {
  const value = claims[name];
  if (value === undefined) throw new DpopError('missing_claim', { claim: name });
  if (!isValid(value)) throw new DpopError('invalid_claim', { claim: name });
  return value;
}

const isJti = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= MAX_JTI_LENGTH;
const isShortString = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= 4096;
const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/**
 * Checks DPoP proofs (RFC 9449 §4.3), with no Express in sight: one `DPoP` header value against the request's
 * method and URI, and for a resource request the access token and the key it is bound to. In order, cheapest first:
 * a single compact JWS of at most `maxProofLength` characters, read strictly (canonical base64url, no repeated JSON
 * members, no `crit`); `typ` `dpop+jwt`; an `alg` of the allowlist; a public `jwk` (a private one is refused) of the
 * algorithm's type; `jti`, `htm`, `htu`, `iat` present; `htm` equal to the method; `htu` equal to the URI under
 * RFC 3986 normalisation, without query or fragment; `iat` at most `proofMaxAgeSeconds` old and
 * `clockSkewSeconds` ahead; `ath` the hash of the access token; the signature; the server nonce, when nonces are on;
 * the key's thumbprint equal to the token's `cnf.jkt`; and last, once everything else holds, the `jti` never seen
 * before (one atomic SET NX in the replay store, expiring with the window). Every refusal is a {@link DpopError}
 * with a stable `reason`; a replay store outage rejects with `StoreUnavailableError` (answer 503).
 *
 * @example
 * const dpop = new DpopVerifier({ replayStore: new RedisStore(process.env.REDIS_URL!) });
 * const proof = await dpop.verify(req.get('DPoP'), { method: req.method, uri: dpopTargetUri(req) });
 * // proof.jkt: bind the tokens you issue to it
 */
export class DpopVerifier {
  /** The accepted algorithms, in the order the `algs` challenge parameter lists them. */
  readonly algorithms: readonly DpopAlgorithm[];
  /** How old a proof may be (its `iat`). */
  readonly proofMaxAgeSeconds: number;
  /** How far ahead a proof's `iat` may be. */
  readonly clockSkewSeconds: number;
  private readonly accepted: ReadonlySet<string>;
  private readonly store: KeyValueStore;
  private readonly nonces: DpopNonces | undefined;
  private readonly maxProofLength: number;
  private readonly now: () => number;
  private readonly keys = new ProofKeys();
  private readonly replaySeconds: number;

  constructor(options: DpopVerifierOptions) {
    checkOptions('DpopVerifier', options, DPOP_VERIFIER_SCHEMA);
    this.store = options.replayStore;
    this.algorithms = Object.freeze([...new Set(options.algorithms ?? DEFAULT_DPOP_ALGORITHMS)]);
    this.accepted = new Set(this.algorithms);
    this.proofMaxAgeSeconds = options.proofMaxAgeSeconds ?? 60;
    this.clockSkewSeconds = options.clockSkewSeconds ?? 5;
    this.maxProofLength = options.maxProofLength ?? 8192;
    this.now = options.now ?? Date.now;
    this.nonces = options.nonce === undefined ? undefined : new DpopNonces(options.nonce, this.now);
    // A proof is acceptable from iat - skew to iat + maxAge; another server's clock may differ by the skew again.
    this.replaySeconds = Math.ceil(this.proofMaxAgeSeconds + 2 * this.clockSkewSeconds);
    if (this.replaySeconds < 1) throw new OptionsError('DpopVerifier: proofMaxAgeSeconds must be at least 1');
  }

  /** Whether proofs must carry a server nonce. */
  get requiresNonce(): boolean {
    return this.nonces !== undefined;
  }

  /**
   * The server nonce clients must use now (the `DPoP-Nonce` header of a token response or a 401), or undefined
   * without nonces.
   *
   * @example
   * const nonce = dpop.currentNonce(); if (nonce) res.set('DPoP-Nonce', nonce);
   */
  currentNonce(): string | undefined {
    return this.nonces?.current();
  }

  /**
   * Checks one proof for one request (see the class for every rule) and remembers its `jti`.
   *
   * @example
   * const { jkt } = await dpop.verify(proof, { method: 'GET', uri: 'https://api.example.test/orders', accessToken, boundJkt });
   */
  async verify(proof: string | undefined, facts: DpopRequestFacts): Promise<VerifiedDpopProof> {
    if (proof === undefined || proof === '') throw new DpopError('proof_missing');
    if (typeof proof !== 'string') throw new DpopError('proof_malformed');
    if (proof.length > this.maxProofLength) throw new DpopError('proof_too_large');
    const segments = proof.split('.');
    if (segments.length !== 3) throw new DpopError('proof_malformed');
    const [headerPart = '', payloadPart = '', signaturePart = ''] = segments;
    if (!BASE64URL.test(headerPart) || !BASE64URL.test(payloadPart) || !BASE64URL.test(signaturePart))
      throw new DpopError('proof_malformed');

    const header = decoded(headerPart);
    if (typeof header.typ !== 'string' || normalizeTyp(header.typ) !== 'dpop+jwt') throw new DpopError('wrong_typ');
    const alg = header.alg;
    if (!isDpopAlgorithm(alg) || !this.accepted.has(alg)) throw new DpopError('unsupported_alg');
    // We understand no critical extension, so RFC 7515 §4.1.11 obliges us to refuse any.
    if (header.crit !== undefined) throw new DpopError('unsupported_crit');
    const key = this.keys.resolve(header.jwk, alg);

    const claims = decoded(payloadPart);
    const jti = claimOf(claims, 'jti', isJti);
    const htm = claimOf(claims, 'htm', isShortString);
    const htu = claimOf(claims, 'htu', isShortString);
    const iat = claimOf(claims, 'iat', isTime);
    if (htm !== facts.method) throw new DpopError('wrong_htm');
    const target = normalizeHttpUri(facts.uri);
    if (target === undefined || normalizeHtu(htu) !== target) throw new DpopError('wrong_htu');
    const nowSeconds = this.now() / 1000;
    if (iat > nowSeconds + this.clockSkewSeconds) throw new DpopError('issued_in_future');
    if (iat < nowSeconds - this.proofMaxAgeSeconds) throw new DpopError('stale');
    if (facts.accessToken !== undefined) {
      const ath = claimOf(claims, 'ath', isShortString);
      if (ath !== sha256(facts.accessToken, 'base64url')) throw new DpopError('wrong_ath');
    }

    const signature = Buffer.from(signaturePart, 'base64url');
    // A non-canonical encoding (stray trailing bits) would let two strings carry one proof past the replay check.
    if (signature.toString('base64url') !== signaturePart) throw new DpopError('proof_malformed');
    if (!(await verifySignature(alg, key.key, `${headerPart}.${payloadPart}`, signature))) throw new DpopError('bad_signature');

    let nextNonce: string | undefined;
    if (this.nonces !== undefined) {
      const standing = this.nonces.check(claims.nonce);
      if (standing === 'invalid') {
        throw new DpopError(claims.nonce === undefined ? 'nonce_required' : 'wrong_nonce', { nonce: this.nonces.current() });
      }
      if (standing === 'previous') nextNonce = this.nonces.current();
    }
    if (facts.boundJkt !== undefined && facts.boundJkt !== key.jkt) throw new DpopError('key_mismatch');
    // Last, so only a proof that passed everything else, signed by the token's own key, can write to the store.
    if (!(await this.store.setIfAbsent(replayKey(key.jkt, jti), '1', this.replaySeconds))) throw new DpopError('replayed');
    return { jkt: key.jkt, jwk: key.jwk, alg, jti, iat, ...(nextNonce === undefined ? {} : { nextNonce }) };
  }
}
