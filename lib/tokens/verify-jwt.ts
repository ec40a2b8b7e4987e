import type { KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { JwtHeader, JwtPayload } from './types';
import {
  isAcceptableKid,
  isHmacAlgorithm,
  isSupportedAlgorithm,
  keyFitsAlgorithm,
  SUPPORTED_ALGORITHMS,
  type SupportedAlgorithm,
} from './algorithms';
import { checkOptions, within, type OptionSchema } from '../util/options';
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

function nonEmptyList(value: string | readonly string[]): string | undefined {
  const list = typeof value === 'string' ? [value] : value;
  return list.length === 0 || list.some((item) => item === '') ? `is required: a non-empty string or array of strings` : undefined;
}

/** Why an algorithm allowlist is unusable, or undefined; shared with `requireBearer` so both refuse the same mistakes. */
export function algorithmsProblem(value: readonly string[]): string | undefined {
  if (value.length === 0) return "is required, e.g. ['RS256']; there is no default, so a token cannot pick its own";
  const unsupported = value.find((alg) => !isSupportedAlgorithm(alg));
  if (unsupported !== undefined) return `may only contain ${SUPPORTED_ALGORITHMS.join(', ')}, got ${JSON.stringify(unsupported)}`;
  const hmac = value.filter((alg) => isHmacAlgorithm(alg));
  // Mixing lets a token signed with HS256 using the public key as the secret pass (the alg confusion attack).
  if (hmac.length > 0 && hmac.length < value.length) return `must not mix HS* with asymmetric algorithms, got ${value.join(', ')}`;
  return undefined;
}

/** The option schema of the verifier; `requireBearer` reuses the entries it shares. */
export const VERIFIER_SCHEMA = {
  keys: {
    type: 'object',
    required: true,
    expected: 'a KeySet, a JwksCache or an object with getKey(kid, alg)',
    check: (keys: KeyResolver) => (typeof keys.getKey === 'function' ? undefined : 'must have a getKey(kid, alg) method'),
  },
  algorithms: { type: 'string[]', required: true, expected: "an array such as ['RS256']", check: algorithmsProblem },
  issuer: { type: ['string', 'string[]'], required: true, expected: 'a non-empty string or array of strings', check: nonEmptyList },
  audience: { type: ['string', 'string[]'], required: true, expected: 'a non-empty string or array of strings', check: nonEmptyList },
  clockToleranceSeconds: { type: 'number', expected: 'a number of seconds from 0 to 300', check: within(0, 300) },
  maxTokenAgeSeconds: { type: 'number', expected: 'a number of seconds ≥ 0', check: within(0, Number.MAX_SAFE_INTEGER) },
  typ: {
    type: 'string',
    expected: 'a media type such as "at+jwt"',
    check: (typ: string) => (typ === '' ? 'must not be empty' : undefined),
  },
  requiredClaims: { type: 'string[]', expected: 'an array of claim names' },
  nonce: { type: 'string', check: (nonce: string) => (nonce === '' ? 'must not be empty' : undefined) },
  maxTokenLength: { type: 'integer', expected: 'a whole number of characters ≥ 1', check: within(1, Number.MAX_SAFE_INTEGER) },
  now: { type: 'function', expected: 'a function returning epoch milliseconds' },
} satisfies OptionSchema;

/**
 * A JWS header or payload segment as a JSON object, read strictly: canonical base64url, valid UTF-8, no repeated
 * members. Refusals are {@link TokenError}s (`malformed`, `duplicate_member`); the DPoP proof check reuses it.
 *
 * @example
 * const header = decodeSegment(token.slice(0, token.indexOf('.')));
 */
export function decodeSegment(segment: string): Record<string, unknown> {
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

/**
 * A `typ` header as RFC 7515 §4.1.9 compares it: case-insensitive, with `application/` optional.
 *
 * @example
 * normalizeTyp('application/AT+JWT'); // 'at+jwt'
 */
export function normalizeTyp(typ: string): string {
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
 * Builds a verifier with the options checked once (an `OptionsError` names any bad option). The verifier refuses,
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
  return buildVerifier('createJwtVerifier', options);
}

function buildVerifier(owner: string, options: VerifyJwtOptions): (token: string) => Promise<VerifiedJwt> {
  checkOptions(owner, options, VERIFIER_SCHEMA);
  const { keys } = options;
  const algorithms = new Set<string>(options.algorithms);
  const issuers = new Set(typeof options.issuer === 'string' ? [options.issuer] : options.issuer);
  const audiences = new Set(typeof options.audience === 'string' ? [options.audience] : options.audience);
  const tolerance = options.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
  const maxAge = options.maxTokenAgeSeconds;
  const maxLength = options.maxTokenLength ?? DEFAULT_MAX_TOKEN_LENGTH;
  const typ = options.typ === undefined ? undefined : normalizeTyp(options.typ);
  const nonce = options.nonce;
  const requiredClaims = Object.freeze([...(options.requiredClaims ?? [])]);
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
  return buildVerifier('verifyJwt', options)(token);
}
