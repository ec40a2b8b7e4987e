import jwt from 'jsonwebtoken';
import type { Request } from 'express';
import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import type { KeyValueStore } from '../store/port';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import { isHmacAlgorithm, type SupportedAlgorithm } from './algorithms';
import { TokenError } from './errors';
import { KeySet } from './key-set';
import { RefreshTokens, type IssuedRefreshToken } from './refresh-tokens';
import { accessTokenContent, idTokenContent, type AccessTokenInput, type IdTokenInput, type TokenContent } from './token-claims';
import type { RevocableClaims, TokenRevocations } from './token-revocations';
import { tokenHash, VerifiedTokenCache } from './verified-token-cache';
import { createJwtVerifier, type VerifiedJwt } from './verify-jwt';
import { randomToken } from '../util/random-token';
import { DpopError } from './dpop/dpop-error';

export type { AccessTokenInput, IdTokenInput } from './token-claims';

/** Options of {@link TokenService}. */
export interface TokenServiceOptions {
  /** Signs with `keys.signingKey`. */
  keys: KeySet;
  /** The `iss` of every token, e.g. `https://auth.example.test`. */
  issuer: string;
  /** Default access-token lifetime. Default 3600 (minutes to hours; QR login passes 7200). At most 86400. */
  accessTokenLifetimeSeconds?: number;
  /** ID-token lifetime. Default 300: the relying party checks it once, right after login (5 min–1 h). */
  idTokenLifetimeSeconds?: number;
  /** Refresh-token lifetime, when `store` is given. Default 14 days (days to weeks). */
  refreshTokenLifetimeSeconds?: number;
  /** Longest life of a refresh-token family (one login) across rotations. Default 90 days. */
  refreshTokenAbsoluteLifetimeSeconds?: number;
  /** Enables refresh tokens (`issueTokens`, `redeemRefreshToken`, `refreshTokens`), `revokeGrant` and revocation checks. */
  store?: KeyValueStore;
  /** Leeway used by {@link TokenService.verifyAccessToken}. Default 5 s. */
  clockToleranceSeconds?: number;
  /**
   * Where a refresh token's reuse is recorded, and the default events of every `requireBearer({ tokenService })`
   * that verifies these tokens. Default none.
   */
  events?: SecurityEvents;
  /**
   * The ids of clients that cannot keep a secret (single-page and mobile apps). Their refresh tokens must be bound
   * to a DPoP key (RFC 9449 §5, ASVS 10.4.5): `issueTokens` and `redeemRefreshToken` refuse them without `dpopJkt`
   * (a `DpopError` `proof_missing`; answer it with `dpopTokenError`). Default none.
   */
  publicClients?: readonly string[];
}

/** What {@link TokenService.redeemRefreshToken} takes besides the refresh token. */
export interface RedeemRefreshTokenInput {
  /** The client presenting the refresh token; another client's token is refused and revokes its grant. */
  clientId: string;
  /** The audience of the new access token. */
  audience: string | string[];
  roles?: string[];
  expiresInSeconds?: number;
  /** The request presenting the token, so a detected reuse is recorded with its network and request id. */
  request?: Request;
  /**
   * The key of the request's verified DPoP proof (`proof.jkt`): the new access token is bound to it, and a family
   * bound to a key is refreshed only with a proof of that key.
   */
  dpopJkt?: string;
}

/** A signed token and its bookkeeping. */
export interface IssuedToken {
  token: string;
  /** Seconds until it expires. */
  expiresIn: number;
  jti: string;
}

/** A signed access token: its `token_type` is `DPoP` when it is bound to a key (RFC 9449 §5), else `Bearer`. */
export interface IssuedAccessToken extends IssuedToken {
  /** The `token_type` of the token response. */
  tokenType: 'DPoP' | 'Bearer';
}

/** An access token and the refresh token of the same grant. */
export interface IssuedTokens {
  accessToken: IssuedAccessToken;
  refreshToken: IssuedRefreshToken;
}

const DAY = 24 * 3600;
/** The longest access token the service signs; revocation marks of its grants live at least this long. */
const MAX_ACCESS_TOKEN_LIFETIME_SECONDS = DAY;
const MAX_ID_TOKEN_LIFETIME_SECONDS = 3600;
// Access tokens this process signed, remembered so that verifying one soon after (an OAuth userinfo call right after
// the code exchange) needs no second signature check: at most this many, each at most five minutes and never past exp.
const ISSUED_ACCESS_TOKENS_REMEMBERED = 10_000;
/** The claims every access token of the service carries (RFC 9068 §2.2, besides iss, exp and aud). */
export const ACCESS_TOKEN_CLAIMS: readonly string[] = Object.freeze(['sub', 'client_id', 'iat', 'jti']);

const SCHEMA: OptionSchema = {
  keys: { type: 'object', required: true, expected: 'a KeySet, e.g. new KeySet([{ kid, alg: "ES256", privateKey }])' },
  issuer: { type: 'string', required: true, expected: 'the iss of every token, e.g. "https://auth.example.test"' },
  accessTokenLifetimeSeconds: { type: 'integer', expected: 'a whole number of seconds from 1 to 86400', check: within(1, DAY) },
  // OpenID Connect ID tokens are read once, right after login; an hour is the longest that makes sense.
  idTokenLifetimeSeconds: { type: 'integer', expected: 'a whole number of seconds from 1 to 3600', check: within(1, 3600) },
  refreshTokenLifetimeSeconds: { type: 'integer', expected: 'a whole number of seconds from 1 to 31536000', check: within(1, 365 * DAY) },
  refreshTokenAbsoluteLifetimeSeconds: {
    type: 'integer',
    expected: 'a whole number of seconds from 1 to 31536000',
    check: within(1, 365 * DAY),
  },
  store: { type: 'object', expected: 'a KeyValueStore, e.g. new RedisStore(url)' },
  clockToleranceSeconds: { type: 'number', expected: 'a number of seconds from 0 to 300', check: within(0, 300) },
  events: EVENTS_OPTION,
  publicClients: { type: 'string[]', expected: "an array of client ids, e.g. ['shop-spa']" },
};

/**
 * Issues the kit's own JWTs (RFC 9068 access tokens typed `at+jwt`, ID tokens) signed by the active key of a
 * {@link KeySet}, and, with a store, opaque rotating refresh tokens whose grant the access tokens carry (`gid`), so
 * revoking the grant, or a reused refresh token, ends both.
 *
 * @example
 * const tokens = new TokenService({ keys: KeySet.generate('ES256'), issuer: 'https://auth.example.test', store });
 * const { accessToken, refreshToken } = await tokens.issueTokens({ subject: 'alice', audience: 'shop-api', clientId: 'shop' });
 */
export class TokenService {
  readonly keys: KeySet;
  readonly issuer: string;
  readonly accessTokenLifetimeSeconds: number;
  readonly idTokenLifetimeSeconds: number;
  /** Present when a store was given. */
  readonly refreshTokens: RefreshTokens | undefined;
  /** The events given to the service (its refresh tokens' and its `requireBearer`s'). */
  readonly events: SecurityEvents | undefined;
  /** The store given (refresh tokens, revocations); `requireBearer({ tokenService, dpop })` keeps proofs' jtis in it. */
  readonly store: KeyValueStore | undefined;
  /** The clients whose refresh tokens must be bound to a DPoP key. */
  readonly publicClients: ReadonlySet<string>;
  /** The algorithms the service's tokens may carry: those of its keys in the signing key's family (HS* or not). */
  readonly algorithms: readonly SupportedAlgorithm[];
  private readonly clockToleranceSeconds: number;
  private readonly verifiers = new Map<string, (token: string) => Promise<VerifiedJwt>>();
  private readonly issuedAccessTokens = new VerifiedTokenCache(ISSUED_ACCESS_TOKENS_REMEMBERED, undefined);

  constructor(options: TokenServiceOptions) {
    checkOptions('TokenService', options as unknown, SCHEMA);
    if (!(options.keys instanceof KeySet))
      throw new OptionsError('TokenService: keys must be a KeySet, e.g. new KeySet([{ kid, alg: "ES256", privateKey }])');
    this.keys = options.keys;
    // Fails now rather than at the first login when the set has only public keys.
    const signingAlg = this.keys.signingKey.alg;
    this.algorithms = Object.freeze(this.keys.algorithms.filter((alg) => isHmacAlgorithm(alg) === isHmacAlgorithm(signingAlg)));
    this.issuer = options.issuer;
    if (this.issuer === '') throw new OptionsError('TokenService: issuer must be a non-empty string');
    this.accessTokenLifetimeSeconds = options.accessTokenLifetimeSeconds ?? 3600;
    this.idTokenLifetimeSeconds = options.idTokenLifetimeSeconds ?? 300;
    this.clockToleranceSeconds = options.clockToleranceSeconds ?? 5;
    this.events = eventsOption('TokenService', options.events);
    this.store = options.store;
    this.publicClients = new Set(options.publicClients ?? []);
    this.refreshTokens =
      options.store === undefined
        ? undefined
        : new RefreshTokens({
            store: options.store,
            ...(this.events === undefined ? {} : { events: this.events }),
            // Not the default lifetime: a caller may ask for longer tokens, and a revocation must outlive them all.
            accessTokenLifetimeSeconds: MAX_ACCESS_TOKEN_LIFETIME_SECONDS,
            ...(options.refreshTokenLifetimeSeconds !== undefined ? { lifetimeSeconds: options.refreshTokenLifetimeSeconds } : {}),
            ...(options.refreshTokenAbsoluteLifetimeSeconds !== undefined
              ? { absoluteLifetimeSeconds: options.refreshTokenAbsoluteLifetimeSeconds }
              : {}),
          });
  }

  /** The revocation reads of the service's grants (present with a store); `requireBearer` uses them by itself. */
  get revocations(): TokenRevocations | undefined {
    return this.refreshTokens?.revocations;
  }

  /**
   * Signs an RFC 9068 access token: iss, sub, aud, exp, iat, jti, client_id, and scope, roles, gid when given, and
   * `cnf.jkt` with `dpopJkt` (a DPoP-bound token, `tokenType` `DPoP`). Prefer {@link TokenService.issueTokens}
   * when a refresh token goes with it, so the two share a grant.
   *
   * @example
   * const { token, expiresIn } = tokens.issueAccessToken({ subject: 'alice', audience: 'api', clientId: 'shop', expiresInSeconds: 7200 });
   */
  issueAccessToken(input: AccessTokenInput): IssuedAccessToken {
    return this.signAccessToken(accessTokenContent(input, this.accessTokenLifetimeSeconds, MAX_ACCESS_TOKEN_LIFETIME_SECONDS));
  }

  /**
   * Signs an ID token: iss, sub, aud, exp, iat, jti, and name, nonce, auth_time, sid when given.
   *
   * @example
   * const { token } = tokens.issueIdToken({ subject: 'alice', audience: 'shop', name: 'Alice', nonce });
   */
  issueIdToken(input: IdTokenInput): IssuedToken {
    return this.sign(idTokenContent(input, this.idTokenLifetimeSeconds, MAX_ID_TOKEN_LIFETIME_SECONDS), 'JWT');
  }

  /**
   * Starts a refresh-token family (a login) and signs an access token of its grant. With `dpopJkt` both are bound
   * to that DPoP key; a public client (`publicClients`) must give one. Needs a store.
   *
   * @example
   * const { accessToken, refreshToken } = await tokens.issueTokens({ subject: 'alice', audience: 'api', clientId: 'shop', scope: 'orders:read' });
   */
  async issueTokens(input: AccessTokenInput): Promise<IssuedTokens> {
    const refreshTokens = this.requireRefreshTokens('issueTokens');
    const content = accessTokenContent(input, this.accessTokenLifetimeSeconds, MAX_ACCESS_TOKEN_LIFETIME_SECONDS);
    this.refuseUnboundPublicClient(input.clientId, input.dpopJkt);
    const scope = content.claims.scope as string | undefined;
    const refreshToken = await refreshTokens.issue({
      clientId: input.clientId,
      subject: content.subject,
      ...(scope !== undefined ? { scope } : {}),
      ...(input.grantId !== undefined ? { grantId: input.grantId } : {}),
      ...(input.authentication !== undefined ? { authentication: input.authentication } : {}),
      ...(input.dpopJkt !== undefined ? { jkt: input.dpopJkt } : {}),
    });
    const accessToken = this.signAccessToken({ ...content, claims: { ...content.claims, gid: refreshToken.record.grantId } });
    return { accessToken, refreshToken };
  }

  /**
   * Rotates a refresh token and signs a new access token of the same grant, subject and scope. Reuse of a rotated
   * token, another client's token, or a token bound to a DPoP key without `dpopJkt` of that key, revokes the grant:
   * its access tokens are refused from then on. With `dpopJkt` the new access token is bound to that key; a public
   * client (`publicClients`) must give one. Needs a store.
   *
   * @example
   * const { accessToken, refreshToken } = await tokens.redeemRefreshToken(req.body.refresh_token, { clientId: 'shop', audience: 'api' });
   */
  async redeemRefreshToken(token: string, input: RedeemRefreshTokenInput): Promise<IssuedTokens> {
    const refreshTokens = this.requireRefreshTokens('redeemRefreshToken');
    if (typeof input !== 'object' || input === null) throw new OptionsError('TokenService.redeemRefreshToken: pass { clientId, audience }');
    this.refuseUnboundPublicClient(input.clientId, input.dpopJkt);
    const refreshToken = await refreshTokens.rotate(token, input.clientId, { jkt: input.dpopJkt }, input.request);
    const { record } = refreshToken;
    const accessToken = this.issueAccessToken({
      subject: record.subject,
      audience: input.audience,
      clientId: record.clientId,
      grantId: record.grantId,
      ...(record.scope !== undefined ? { scope: record.scope } : {}),
      ...(record.authentication !== undefined ? { authentication: record.authentication } : {}),
      ...(input.roles !== undefined ? { roles: input.roles } : {}),
      ...(input.expiresInSeconds !== undefined ? { expiresInSeconds: input.expiresInSeconds } : {}),
      ...(input.dpopJkt !== undefined ? { dpopJkt: input.dpopJkt } : {}),
    });
    return { accessToken, refreshToken };
  }

  /**
   * Verifies an access token this service issued (typ `at+jwt`, the claims of RFC 9068 §2.2, our issuer and keys,
   * the given audience) and, with a store, that its grant and jti were not revoked.
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
        algorithms: this.algorithms,
        issuer: this.issuer,
        audience: options.audience,
        typ: 'at+jwt',
        clockToleranceSeconds: this.clockToleranceSeconds,
        requiredClaims: ACCESS_TOKEN_CLAIMS,
      });
      // Audiences are a handful of configured API names, so this map stays small.
      this.verifiers.set(cacheKey, verify);
    }
    // A token this service signed in this process is known by its SHA-256 (no other text has it), so its signature
    // and the claims it was signed with need no second check; the audience asked for now and the expiry still do,
    // and so does revocation, below. Its claims are then frozen, as requireBearer's cached ones are.
    const remembered = this.issuedAccessTokens.get(tokenHash(token), Date.now());
    const verified =
      remembered !== undefined && namesAudience(remembered.claims.aud, options.audience)
        ? { header: remembered.header, claims: remembered.claims }
        : await verify(token);
    if (this.refreshTokens && (await this.refreshTokens.isRevoked(verified.claims))) throw new TokenError('revoked');
    return verified;
  }

  /**
   * Revokes a grant's refresh tokens and its access tokens (refused by `requireBearer` from then on). Needs a store.
   *
   * @example
   * await tokens.revokeGrant(req.auth.payload.gid);
   */
  revokeGrant(grantId: string): Promise<void> {
    return this.requireRefreshTokens('revokeGrant').revokeGrant(grantId);
  }

  /**
   * Whether an access token's grant or jti was revoked. `requireBearer({ tokenService })` checks it by itself; use
   * this for custom wiring. Needs a store.
   *
   * @example
   * if (await tokens.isRevoked(claims)) throw new TokenError('revoked');
   */
  isRevoked(claims: RevocableClaims): Promise<boolean> {
    return this.requireRefreshTokens('isRevoked').isRevoked(claims);
  }

  /** RFC 9449 §5 and ASVS 10.4.5: a public client's refresh tokens are bound to a key, since it has no secret. */
  private refuseUnboundPublicClient(clientId: string, dpopJkt: string | undefined): void {
    if (dpopJkt === undefined && this.publicClients.has(clientId)) throw new DpopError('proof_missing');
  }

  private signAccessToken(content: TokenContent): IssuedAccessToken {
    return { ...this.sign(content, 'at+jwt'), tokenType: content.claims.cnf === undefined ? 'Bearer' : 'DPoP' };
  }

  private requireRefreshTokens(method: string): RefreshTokens {
    if (!this.refreshTokens)
      throw new OptionsError(`TokenService.${method}: give the TokenService a store to use refresh tokens and revocation`);
    return this.refreshTokens;
  }

  private sign(content: TokenContent, typ: string): IssuedToken {
    const { kid, alg, key } = this.keys.signingKey;
    const jti = randomToken(16);
    const iat = Math.floor(Date.now() / 1000);
    const payload = {
      ...content.claims,
      iss: this.issuer,
      sub: content.subject,
      aud: content.audience,
      iat,
      exp: iat + content.expiresIn,
      jti,
    };
    const token = jwt.sign(payload, key, { algorithm: alg, keyid: kid, header: { alg, typ } });
    if (typ === 'at+jwt') {
      // The payload is the service's own copy (accessTokenContent copies the caller's arrays), so freezing it as the
      // remembered claims freezes nothing of the caller's.
      this.issuedAccessTokens.remember(tokenHash(token), { header: { alg, typ, kid }, claims: payload }, Date.now(), false);
    }
    return { token, expiresIn: content.expiresIn, jti };
  }
}

/** True when a token's `aud` (a string or an array) names one of the accepted audiences, as the verifier checks it. */
function namesAudience(aud: unknown, accepted: string | readonly string[]): boolean {
  const names = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  return names.some((name) => (typeof accepted === 'string' ? name === accepted : accepted.includes(name as string)));
}
