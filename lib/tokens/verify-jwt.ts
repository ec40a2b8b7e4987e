import type { KeyObject } from 'node:crypto';
import jwt, { type JwtHeader, type JwtPayload } from 'jsonwebtoken';
import {
  isAcceptableKid,
  isHmacAlgorithm,
  isSupportedAlgorithm,
  keyFitsAlgorithm,
  SUPPORTED_ALGORITHMS,
  type SupportedAlgorithm,
} from './algorithms';
import { TokenError } from './errors';
import type { KeyResolver } from './key-set';
import { parseJsonObject } from './strict-json';

/** Options of {@link verifyJwt} and {@link createJwtVerifier}. */
export interface VerifyJwtOptions {
  /** Where verification keys come from: a `KeySet`, a `JwksCache`, or any other {@link KeyResolver}. */
  keys: KeyResolver;
  /** The allowlist of `alg` values. Required; never contains `none`; never mixes HS* with asymmetric algorithms. */
  algorithms: readonly SupportedAlgorithm[];
  /** Accepted `iss` value(s). Required. */
  issuer: string | readonly string[];
  /** Accepted `aud` value(s); the token must name at least one. Required. */
  audience: string | readonly string[];
  /** Leeway for exp/nbf/iat against clock skew between servers. Default 5 seconds, at most 300. */
  clockToleranceSeconds?: number;
  /** Refuse tokens whose `iat` is older than this (and require `iat`). Default: no limit beyond exp. */
  maxTokenAgeSeconds?: number;
  /** Required `typ` header, e.g. `at+jwt` (compared case-insensitively, `application/` optional per RFC 7515). */
  typ?: string;
  /** Claims that must be present besides exp, iss and aud (e.g. `['sub', 'iat']`). */
  requiredClaims?: readonly string[];
  /** Required `nonce` claim (ID tokens). */
  nonce?: string;
  /** Longest token accepted, in characters. Default 8192. */
  maxTokenLength?: number;
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** A verified token. */
export interface VerifiedJwt {
  header: JwtHeader;
  claims: JwtPayload;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const DEFAULT_MAX_TOKEN_LENGTH = 8192;
const DEFAULT_CLOCK_TOLERANCE_SECONDS = 5;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function fail(message: string): never {
  throw new TypeError(`verifyJwt: ${message}`);
}

function stringList(name: string, value: unknown): readonly string[] {
  const list = typeof value === 'string' ? [value] : Array.isArray(value) ? value : undefined;
  if (!list || list.length === 0 || list.some((item) => typeof item !== 'string' || item === '')) {
    fail(`${name} is required: a non-empty string or array of strings, got ${JSON.stringify(value)}`);
  }
  return Object.freeze([...list] as string[]);
}

function nonNegative(name: string, value: unknown, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > max) {
    fail(`${name} must be a number of seconds between 0 and ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Checks an algorithm allowlist; shared with `requireBearer` so both refuse the same mistakes. */
export function validateAlgorithms(owner: string, value: unknown): readonly SupportedAlgorithm[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(`${owner}: algorithms is required, e.g. ['RS256']; there is no default, so a token cannot pick its own`);
  }
  for (const alg of value) {
    if (!isSupportedAlgorithm(alg)) {
      throw new TypeError(`${owner}: algorithms may only contain ${SUPPORTED_ALGORITHMS.join(', ')}, got ${JSON.stringify(alg)}`);
    }
  }
  const hmac = value.filter((alg: string) => isHmacAlgorithm(alg));
  if (hmac.length > 0 && hmac.length < value.length) {
    // Mixing lets a token signed with HS256 using the public key as the secret pass (the alg confusion attack).
    throw new TypeError(`${owner}: algorithms must not mix HS* with asymmetric algorithms, got ${value.join(', ')}`);
  }
  return Object.freeze([...new Set(value as SupportedAlgorithm[])]);
}

function decodeSegment(segment: string): Record<string, unknown> {
  const bytes = Buffer.from(segment, 'base64url');
  // Non-canonical encodings (stray trailing bits) would let two strings carry one token.
  if (bytes.toString('base64url') !== segment) throw new TokenError('malformed');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new TokenError('malformed');
  }
  const parsed = parseJsonObject(text);
  if ('error' in parsed) throw new TokenError(parsed.error);
  return parsed.value;
}

function normalizeTyp(typ: string): string {
  const lower = typ.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

function numericClaim(claims: JwtPayload, name: string): number | undefined {
  const value = (claims as Record<string, unknown>)[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TokenError('invalid_claim', name);
  return value;
}

/**
 * Builds a verifier with the options checked once (a `TypeError` names any bad option). The verifier refuses,
 * before any cryptography: wrong segment count, bad base64url, oversize tokens, an `alg` outside the allowlist,
 * `crit`, repeated JSON members and odd kids; it never follows `jku`, `x5u`, `jwk` or `x5c`. Then it checks the
 * signature with jsonwebtoken and a `KeyObject` bound to the header's alg, and the claims: exp (required), nbf,
 * iat, iss, aud, typ, nonce, required claims. Every refusal is a {@link TokenError}.
 *
 * @example
 * const verify = createJwtVerifier({ keys, algorithms: ['ES256'], issuer: 'https://auth.example.test', audience: 'shop' });
 * const { claims } = await verify(token);
 */
export function createJwtVerifier(options: VerifyJwtOptions): (token: string) => Promise<VerifiedJwt> {
  if (typeof options !== 'object' || options === null) fail('pass options { keys, algorithms, issuer, audience }');
  const { keys } = options;
  if (typeof keys !== 'object' || keys === null || typeof keys.getKey !== 'function') {
    fail('keys is required: a KeySet, a JwksCache or an object with getKey(kid, alg)');
  }
  const algorithms = new Set<string>(validateAlgorithms('verifyJwt', options.algorithms));
  const issuers = new Set(stringList('issuer', options.issuer));
  const audiences = new Set(stringList('audience', options.audience));
  const tolerance = nonNegative('clockToleranceSeconds', options.clockToleranceSeconds, 300) ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
  const maxAge = nonNegative('maxTokenAgeSeconds', options.maxTokenAgeSeconds);
  const maxLength = nonNegative('maxTokenLength', options.maxTokenLength) ?? DEFAULT_MAX_TOKEN_LENGTH;
  if (options.typ !== undefined && (typeof options.typ !== 'string' || options.typ === ''))
    fail('typ must be a non-empty string such as "at+jwt"');
  const typ = options.typ === undefined ? undefined : normalizeTyp(options.typ);
  if (options.nonce !== undefined && (typeof options.nonce !== 'string' || options.nonce === '')) fail('nonce must be a non-empty string');
  const nonce = options.nonce;
  if (
    options.requiredClaims !== undefined &&
    (!Array.isArray(options.requiredClaims) || options.requiredClaims.some((c) => typeof c !== 'string'))
  ) {
    fail('requiredClaims must be an array of claim names');
  }
  const requiredClaims = Object.freeze([...(options.requiredClaims ?? [])]);
  if (options.now !== undefined && typeof options.now !== 'function') fail('now must be a function returning epoch milliseconds');
  const now = options.now ?? Date.now;

  return async function verifyToken(token: string): Promise<VerifiedJwt> {
    if (typeof token !== 'string' || token === '') throw new TokenError('malformed');
    if (token.length > maxLength) throw new TokenError('too_large');
    const segments = token.split('.');
    if (segments.length !== 3) throw new TokenError('malformed');
    const [headerPart = '', payloadPart = '', signaturePart = ''] = segments;
    if (!BASE64URL.test(headerPart) || !BASE64URL.test(payloadPart) || !BASE64URL.test(signaturePart)) throw new TokenError('malformed');

    const header = decodeSegment(headerPart);
    const alg = header.alg;
    if (typeof alg !== 'string' || !algorithms.has(alg)) throw new TokenError('unsupported_alg');
    // We understand no critical extension, so RFC 7515 §4.1.11 obliges us to refuse any (b64=false among them).
    if (header.crit !== undefined) throw new TokenError('unsupported_crit');
    if (typ !== undefined && (typeof header.typ !== 'string' || normalizeTyp(header.typ) !== typ)) throw new TokenError('wrong_typ');
    const kid = header.kid;
    // A kid that looks like a path or a query is treated as simply unknown; it never reaches a lookup.
    if (kid !== undefined && !isAcceptableKid(kid)) throw new TokenError('unknown_kid');
    const claims = decodeSegment(payloadPart) as JwtPayload;

    // jku, x5u, jwk and x5c are never read: the key comes only from our resolver.
    const key: KeyObject = await keys.getKey(kid, alg);
    if (!keyFitsAlgorithm(key, alg)) throw new TokenError('alg_mismatch');
    try {
      jwt.verify(token, key, { algorithms: [alg as jwt.Algorithm], ignoreExpiration: true, ignoreNotBefore: true });
    } catch {
      throw new TokenError('bad_signature');
    }

    const nowSeconds = now() / 1000;
    const exp = numericClaim(claims, 'exp');
    if (exp === undefined) throw new TokenError('missing_claim', 'exp');
    if (nowSeconds >= exp + tolerance) throw new TokenError('expired');
    const nbf = numericClaim(claims, 'nbf');
    if (nbf !== undefined && nbf > nowSeconds + tolerance) throw new TokenError('not_yet_valid');
    const iat = numericClaim(claims, 'iat');
    if (iat !== undefined && iat > nowSeconds + tolerance) throw new TokenError('issued_in_future');
    if (maxAge !== undefined) {
      if (iat === undefined) throw new TokenError('missing_claim', 'iat');
      if (nowSeconds > iat + maxAge + tolerance) throw new TokenError('too_old');
    }
    if (claims.iss === undefined) throw new TokenError('missing_claim', 'iss');
    if (typeof claims.iss !== 'string' || !issuers.has(claims.iss)) throw new TokenError('wrong_issuer');
    const aud: unknown = claims.aud;
    if (aud === undefined) throw new TokenError('missing_claim', 'aud');
    const tokenAudiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : undefined;
    if (!tokenAudiences || tokenAudiences.some((entry) => typeof entry !== 'string')) throw new TokenError('invalid_claim', 'aud');
    if (!tokenAudiences.some((entry) => audiences.has(entry as string))) throw new TokenError('wrong_audience');
    if (claims.sub !== undefined && typeof claims.sub !== 'string') throw new TokenError('invalid_claim', 'sub');
    if (nonce !== undefined && claims.nonce !== nonce) throw new TokenError('wrong_nonce');
    for (const name of requiredClaims) {
      if ((claims as Record<string, unknown>)[name] === undefined) throw new TokenError('missing_claim', name);
    }
    return { header: header as unknown as JwtHeader, claims };
  };
}

/**
 * Verifies one JWT (see {@link createJwtVerifier} for every rule). For many tokens with the same options, build a
 * verifier once with `createJwtVerifier` instead.
 *
 * @example
 * const { claims } = await verifyJwt(idToken, { keys: jwks, algorithms: ['RS256'], issuer, audience: clientId, nonce });
 */
export function verifyJwt(token: string, options: VerifyJwtOptions): Promise<VerifiedJwt> {
  return createJwtVerifier(options)(token);
}
