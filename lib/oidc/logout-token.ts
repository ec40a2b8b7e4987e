import type { KeyValueStore } from '../store/port';
import { KeySourceUnavailableError, TokenError } from '../tokens/errors';
import { createJwtVerifier, normalizeTyp, type VerifiedJwt } from '../tokens/verify-jwt';
import type { SupportedAlgorithm } from '../tokens/algorithms';
import { keySourceFailure, providerKeys } from './id-token';
import type { OidcProvider } from './provider';
import { sha256 } from '../util/digest';

/** The event member a logout token must carry (OpenID Connect Back-Channel Logout 1.0 §2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** A logout token was refused; the endpoint answers 400 `invalid_logout_token` (`error: "invalid_request"`). */
export class LogoutTokenRejectedError extends Error {
  override readonly name = 'LogoutTokenRejectedError';
  readonly code = 'invalid_logout_token';
  constructor(readonly reason: string) {
    super(`the logout token was refused: ${reason}`);
  }
}

/** What a valid logout token asks for: end the sessions of `sid`, or without one, of `sub`. */
export interface LogoutRequest {
  issuer: string;
  sub?: string;
  sid?: string;
  jti: string;
}

const verifiers = new WeakMap<object, { jwksUri: string; verify: (token: string) => Promise<VerifiedJwt> }>();

async function logoutVerifier(provider: OidcProvider): Promise<(token: string) => Promise<VerifiedJwt>> {
  const keys = await providerKeys(provider);
  const known = verifiers.get(keys);
  if (known) return known.verify;
  const { issuer } = await provider.metadata();
  const verify = createJwtVerifier({
    keys: keys.jwks,
    algorithms: [provider.idTokenSigningAlg as SupportedAlgorithm],
    issuer,
    audience: provider.clientId,
    clockToleranceSeconds: provider.clockToleranceSeconds,
    // A logout token is sent the moment a session ends: an old one is a replay or a stalled queue, not news.
    maxTokenAgeSeconds: provider.logoutTokenMaxAgeSeconds,
    // Explicit typing (Back-Channel Logout 1.0 §2.4) keeps an ID or access token from passing as a logout token.
    ...(provider.allowUntypedLogoutTokens ? {} : { typ: 'logout+jwt' }),
    requiredClaims: ['iat', 'jti', 'events'],
  });
  verifiers.set(keys, { jwksUri: keys.jwksUri, verify });
  return verify;
}

/**
 * Validates a logout token (Back-Channel Logout 1.0 §2.6): `typ` `logout+jwt` (unless `allowUntypedLogoutTokens`;
 * then untyped or `JWT` too), signature with the provider's JWKS and the configured alg, `iat` at most
 * `logoutTokenMaxAgeSeconds` old, `iss` exact, `aud` containing client_id, `iat` and `exp` within tolerance, `jti` present, `events` holding
 * the back-channel-logout member as an object, no `nonce` (so an ID token cannot be replayed as a logout token),
 * `sub` or `sid` present. Finally the `jti` is recorded in the store until the token expires; a second use is
 * refused. Throws {@link LogoutTokenRejectedError}, a 502/503 error when the keys cannot be fetched, or the store's
 * outage error.
 *
 * @example
 * const request = await validateLogoutToken(corp, store, req.body.logout_token);
 */
export async function validateLogoutToken(
  provider: OidcProvider,
  store: KeyValueStore,
  token: string,
  now = Date.now(),
): Promise<LogoutRequest> {
  const verify = await logoutVerifier(provider);
  let claims: Record<string, unknown>;
  let header: Record<string, unknown>;
  try {
    const verified = await verify(token);
    claims = verified.claims as Record<string, unknown>;
    header = verified.header as Record<string, unknown>;
  } catch (error) {
    if (error instanceof KeySourceUnavailableError) throw keySourceFailure(provider, error);
    if (error instanceof TokenError) throw new LogoutTokenRejectedError(error.message);
    throw error;
  }
  const events = claims.events;
  const event =
    events !== null && typeof events === 'object' && !Array.isArray(events)
      ? (events as Record<string, unknown>)[BACKCHANNEL_LOGOUT_EVENT]
      : undefined;
  const typ = (header.typ as unknown) ?? undefined;
  // Untyped tokens may be allowed; a token typed as something else (at+jwt, an ID token's JWT) never is.
  if (typ !== undefined && (typeof typ !== 'string' || !['logout+jwt', 'jwt'].includes(normalizeTyp(typ))))
    throw new LogoutTokenRejectedError('typ is not logout+jwt');
  if (event === null || typeof event !== 'object' || Array.isArray(event))
    throw new LogoutTokenRejectedError('events lacks the back-channel logout event');
  if (claims.nonce !== undefined) throw new LogoutTokenRejectedError('a logout token must not carry a nonce');
  const sub = typeof claims.sub === 'string' && claims.sub.length > 0 ? claims.sub : undefined;
  const sid = typeof claims.sid === 'string' && claims.sid.length > 0 ? claims.sid : undefined;
  if (claims.sid !== undefined && !sid) throw new LogoutTokenRejectedError('sid is malformed');
  if (!sub && !sid) throw new LogoutTokenRejectedError('neither sub nor sid is present');
  const jti = claims.jti;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) throw new LogoutTokenRejectedError('jti is malformed');

  // The verifier already demands this issuer; said again here because the sessions it ends are this issuer's.
  if (claims.iss !== provider.issuer) throw new LogoutTokenRejectedError('iss is not this provider');
  const issuer = provider.issuer;
  // Remember the jti until the token could no longer pass the exp check anyway.
  const exp = typeof claims.exp === 'number' ? claims.exp : now / 1000;
  const ttlSeconds = Math.max(60, Math.ceil(exp - now / 1000) + provider.clockToleranceSeconds);
  const mark = sha256(`${issuer}|${jti}`, 'base64url');
  if (!(await store.setIfAbsent(`oidc-logout-jti:{${mark}}`, '1', ttlSeconds))) {
    throw new LogoutTokenRejectedError('this logout token was already used');
  }
  return { issuer, jti, ...(sub ? { sub } : {}), ...(sid ? { sid } : {}) };
}
