import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { KeyValueStore } from '../store/port';
import { isHmacAlgorithm } from './algorithms';
import { TokenError } from './errors';
import { KeySet } from './key-set';
import { RefreshTokens, type RevocableClaims } from './refresh-tokens';
import { createJwtVerifier, type VerifiedJwt } from './verify-jwt';

/** Options of {@link TokenService}. */
export interface TokenServiceOptions {
  /** Signs with `keys.signingKey`. */
  keys: KeySet;
  /** The `iss` of every token, e.g. `https://auth.example.test`. */
  issuer: string;
  /** Default access-token lifetime. Default 3600 (spec §2.8: minutes to hours; QR login passes 7200 per §8). */
  accessTokenTtlSeconds?: number;
  /** ID-token lifetime. Default 300: the relying party checks it once, right after login (spec §2.8: 5 min–1 h). */
  idTokenTtlSeconds?: number;
  /** Refresh-token lifetime, when `store` is given. Default 14 days (spec §2.8: days to weeks). */
  refreshTokenTtlSeconds?: number;
  /** Longest life of a refresh-token family (one login) across rotations. Default 90 days. */
  refreshTokenAbsoluteLifetimeSeconds?: number;
  /** Enables `refreshTokens`, `revokeGrant` and `isRevoked`. */
  store?: KeyValueStore;
  /** Leeway used by {@link TokenService.verifyAccessToken}. Default 5 s. */
  clockToleranceSeconds?: number;
}

/** What {@link TokenService.issueAccessToken} takes. */
export interface AccessTokenInput {
  subject: string;
  audience: string | string[];
  /** Space-separated scopes, or a list. */
  scope?: string | string[];
  roles?: string[];
  clientId?: string;
  grantId?: string;
  expiresInSeconds?: number;
}

/** What {@link TokenService.issueIdToken} takes. */
export interface IdTokenInput {
  subject: string;
  /** The client id of the relying party. */
  audience: string;
  name?: string;
  nonce?: string;
  /** When the user authenticated, epoch seconds (`auth_time`). */
  authTime?: number;
  /** Session id for logout (`sid`). */
  sessionId?: string;
  /** Further claims (e.g. `email`); they cannot override the registered ones. */
  claims?: Record<string, unknown>;
  expiresInSeconds?: number;
}

/** A signed token and its bookkeeping. */
export interface IssuedToken {
  token: string;
  /** Seconds until it expires. */
  expiresIn: number;
  jti: string;
}

const REGISTERED = new Set(['iss', 'sub', 'aud', 'exp', 'iat', 'nbf', 'jti', 'nonce', 'auth_time', 'sid', 'azp']);

function lifetime(owner: string, name: string, value: unknown, fallback: number, max = 30 * 24 * 3600): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw new TypeError(`${owner}: ${name} must be a whole number of seconds between 1 and ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function nonEmpty(owner: string, name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '')
    throw new TypeError(`${owner}: ${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  return value;
}

/**
 * Issues the kit's own JWTs (access tokens with `typ: at+jwt`, ID tokens) signed by the active key of a
 * {@link KeySet}, and, with a store, opaque rotating refresh tokens.
 *
 * @example
 * const tokens = new TokenService({ keys: KeySet.generate('ES256'), issuer: 'https://auth.example.test', store });
 * const { token, expiresIn } = tokens.issueAccessToken({ subject: 'alice', audience: 'shop', scope: 'orders:read' });
 */
export class TokenService {
  readonly keys: KeySet;
  readonly issuer: string;
  readonly accessTokenTtlSeconds: number;
  readonly idTokenTtlSeconds: number;
  /** Present when a store was given. */
  readonly refreshTokens: RefreshTokens | undefined;
  private readonly clockToleranceSeconds: number;
  private readonly verifiers = new Map<string, (token: string) => Promise<VerifiedJwt>>();

  constructor(options: TokenServiceOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('TokenService: pass options { keys, issuer }');
    if (!(options.keys instanceof KeySet))
      throw new TypeError('TokenService: keys must be a KeySet, e.g. new KeySet([{ kid, alg: "ES256", privateKey }])');
    this.keys = options.keys;
    // Fails now rather than at the first login when the set has only public keys.
    void this.keys.signingKey;
    this.issuer = nonEmpty('TokenService', 'issuer', options.issuer);
    this.accessTokenTtlSeconds = lifetime('TokenService', 'accessTokenTtlSeconds', options.accessTokenTtlSeconds, 3600, 24 * 3600);
    this.idTokenTtlSeconds = lifetime('TokenService', 'idTokenTtlSeconds', options.idTokenTtlSeconds, 300, 3600);
    this.clockToleranceSeconds = options.clockToleranceSeconds ?? 5;
    this.refreshTokens =
      options.store === undefined
        ? undefined
        : new RefreshTokens({
            store: options.store,
            accessTokenTtlSeconds: this.accessTokenTtlSeconds,
            ...(options.refreshTokenTtlSeconds !== undefined ? { ttlSeconds: options.refreshTokenTtlSeconds } : {}),
            ...(options.refreshTokenAbsoluteLifetimeSeconds !== undefined
              ? { absoluteLifetimeSeconds: options.refreshTokenAbsoluteLifetimeSeconds }
              : {}),
          });
  }

  /**
   * Signs an access token (RFC 9068 shape): iss, sub, aud, exp, iat, jti, scope, roles, client_id, gid.
   *
   * @example
   * const { token, expiresIn } = tokens.issueAccessToken({ subject: 'alice', audience: 'api', clientId: 'shop', expiresInSeconds: 7200 });
   */
  issueAccessToken(input: AccessTokenInput): IssuedToken {
    const owner = 'TokenService.issueAccessToken';
    const subject = nonEmpty(owner, 'subject', input?.subject);
    const audience = this.audience(owner, input.audience);
    const expiresIn = lifetime(owner, 'expiresInSeconds', input.expiresInSeconds, this.accessTokenTtlSeconds, 24 * 3600);
    const scope = Array.isArray(input.scope) ? input.scope.join(' ') : input.scope;
    if (scope !== undefined && typeof scope !== 'string') throw new TypeError(`${owner}: scope must be a string or an array of strings`);
    if (input.roles !== undefined && (!Array.isArray(input.roles) || input.roles.some((role) => typeof role !== 'string'))) {
      throw new TypeError(`${owner}: roles must be an array of strings`);
    }
    const claims: Record<string, unknown> = {
      ...(scope ? { scope } : {}),
      ...(input.roles ? { roles: [...input.roles] } : {}),
      ...(input.clientId !== undefined ? { client_id: nonEmpty(owner, 'clientId', input.clientId) } : {}),
      ...(input.grantId !== undefined ? { gid: nonEmpty(owner, 'grantId', input.grantId) } : {}),
    };
    return this.sign(subject, audience, expiresIn, claims, 'at+jwt');
  }

  /**
   * Signs an ID token: iss, sub, aud, exp, iat, jti, and name, nonce, auth_time, sid when given.
   *
   * @example
   * const { token } = tokens.issueIdToken({ subject: 'alice', audience: 'shop', name: 'Alice', nonce });
   */
  issueIdToken(input: IdTokenInput): IssuedToken {
    const owner = 'TokenService.issueIdToken';
    const subject = nonEmpty(owner, 'subject', input?.subject);
    const audience = nonEmpty(owner, 'audience', input.audience);
    const expiresIn = lifetime(owner, 'expiresInSeconds', input.expiresInSeconds, this.idTokenTtlSeconds, 3600);
    const extra = input.claims ?? {};
    for (const name of Object.keys(extra)) {
      if (REGISTERED.has(name))
        throw new TypeError(`${owner}: claims must not set the registered claim "${name}"; use the dedicated option`);
    }
    const claims: Record<string, unknown> = {
      ...extra,
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.nonce !== undefined ? { nonce: nonEmpty(owner, 'nonce', input.nonce) } : {}),
      ...(input.authTime !== undefined ? { auth_time: input.authTime } : {}),
      ...(input.sessionId !== undefined ? { sid: nonEmpty(owner, 'sessionId', input.sessionId) } : {}),
    };
    return this.sign(subject, audience, expiresIn, claims, 'JWT');
  }

  /**
   * Verifies an access token this service issued (typ `at+jwt`, our issuer and keys, the given audience) and,
   * with a store, that its grant was not revoked.
   *
   * @example
   * const { claims } = await tokens.verifyAccessToken(token, { audience: 'api' });
   */
  async verifyAccessToken(token: string, options: { audience: string | string[] }): Promise<VerifiedJwt> {
    const cacheKey = JSON.stringify(options.audience);
    let verify = this.verifiers.get(cacheKey);
    if (!verify) {
      verify = createJwtVerifier({
        keys: this.keys,
        algorithms: this.keys.algorithms.filter((alg) => isHmacAlgorithm(alg) === isHmacAlgorithm(this.keys.signingKey.alg)),
        issuer: this.issuer,
        audience: options.audience,
        typ: 'at+jwt',
        clockToleranceSeconds: this.clockToleranceSeconds,
        requiredClaims: ['sub', 'iat', 'jti'],
      });
      // Audiences are a handful of configured API names, so this map stays small.
      this.verifiers.set(cacheKey, verify);
    }
    const verified = await verify(token);
    if (this.refreshTokens && (await this.refreshTokens.isRevoked(verified.claims))) throw new TokenError('revoked');
    return verified;
  }

  /**
   * Revokes a grant's refresh tokens and (via {@link isRevoked}) its access tokens. Needs a store.
   *
   * @example
   * await tokens.revokeGrant(grantId);
   */
  revokeGrant(grantId: string): Promise<void> {
    return this.requireRefreshTokens('revokeGrant').revokeGrant(grantId);
  }

  /**
   * Whether an access token's grant or jti was revoked; the `isRevoked` hook for `requireBearer`. Needs a store.
   *
   * @example
   * requireBearer({ ..., isRevoked: (claims) => tokens.isRevoked(claims) });
   */
  isRevoked(claims: RevocableClaims): Promise<boolean> {
    return this.requireRefreshTokens('isRevoked').isRevoked(claims);
  }

  private requireRefreshTokens(method: string): RefreshTokens {
    if (!this.refreshTokens)
      throw new TypeError(`TokenService.${method}: give the TokenService a store to use refresh tokens and revocation`);
    return this.refreshTokens;
  }

  private audience(owner: string, value: unknown): string | string[] {
    if (typeof value === 'string' && value !== '') return value;
    if (Array.isArray(value) && value.length > 0 && value.every((entry) => typeof entry === 'string' && entry !== '')) return [...value];
    throw new TypeError(`${owner}: audience must be a non-empty string or array of strings, got ${JSON.stringify(value)}`);
  }

  private sign(subject: string, audience: string | string[], expiresIn: number, claims: Record<string, unknown>, typ: string): IssuedToken {
    const { kid, alg, key } = this.keys.signingKey;
    const jti = randomBytes(16).toString('base64url');
    const iat = Math.floor(Date.now() / 1000);
    const payload = { ...claims, iss: this.issuer, sub: subject, aud: audience, iat, exp: iat + expiresIn, jti };
    const token = jwt.sign(payload, key, { algorithm: alg, keyid: kid, header: { alg, typ } });
    return { token, expiresIn, jti };
  }
}
