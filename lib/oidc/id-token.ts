import { JwksCache } from '../tokens/jwks-cache';
import { KeySourceUnavailableError, TokenError } from '../tokens/errors';
import { createJwtVerifier, type VerifiedJwt } from '../tokens/verify-jwt';
import type { SupportedAlgorithm } from '../tokens/algorithms';
import { providerMisbehaved, providerUnavailable } from './errors';
import type { OidcProvider } from './provider';
import { constantTimeEqual } from '../util/digest';

interface ProviderKeys {
  jwksUri: string;
  jwks: JwksCache;
  verifyIdToken: (token: string) => Promise<VerifiedJwt>;
}

// One JWKS cache per provider and key-set URL, shared by ID-token and logout-token checks.
const keysByProvider = new WeakMap<OidcProvider, ProviderKeys>();

/**
 * The provider's verification keys (the tokens module's JWKS cache: refetch on unknown kid, stale-while-error) and
 * the ID-token verifier built over them, once per provider and JWKS URL.
 *
 * @example
 * const { jwks } = await providerKeys(corp);
 */
export async function providerKeys(provider: OidcProvider): Promise<ProviderKeys> {
  const { jwksUri, issuer } = await provider.metadata();
  const known = keysByProvider.get(provider);
  if (known && known.jwksUri === jwksUri) return known;
  // The provider accepted an http: jwks_uri only under its own allowInsecureLocalDevelopment; the cache follows it.
  const jwks = new JwksCache({
    uri: jwksUri,
    timeoutSeconds: provider.timeoutSeconds,
    ...(provider.insecureHttp ? { allowInsecureLocalDevelopment: true } : {}),
  });
  const verifyIdToken = createJwtVerifier({
    keys: jwks,
    // A single algorithm: a token cannot choose `none`, HS256 with the client secret, or any other alg.
    algorithms: [provider.idTokenSigningAlg as SupportedAlgorithm],
    issuer,
    audience: provider.clientId,
    clockToleranceSeconds: provider.clockToleranceSeconds,
    requiredClaims: ['sub', 'iat'],
    // ID tokens with many group claims (some providers) exceed the verifier's 8 KB default.
    maxTokenLength: 16 * 1024,
  });
  const entry = { jwksUri, jwks, verifyIdToken };
  keysByProvider.set(provider, entry);
  return entry;
}

/** Why an ID token was refused; the callback answers 400 `invalid_id_token`. */
export class IdTokenRejectedError extends Error {
  override readonly name = 'IdTokenRejectedError';
  readonly code = 'invalid_id_token';
  constructor(readonly reason: string) {
    super(`the ID token was refused: ${reason}`);
  }
}

/**
 * Maps a key-source failure to 503 (unreachable, timeout) or 502 (a JWKS that makes no sense).
 *
 * @example
 * if (error instanceof KeySourceUnavailableError) throw keySourceFailure(corp, error);
 */
export function keySourceFailure(provider: OidcProvider, error: KeySourceUnavailableError): Error {
  return error.failure === 'bad_response'
    ? providerMisbehaved(provider.name, 'JWKS endpoint', error)
    : providerUnavailable(provider.name, `JWKS endpoint ${error.failure}`, error);
}

/** What the ID token is checked against besides the provider's configuration. */
export interface IdTokenExpectations {
  nonce: string;
  /** The `max_age` sent with the authorization request, in seconds, if any. */
  maxAgeSeconds?: number;
  /** The `acr_values` sent, if any: the token's `acr` must then be one of them. */
  acrValues?: readonly string[];
  /** Epoch milliseconds; default now. */
  now?: number;
}

/**
 * Validates an ID token per OIDC Core §3.1.3.7: signature always verified with the provider's JWKS (unknown kid →
 * one refetch; no kid → only with a single key of the alg), alg equal to the configured one, `iss` exact, `aud`
 * containing client_id, `azp` present and equal when several audiences (and equal whenever present), `exp` and
 * `iat` (required) within tolerance, `sub` required, `nonce` equal, and `auth_time` present and fresh enough when
 * `max_age` was sent, `acr` one of `acr_values` when they were sent. Returns the claims. Throws {@link IdTokenRejectedError}, or a 502/503 error when the keys
 * cannot be fetched.
 *
 * @example
 * const claims = await validateIdToken(corp, tokens.idToken, { nonce: transaction.nonce });
 */
export async function validateIdToken(
  provider: OidcProvider,
  idToken: string,
  expected: IdTokenExpectations,
): Promise<Record<string, unknown>> {
  const { verifyIdToken } = await providerKeys(provider);
  let claims: Record<string, unknown>;
  try {
    claims = (await verifyIdToken(idToken)).claims as Record<string, unknown>;
  } catch (error) {
    if (error instanceof KeySourceUnavailableError) throw keySourceFailure(provider, error);
    if (error instanceof TokenError) throw new IdTokenRejectedError(error.message);
    throw error;
  }
  if (typeof claims.sub !== 'string' || claims.sub.length === 0) throw new IdTokenRejectedError('sub is missing');
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (audiences.length > 1 && claims.azp === undefined) throw new IdTokenRejectedError('azp is required with several audiences');
  if (claims.azp !== undefined && claims.azp !== provider.clientId) throw new IdTokenRejectedError('azp is not this client');
  if (typeof claims.nonce !== 'string' || !constantTimeEqual(claims.nonce, expected.nonce))
    throw new IdTokenRejectedError('nonce does not match');
  if (expected.maxAgeSeconds !== undefined) {
    const authTime = claims.auth_time;
    if (typeof authTime !== 'number' || !Number.isFinite(authTime))
      throw new IdTokenRejectedError('auth_time is required when max_age is sent');
    const nowSeconds = (expected.now ?? Date.now()) / 1000;
    if (nowSeconds - authTime > expected.maxAgeSeconds + provider.clockToleranceSeconds) {
      throw new IdTokenRejectedError('the authentication is older than max_age');
    }
  }
  // acr_values is a request the provider may ignore (OIDC Core §3.1.2.1); the client checks what it got.
  if (expected.acrValues !== undefined && expected.acrValues.length > 0) {
    if (typeof claims.acr !== 'string' || !expected.acrValues.includes(claims.acr)) {
      throw new IdTokenRejectedError('acr is not one of the acr_values requested');
    }
  }
  return claims;
}

/**
 * Validates an ID token returned by a refresh (OIDC Core §12.2): the same checks as at login except the nonce
 * (none was sent), and its `iss` and `sub` must equal those of the ID token of the login.
 *
 * @example
 * await validateRefreshedIdToken(corp, tokens.idToken, previousIdToken);
 */
export async function validateRefreshedIdToken(
  provider: OidcProvider,
  idToken: string,
  previousIdToken: string | undefined,
): Promise<void> {
  const { verifyIdToken } = await providerKeys(provider);
  let claims: Record<string, unknown>;
  try {
    claims = (await verifyIdToken(idToken)).claims as Record<string, unknown>;
  } catch (error) {
    if (error instanceof KeySourceUnavailableError) throw keySourceFailure(provider, error);
    if (error instanceof TokenError) throw providerMisbehaved(provider.name, `refreshed ID token refused: ${error.message}`, error);
    throw error;
  }
  const previous = previousIdToken ? decodePayload(previousIdToken) : undefined;
  if (!previous || claims.sub !== previous.sub || claims.iss !== previous.iss) {
    throw providerMisbehaved(provider.name, 'refreshed ID token is about another subject');
  }
  if (claims.azp !== undefined && claims.azp !== provider.clientId)
    throw providerMisbehaved(provider.name, 'refreshed ID token azp is not this client');
}

/** The payload of a JWT this process already validated (stored in the session), without verifying it again. */
function decodePayload(token: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
