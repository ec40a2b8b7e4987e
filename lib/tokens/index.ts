export { SUPPORTED_ALGORITHMS, isSupportedAlgorithm, type SupportedAlgorithm } from './algorithms';
export {
  TokenError,
  KeySourceUnavailableError,
  KeySourceUnavailable,
  RefreshTokenError,
  type TokenErrorReason,
  type KeySourceFailure,
  type RefreshTokenErrorReason,
} from './errors';
export {
  KeySet,
  type KeyDefinition,
  type KeyMaterial,
  type KeySetOptions,
  type KeyResolver,
  type SigningKey,
  type JsonWebKeySet,
} from './key-set';
export { verifyJwt, createJwtVerifier, type VerifyJwtOptions, type VerifiedJwt } from './verify-jwt';
export { JwksCache, type JwksCacheOptions } from './jwks-cache';
export { jwksHandler, type JwksHandlerOptions } from './jwks-handler';
export {
  TokenService,
  type TokenServiceOptions,
  type AccessTokenInput,
  type IdTokenInput,
  type IssuedToken,
  type IssuedAccessToken,
  type IssuedTokens,
  type RedeemRefreshTokenInput,
} from './token-service';
export {
  RefreshTokens,
  type RefreshTokensOptions,
  type RefreshTokenRecord,
  type IssueRefreshTokenInput,
  type IssuedRefreshToken,
  type RevocableClaims,
} from './refresh-tokens';
export { TokenRevocations } from './token-revocations';
export { requireBearer, type RequireBearerOptions } from './require-bearer';
export { requiredScopes, claimCheck, claimEquals, claimIncludes, type JsonPrimitive } from './claim-checks';
export type { AuthInfo, JwtPayload, JwtHeader } from './types';
export { authenticationOfToken, tokenMeets } from './token-authentication';
export type { TokenAuthentication } from './token-claims';
export {
  DpopVerifier,
  DpopError,
  DPOP_ALGORITHMS,
  DEFAULT_DPOP_ALGORITHMS,
  jwkThumbprint,
  dpopTargetUri,
  tokenRequestProof,
  dpopTokenError,
  type DpopVerifierOptions,
  type DpopRequestFacts,
  type VerifiedDpopProof,
  type DpopNonceOptions,
  type DpopAlgorithm,
  type DpopErrorReason,
  type DpopErrorCode,
  type DpopMode,
  type RequireDpopOptions,
  type TokenRequestProofOptions,
} from './dpop';
