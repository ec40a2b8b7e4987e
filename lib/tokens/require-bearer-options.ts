import { createSecretKey, KeyObject } from 'node:crypto';
import type { Request } from 'express';
import type { JwtPayload } from './types';
import { REQUIREMENT_OPTIONS, type AuthenticationLevel, type AuthenticationRequirement } from '../session/step-up';
import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import type { KeyValueStore } from '../store/port';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import { isHmacAlgorithm, keyFitsAlgorithm, minimumSecretBytes, type SupportedAlgorithm } from './algorithms';
import { JwksCache, JWKS_TUNING_SCHEMA, type JwksCacheOptions } from './jwks-cache';
import type { KeyResolver } from './key-set';
import { TokenRevocations } from './token-revocations';
import { ACCESS_TOKEN_CLAIMS, TokenService } from './token-service';
import { createJwtVerifier, VERIFIER_SCHEMA, type VerifiedJwt } from './verify-jwt';
import { dpopBinding, type DpopBinding, type DpopMode, type RequireDpopOptions } from './dpop/require-dpop';

/**
 * Options of {@link requireBearer}. Exactly one key source: `secret`, `keys`, `jwksUri`, or `tokenService` (which
 * also gives the issuer, the algorithms, `typ: at+jwt` and the revocation check).
 */
export interface RequireBearerOptions {
  /** HS* shared secret (string = UTF-8 bytes, at least as long as the hash output). Turned into a KeyObject once. */
  secret?: string | Buffer | KeyObject;
  /** A `KeySet`, a `JwksCache` or any {@link KeyResolver}. */
  keys?: KeyResolver;
  /** The issuer's JWKS URL; a {@link JwksCache} is built from it (tune it with `jwks`). */
  jwksUri?: string;
  /** Tuning of the JwksCache built from `jwksUri` (timeoutSeconds, cooldownSeconds, maxAgeSeconds, …). */
  jwks?: Omit<JwksCacheOptions, 'uri' | 'events'>;
  /**
   * The kit's `TokenService` whose access tokens this API accepts: its keys, issuer, algorithms, `typ: at+jwt`, the
   * RFC 9068 claims, and (with a store) the revocation of grants, reused refresh tokens included, with no more wiring.
   */
  tokenService?: TokenService;
  /**
   * The store a `TokenService` in another process writes its revocations to (for `keys`/`jwksUri` setups): tokens
   * carrying a grant (`gid`) are refused once it is revoked.
   */
  revocationStore?: KeyValueStore;
  /** Allowed `alg` values; required unless `tokenService`. Never `none`; never HS* mixed with asymmetric. */
  algorithms?: readonly SupportedAlgorithm[];
  /** Accepted `iss`; required unless `tokenService`. */
  issuer?: string | readonly string[];
  /** Accepted `aud`. Required. */
  audience: string | readonly string[];
  /** Leeway for exp/nbf/iat. Default 5 s (enough for NTP-synced servers, small enough to keep exp meaningful). */
  clockToleranceSeconds?: number;
  /** Refuse tokens older than this (by iat). Default: no limit beyond exp. */
  maxTokenAgeSeconds?: number;
  /**
   * The `typ` header access tokens must carry (RFC 8725 §3.11, ASVS 9.2.2), compared case-insensitively with
   * `application/` optional. Default `at+jwt` (RFC 9068), so an ID token or another JWT of the issuer cannot pass
   * as an access token. For an issuer that types its access tokens `JWT` (Keycloak, Entra ID), give `'JWT'`; for one
   * that sends no `typ`, `false` turns the check off (the audience check is then all that tells the kinds apart).
   */
  typ?: string | false;
  /** Claims that must be present besides exp, iss, aud. */
  requiredClaims?: readonly string[];
  /** The `realm` of the challenge. Default `api`. */
  realm?: string;
  /** Consulted on every request, cached tokens included. Return true to refuse (401). A rejection is passed on (a store outage → 503). */
  isRevoked?: (claims: JwtPayload, req: Request) => boolean | Promise<boolean>;
  /** Accept `?access_token=` (RFC 6750 §2.3). Default false: URLs end up in logs, history and Referer headers. */
  allowQueryToken?: boolean;
  /** Accept `access_token` in a form-encoded body (RFC 6750 §2.2, needs a body parser). Default false. */
  allowBodyToken?: boolean;
  /** Verified tokens kept in memory (LRU, keyed by SHA-256 of the token). Default 1000; 0 disables. */
  cacheSize?: number;
  /** Longest token accepted, in characters. Default 8192. */
  maxTokenLength?: number;
  /**
   * The least authentication level the token's `acr` (or, for other values, its `amr`) must show: `1fa`, `2fa` or
   * `phr`. Below it: 401 `insufficient_user_authentication` (RFC 9470) with `acr_values`. Default: not checked.
   */
  acr?: AuthenticationLevel;
  /** The token's `auth_time` must be at most this many seconds ago (RFC 9470 `max_age`); a token without it is refused. */
  maxAgeSeconds?: number;
  /**
   * Where refusals are recorded (`token.refused` with the reason) and verification latency is measured. Default the
   * events of `tokenService`, when it has some. A token accepted from the cache costs nothing more.
   */
  events?: SecurityEvents;
  /**
   * Accept DPoP-bound tokens (RFC 9449): `Authorization: DPoP <token>` with a `DPoP` proof of the key in the token's
   * `cnf.jkt`. `'allowed'`: those, and Bearer tokens not bound to a key; `'required'`: only those. The long form
   * `{ mode, replayStore, algorithms, proofMaxAgeSeconds, clockSkewSeconds, nonce }` tunes the proof check; the
   * replay store defaults to the `tokenService`'s store or the `revocationStore`. Default: off, and a token bound to
   * a key is refused (whoever sends it as Bearer cannot show they hold the key).
   */
  dpop?: DpopMode | RequireDpopOptions;
}

/** What the factory needs, worked out once from the options. */
export interface BearerSetup {
  verify: (token: string) => Promise<VerifiedJwt>;
  revocations: TokenRevocations | undefined;
  realm: string;
  maxTokenAgeMs: number | undefined;
  /** The route's authentication requirement, or undefined when `acr`/`auth_time` are not checked. */
  requirement: AuthenticationRequirement | undefined;
  events: SecurityEvents | undefined;
  /** The DPoP half, or undefined when `dpop` is not given. */
  dpop: DpopBinding | undefined;
}

const SCHEMA: OptionSchema = {
  secret: { type: ['string', 'buffer', 'object'], expected: 'a string, a Buffer or a secret KeyObject' },
  keys: { ...VERIFIER_SCHEMA.keys, required: false },
  jwksUri: { type: 'string', expected: 'the JWKS URL, e.g. "https://auth.example.test/.well-known/jwks.json"' },
  jwks: { type: 'object', expected: 'JwksCache tuning, e.g. { timeoutSeconds: 2 }' },
  tokenService: { type: 'object', expected: 'a TokenService' },
  revocationStore: { type: 'object', expected: 'a KeyValueStore, e.g. the RedisStore of the TokenService' },
  algorithms: { ...VERIFIER_SCHEMA.algorithms, required: false },
  issuer: { ...VERIFIER_SCHEMA.issuer, required: false },
  audience: VERIFIER_SCHEMA.audience,
  clockToleranceSeconds: VERIFIER_SCHEMA.clockToleranceSeconds,
  maxTokenAgeSeconds: VERIFIER_SCHEMA.maxTokenAgeSeconds,
  typ: {
    type: ['string', 'boolean'],
    expected: 'a media type such as "at+jwt" or "JWT", or false',
    check: (typ: string | boolean) => (typ === '' || typ === true ? 'must be a media type such as "JWT", or false' : undefined),
  },
  dpop: {
    type: ['string', 'object'],
    expected: '"allowed", "required" or { mode, replayStore, … }',
    check: (dpop: unknown) =>
      typeof dpop !== 'string' || dpop === 'allowed' || dpop === 'required' ? undefined : 'must be "allowed" or "required"',
  },
  requiredClaims: VERIFIER_SCHEMA.requiredClaims,
  maxTokenLength: VERIFIER_SCHEMA.maxTokenLength,
  realm: {
    type: 'string',
    expected: 'printable ASCII without quotes or backslashes',
    check: (realm: string) =>
      /^[\x20-\x7e]*$/.test(realm) && !/["\\]/.test(realm) ? undefined : 'must be printable ASCII without quotes or backslashes',
  },
  isRevoked: { type: 'function', expected: 'a function (claims, req) => boolean | Promise<boolean>' },
  allowQueryToken: { type: 'boolean' },
  allowBodyToken: { type: 'boolean' },
  cacheSize: { type: 'integer', expected: 'a whole number from 0 to 1000000', check: within(0, 1_000_000) },
  ...REQUIREMENT_OPTIONS,
  events: EVENTS_OPTION,
};

const RELATIONS = {
  exactlyOne: [['secret', 'keys', 'jwksUri', 'tokenService']],
  // The service already says who issues its tokens, with which algorithms and type, and where revocations live.
  exclusive: [
    ['tokenService', 'issuer'],
    ['tokenService', 'algorithms'],
    ['tokenService', 'typ'],
    ['tokenService', 'revocationStore'],
  ],
} as const;

function secretResolver(secret: string | Buffer | KeyObject, algorithms: readonly SupportedAlgorithm[]): KeyResolver {
  if (!algorithms.every(isHmacAlgorithm))
    throw new OptionsError('requireBearer: a secret only verifies HS256/HS384/HS512; list only those in algorithms');
  let key: KeyObject;
  if (secret instanceof KeyObject) {
    if (secret.type !== 'secret')
      throw new OptionsError(
        'requireBearer: secret must be a string, a Buffer or a secret KeyObject (for public keys use keys or jwksUri)',
      );
    key = secret;
  } else if (typeof secret === 'string' || Buffer.isBuffer(secret)) {
    key = createSecretKey(Buffer.from(secret as never));
  } else {
    throw new OptionsError('requireBearer: secret must be a string, a Buffer or a secret KeyObject');
  }
  for (const alg of algorithms) {
    if (!keyFitsAlgorithm(key, alg)) {
      throw new OptionsError(
        `requireBearer: the secret has ${key.symmetricKeySize ?? 0} bytes; ${alg} needs at least ${minimumSecretBytes(alg)} random bytes`,
      );
    }
  }
  // Built once here: jsonwebtoken rebuilds a key from a string secret on every verify (~420 µs against ~8 µs).
  return { getKey: () => key };
}

function resolverFrom(
  options: RequireBearerOptions,
  algorithms: readonly SupportedAlgorithm[],
  events: SecurityEvents | undefined,
): KeyResolver {
  if (options.secret !== undefined) return secretResolver(options.secret, algorithms);
  if (options.keys !== undefined) return options.keys;
  if (algorithms.some(isHmacAlgorithm))
    throw new OptionsError('requireBearer: a JWKS publishes public keys only; algorithms must not list HS*');
  checkOptions('requireBearer: jwks', options.jwks ?? {}, JWKS_TUNING_SCHEMA);
  return new JwksCache({ ...options.jwks, uri: options.jwksUri as string, ...(events === undefined ? {} : { events }) });
}

/**
 * Checks the options of `requireBearer` (one rule for every factory: unknown keys, types, contradictions) and
 * builds the verifier, the key resolver and the revocation reads once.
 *
 * @example
 * const setup = bearerSetup({ tokenService, audience: 'api' });
 */
export function bearerSetup(options: RequireBearerOptions): BearerSetup {
  if (typeof options === 'object' && options !== null && 'requiredScopes' in options && !('method' in options)) {
    throw new OptionsError(
      "requireBearer: requiredScopes is no longer an option; mount requiredScopes('orders:read') after requireBearer() on the routes that need it",
    );
  }
  checkOptions('requireBearer', options as unknown, SCHEMA, RELATIONS);
  const service = options.tokenService;
  if (service !== undefined && !(service instanceof TokenService))
    throw new OptionsError('requireBearer: tokenService must be a TokenService');
  if (service === undefined && options.issuer === undefined)
    throw new OptionsError('requireBearer: issuer is required (or give tokenService)');
  if (service === undefined && options.algorithms === undefined) {
    throw new OptionsError("requireBearer: algorithms is required, e.g. ['RS256']; there is no default, so a token cannot pick its own");
  }
  if (options.jwks !== undefined && options.jwksUri === undefined)
    throw new OptionsError('requireBearer: jwks tunes the cache of jwksUri; give jwksUri too');
  const events = eventsOption('requireBearer', options.events) ?? service?.events;
  const algorithms = service?.algorithms ?? (options.algorithms as readonly SupportedAlgorithm[]);
  const keys = service?.keys ?? resolverFrom(options, algorithms, events);
  // RFC 9068 §4 and ASVS 9.2.2: checked unless turned off, so no other JWT of the issuer passes as an access token.
  const typ = service ? 'at+jwt' : options.typ === false ? undefined : (options.typ ?? 'at+jwt');
  const requiredClaims = service ? [...new Set([...ACCESS_TOKEN_CLAIMS, ...(options.requiredClaims ?? [])])] : options.requiredClaims;
  const verify = createJwtVerifier({
    keys,
    algorithms,
    issuer: service?.issuer ?? (options.issuer as string | readonly string[]),
    audience: options.audience,
    ...(options.clockToleranceSeconds !== undefined ? { clockToleranceSeconds: options.clockToleranceSeconds } : {}),
    ...(options.maxTokenAgeSeconds !== undefined ? { maxTokenAgeSeconds: options.maxTokenAgeSeconds } : {}),
    ...(typ !== undefined ? { typ } : {}),
    ...(requiredClaims !== undefined ? { requiredClaims } : {}),
    ...(options.maxTokenLength !== undefined ? { maxTokenLength: options.maxTokenLength } : {}),
  });
  const revocations = service?.revocations ?? (options.revocationStore ? new TokenRevocations(options.revocationStore) : undefined);
  const realm = options.realm ?? 'api';
  return {
    verify,
    revocations,
    realm,
    dpop: dpopBinding(options.dpop, realm, service?.store ?? options.revocationStore),
    maxTokenAgeMs: options.maxTokenAgeSeconds === undefined ? undefined : options.maxTokenAgeSeconds * 1000,
    requirement:
      options.acr === undefined && options.maxAgeSeconds === undefined
        ? undefined
        : {
            ...(options.acr === undefined ? {} : { acr: options.acr }),
            ...(options.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: options.maxAgeSeconds }),
          },
    events,
  };
}
