import {
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  generateKeyPairSync,
  type JsonWebKey,
  KeyObject,
  randomBytes,
} from 'node:crypto';
import {
  isAcceptableKid,
  isHmacAlgorithm,
  isSupportedAlgorithm,
  keyFitsAlgorithm,
  MINIMUM_RSA_BITS,
  minimumSecretBytes,
  SUPPORTED_ALGORITHMS,
  type SupportedAlgorithm,
} from './algorithms';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { TokenError } from './errors';

/** Key material as PEM (string or Buffer), a JWK object, or a ready `KeyObject`. */
export type KeyMaterial = string | Buffer | JsonWebKey | KeyObject;

/** One key of a {@link KeySet}: bound to exactly one algorithm and one `kid`. */
export interface KeyDefinition {
  /** Key id, 1–128 characters of `A-Z a-z 0-9 . _ ~ + = -`. */
  kid: string;
  alg: SupportedAlgorithm;
  /** HS* only: the shared secret (a string is taken as UTF-8 bytes); at least as long as the hash output. */
  secret?: string | Buffer | KeyObject;
  /** RS256/PS256/ES256: the private key, when this key signs. The public key is derived from it. */
  privateKey?: KeyMaterial;
  /** RS256/PS256/ES256: the public key, for verification-only keys (or to double-check `privateKey`). */
  publicKey?: KeyMaterial;
}

/** Options of {@link KeySet}. */
export interface KeySetOptions {
  /** The kid that signs. Default: the first definition that can sign (has a secret or a private key). */
  activeKid?: string;
}

/** The key that signs new tokens. */
export interface SigningKey {
  kid: string;
  alg: SupportedAlgorithm;
  key: KeyObject;
}

/** A JSON Web Key Set document: only public members, never a secret. */
export interface JsonWebKeySet {
  keys: JsonWebKey[];
}

/**
 * Anything that finds the verification key for a token header: a local {@link KeySet} or a remote
 * {@link JwksCache}. It throws a `TokenError` (`unknown_kid`, `alg_mismatch`, `unsupported_alg`) when no key fits,
 * and a `KeySourceUnavailableError` when it cannot know.
 */
export interface KeyResolver {
  getKey(kid: string | undefined, alg: string): KeyObject | Promise<KeyObject>;
}

interface LoadedKey {
  kid: string;
  alg: SupportedAlgorithm;
  verifyKey: KeyObject;
  signKey: KeyObject | undefined;
  jwk: JsonWebKey | undefined;
}

function describe(kid: string): string {
  return `KeySet: key "${kid}"`;
}

function toSecretKey(kid: string, secret: string | Buffer | KeyObject): KeyObject {
  if (secret instanceof KeyObject) {
    if (secret.type !== 'secret') throw new OptionsError(`${describe(kid)}: secret must be a secret KeyObject, got a ${secret.type} key`);
    return secret;
  }
  if (typeof secret === 'string') return createSecretKey(Buffer.from(secret, 'utf8'));
  if (Buffer.isBuffer(secret)) return createSecretKey(Buffer.from(secret));
  throw new OptionsError(`${describe(kid)}: secret must be a string, a Buffer or a secret KeyObject`);
}

function toAsymmetricKey(kid: string, material: KeyMaterial, kind: 'private' | 'public'): KeyObject {
  if (material instanceof KeyObject) {
    if (material.type !== kind)
      throw new OptionsError(`${describe(kid)}: ${kind}Key must be a ${kind} KeyObject, got a ${material.type} key`);
    return material;
  }
  try {
    if (typeof material === 'string' || Buffer.isBuffer(material)) {
      return kind === 'private' ? createPrivateKey(material) : createPublicKey(material);
    }
    if (typeof material === 'object' && material !== null && typeof material.kty === 'string') {
      return kind === 'private' ? createPrivateKey({ key: material, format: 'jwk' }) : createPublicKey({ key: material, format: 'jwk' });
    }
  } catch {
    // The library's own message can echo key material; say only what is wrong.
  }
  throw new OptionsError(
    `${describe(kid)}: ${kind}Key must be a PEM string or Buffer, a JWK object or a KeyObject, and parse as a ${kind} key`,
  );
}

function explainMismatch(kid: string, alg: SupportedAlgorithm, key: KeyObject): string {
  if (isHmacAlgorithm(alg)) {
    if (key.type !== 'secret') return `${describe(kid)}: ${alg} needs a secret, not a ${key.type} key`;
    return `${describe(kid)}: the ${alg} secret has ${key.symmetricKeySize ?? 0} bytes; use at least ${minimumSecretBytes(alg)} random bytes (e.g. crypto.randomBytes(${minimumSecretBytes(alg)}))`;
  }
  if (key.type === 'secret') return `${describe(kid)}: ${alg} needs an asymmetric key pair, not a secret`;
  const type = key.asymmetricKeyType;
  if ((alg === 'RS256' || alg === 'PS256') && type === 'rsa') {
    return `${describe(kid)}: the RSA key has ${key.asymmetricKeyDetails?.modulusLength ?? 0} bits; ${alg} needs at least ${MINIMUM_RSA_BITS}`;
  }
  if (alg === 'ES256' && type === 'ec') {
    return `${describe(kid)}: ES256 needs a P-256 (prime256v1) key, got curve ${key.asymmetricKeyDetails?.namedCurve ?? 'unknown'}`;
  }
  return `${describe(kid)}: a ${type ?? 'unknown'} key cannot be used with ${alg}${type === 'rsa-pss' ? ' (use a plain RSA key for PS256)' : ''}`;
}

const DEFINITION_SCHEMA: OptionSchema = {
  kid: {
    type: 'string',
    required: true,
    expected: '1–128 characters of A-Z a-z 0-9 . _ ~ + = - (no "..")',
    check: (kid: string) =>
      isAcceptableKid(kid) ? undefined : `must be 1–128 characters of A-Z a-z 0-9 . _ ~ + = - (no ".."), got ${JSON.stringify(kid)}`,
  },
  alg: { type: 'string', required: true, expected: `one of ${SUPPORTED_ALGORITHMS.join(', ')}` },
  secret: { type: ['string', 'buffer', 'object'], expected: 'a string, a Buffer or a secret KeyObject' },
  privateKey: { type: ['string', 'buffer', 'object'], expected: 'a PEM string or Buffer, a JWK object or a KeyObject' },
  publicKey: { type: ['string', 'buffer', 'object'], expected: 'a PEM string or Buffer, a JWK object or a KeyObject' },
};

const OPTIONS_SCHEMA: OptionSchema = {
  activeKid: { type: 'string', expected: 'the kid of a key with a secret or private key' },
};

function loadKey(definition: KeyDefinition, index: number): LoadedKey {
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition))
    throw new OptionsError('KeySet: every key definition must be an object { kid, alg, ... }');
  const name = typeof definition.kid === 'string' && isAcceptableKid(definition.kid) ? `key "${definition.kid}"` : `key ${index}`;
  checkOptions(`KeySet: ${name}`, definition as unknown, DEFINITION_SCHEMA);
  const { kid, alg } = definition;
  if (!isSupportedAlgorithm(alg)) {
    throw new OptionsError(`${describe(kid)}: alg must be one of ${SUPPORTED_ALGORITHMS.join(', ')}, got ${JSON.stringify(alg)}`);
  }
  if (isHmacAlgorithm(alg)) {
    if (definition.secret === undefined) throw new OptionsError(`${describe(kid)}: ${alg} needs a secret`);
    if (definition.privateKey !== undefined || definition.publicKey !== undefined) {
      throw new OptionsError(`${describe(kid)}: ${alg} takes only a secret; remove privateKey/publicKey`);
    }
    const secret = toSecretKey(kid, definition.secret);
    if (!keyFitsAlgorithm(secret, alg)) throw new OptionsError(explainMismatch(kid, alg, secret));
    // A shared secret never appears in a JWKS.
    return { kid, alg, verifyKey: secret, signKey: secret, jwk: undefined };
  }
  if (definition.secret !== undefined) throw new OptionsError(`${describe(kid)}: ${alg} takes privateKey/publicKey, not a secret`);
  if (definition.privateKey === undefined && definition.publicKey === undefined) {
    throw new OptionsError(`${describe(kid)}: ${alg} needs a privateKey (to sign) or a publicKey (to verify)`);
  }
  const signKey = definition.privateKey === undefined ? undefined : toAsymmetricKey(kid, definition.privateKey, 'private');
  const derived = signKey ? createPublicKey(signKey) : undefined;
  const given = definition.publicKey === undefined ? undefined : toAsymmetricKey(kid, definition.publicKey, 'public');
  if (derived && given && !derived.equals(given)) {
    throw new OptionsError(`${describe(kid)}: publicKey does not belong to privateKey`);
  }
  const verifyKey = (given ?? derived) as KeyObject;
  if (!keyFitsAlgorithm(verifyKey, alg)) throw new OptionsError(explainMismatch(kid, alg, verifyKey));
  const exported = verifyKey.export({ format: 'jwk' });
  const jwk: JsonWebKey = { ...exported, kid, alg, use: 'sig' } as JsonWebKey;
  return { kid, alg, verifyKey, signKey, jwk };
}

/**
 * The kit's own keys, parsed once into `KeyObject`s. Each key is bound to one algorithm and one kid; one key is
 * the active signing key, the others only verify (rotation: add the new key, make it active, drop the old one once
 * the tokens it signed have expired).
 *
 * @example
 * const keys = new KeySet([
 *   { kid: '2026-11', alg: 'ES256', privateKey: process.env.JWT_PRIVATE_KEY_PEM },
 *   { kid: '2026-10', alg: 'ES256', publicKey: process.env.JWT_OLD_PUBLIC_KEY_PEM },
 * ], { activeKid: '2026-11' });
 */
export class KeySet implements KeyResolver {
  readonly activeKid: string | undefined;
  private readonly byKid = new Map<string, LoadedKey>();
  private readonly jwks: JsonWebKeySet;

  constructor(definitions: readonly KeyDefinition[], options: KeySetOptions = {}) {
    if (!Array.isArray(definitions) || definitions.length === 0) {
      throw new OptionsError('KeySet: pass a non-empty array of key definitions, e.g. [{ kid: "k1", alg: "ES256", privateKey: pem }]');
    }
    checkOptions('KeySet', options as unknown, OPTIONS_SCHEMA);
    for (const [index, definition] of definitions.entries()) {
      const loaded = loadKey(definition, index);
      if (this.byKid.has(loaded.kid)) throw new OptionsError(`KeySet: kid "${loaded.kid}" appears twice; every key needs its own kid`);
      this.byKid.set(loaded.kid, loaded);
    }
    const { activeKid } = options;
    if (activeKid !== undefined) {
      const active = this.byKid.get(activeKid);
      if (!active)
        throw new OptionsError(`KeySet: activeKid "${String(activeKid)}" is not one of the keys (${[...this.byKid.keys()].join(', ')})`);
      if (!active.signKey)
        throw new OptionsError(`KeySet: activeKid "${activeKid}" has only a public key; give its privateKey to sign with it`);
      this.activeKid = activeKid;
    } else {
      this.activeKid = [...this.byKid.values()].find((key) => key.signKey)?.kid;
    }
    this.jwks = { keys: [...this.byKid.values()].flatMap((key) => (key.jwk ? [Object.freeze({ ...key.jwk })] : [])) };
    Object.freeze(this.jwks.keys);
  }

  /**
   * A key set with one freshly generated key, for demos and tests (keys live only in memory).
   *
   * @example
   * const keys = KeySet.generate('RS256', 'demo-1');
   */
  static generate(alg: SupportedAlgorithm, kid: string = `${String(alg).toLowerCase()}-${randomBytes(6).toString('hex')}`): KeySet {
    if (!isSupportedAlgorithm(alg))
      throw new OptionsError(`KeySet.generate: alg must be one of ${SUPPORTED_ALGORITHMS.join(', ')}, got ${JSON.stringify(alg)}`);
    if (isHmacAlgorithm(alg)) return new KeySet([{ kid, alg, secret: randomBytes(minimumSecretBytes(alg)) }]);
    const pair =
      alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
    return new KeySet([{ kid, alg, privateKey: pair.privateKey }]);
  }

  /** The active signing key. Throws when the set only verifies. */
  get signingKey(): SigningKey {
    const active = this.activeKid === undefined ? undefined : this.byKid.get(this.activeKid);
    if (!active?.signKey) throw new OptionsError('KeySet: this key set has no signing key (only public keys were given)');
    return { kid: active.kid, alg: active.alg, key: active.signKey };
  }

  /** All kids, in definition order. */
  get kids(): string[] {
    return [...this.byKid.keys()];
  }

  /** The algorithms of the keys, without duplicates (handy as a verifier's allowlist). */
  get algorithms(): SupportedAlgorithm[] {
    return [...new Set([...this.byKid.values()].map((key) => key.alg))];
  }

  /**
   * The verification key for a token header, or undefined when none fits: the kid must exist and be bound to
   * exactly this alg; without a kid, the only key of that alg.
   *
   * @example
   * const key = keys.find(header.kid, header.alg);
   */
  find(kid: string | undefined, alg: string): KeyObject | undefined {
    if (kid === undefined) {
      const candidates = [...this.byKid.values()].filter((key) => key.alg === alg);
      return candidates.length === 1 ? candidates[0]?.verifyKey : undefined;
    }
    const key = this.byKid.get(kid);
    return key && key.alg === alg ? key.verifyKey : undefined;
  }

  /**
   * {@link KeyResolver} over this set: like {@link KeySet.find}, but throws a `TokenError` saying why nothing fits.
   *
   * @example
   * const key = keys.getKey('2026-11', 'ES256');
   */
  getKey(kid: string | undefined, alg: string): KeyObject {
    const key = this.find(kid, alg);
    if (key) return key;
    if (kid !== undefined && this.byKid.has(kid)) throw new TokenError('alg_mismatch');
    throw new TokenError('unknown_kid');
  }

  /**
   * The public JWKS document: public members of the asymmetric keys only, each with kid, alg and `use: "sig"`.
   * HS* secrets are never included.
   *
   * @example
   * app.get('/.well-known/jwks.json', (req, res) => res.json(keys.publicJwks()));
   */
  publicJwks(): JsonWebKeySet {
    return { keys: this.jwks.keys.map((key) => ({ ...key })) };
  }
}
