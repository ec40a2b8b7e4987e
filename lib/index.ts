/**
 * express-sso-kit: single sign-on across the apps of one parent domain, and the middlewares that protect them.
 *
 * This file is the whole public surface, listed name by name: a name not listed here is internal and may change in
 * any release. It is also the only place that augments Express's and express-session's types.
 */
// Inside `namespace Express` below, a bare name means a member of that namespace first: passport declares
// `Express.AuthInfo`, which would silently replace the kit's `AuthInfo` there. Hence the aliases.
import type { ResumableForm, SessionMeta, SessionUser as KitSessionUser, SsoRequestContext as KitSsoRequestContext } from './session';
import type { AuthInfo as KitAuthInfo } from './tokens';
import type { OidcRequestContext as KitOidcRequestContext, OidcSessionState } from './oidc';
import type { QrLoginSessionState } from './qr';
import type {} from 'express-session';

// Sessions: the shared cookie session, login, logout, the user and how they authenticated.
export {
  ssoSession,
  establishLogin,
  logout,
  logoutEverywhere,
  requireSession,
  sessionsResource,
  createRedirectPolicy,
  isSafeRedirect,
  csrfGuard,
  checkRequestOrigin,
  authenticationOf,
  identityId,
  parseIdentityId,
  DEFAULT_DIRECTORY_SOURCE,
  meetsRequirement,
  raiseAuthentication,
  InsufficientAuthenticationError,
  raiseSessionAuthentication,
} from './session';
export type { AuthenticationLevel, AuthenticationRequirement } from './session';
export type {
  SsoSessionOptions,
  SsoCsrfOptions,
  SsoSessionMiddleware,
  SsoSessionCacheOptions,
  SsoSessionLimitOptions,
  SsoSessionCacheStatus,
  EstablishLoginOptions,
  RequireSessionOptions,
  SessionsResourceOptions,
  RedirectPolicyOptions,
  CsrfGuardOptions,
  OriginFacts,
  OriginRefusal,
  SessionUser,
  LoginUser,
  LinkAccount,
  LinkedAccount,
  Identity,
  AuthenticationMethod,
  UserAttributes,
  Authentication,
  AuthenticationFactor,
  LoginAuthentication,
  SessionMeta,
  SessionSummary,
  SessionManager,
  RedirectPolicy,
  SessionCookieSettings,
  SsoRequestContext,
  ResumableForm,
} from './session';

// Stores: the key-value port sessions and throttles live in, on Redis or in memory.
export { RedisStore, MemoryStore, createRedisConnection, StoreUnavailableError, StoreWrongTypeError } from './store';
export type { KeyValueStore, RedisStoreOptions, ReplicaWait, MemoryStoreOptions, RedisClient, RedisConnectionOptions } from './store';

// Where second factors live (TOTP secrets sealed at rest, recovery code hashes, passkeys): on the kit store or PostgreSQL.
export {
  KeyValueCredentialStore,
  PostgresCredentialStore,
  CredentialConflictError,
  createSecretSealer,
  SealedSecretError,
  TotpAuthenticator,
  RecoveryCodes,
  RECOVERY_CODE_COUNT,
} from './credentials';
export type {
  TotpAuthenticatorOptions,
  TotpCheck,
  CredentialStore,
  StoredPasskey,
  StoredTotp,
  PostgresCredentialStoreOptions,
  PgPool,
  PgPoolClient,
  PgQueryResult,
  SecretSealer,
  SecretSealerOptions,
} from './credentials';

// HTTP: errors as problem+json, the error handler, security headers, small handlers.
export {
  HttpError,
  BadRequestError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  MethodNotAllowedError,
  NotAcceptableError,
  ConflictError,
  GoneError,
  UnprocessableEntityError,
  TooManyRequestsError,
  BadGatewayError,
  ServiceUnavailableError,
  OptionsError,
  errorHandler,
  toHttpError,
  notFound,
  methodNotAllowed,
  requireRepresentation,
  securityHeaders,
  KeyValueRateLimitStore,
} from './http';
export type {
  HttpErrorOptions,
  FieldError,
  ErrorHandlerOptions,
  ErrorLogEntry,
  SecurityHeadersOptions,
  KeyValueRateLimitStoreOptions,
} from './http';

// Tokens: Bearer JWTs verified against keys or a JWKS, and the tokens the kit issues.
export {
  requireBearer,
  tokenMeets,
  requiredScopes,
  claimCheck,
  claimEquals,
  claimIncludes,
  verifyJwt,
  createJwtVerifier,
  JwksCache,
  jwksHandler,
  KeySet,
  TokenService,
  RefreshTokens,
  TokenRevocations,
  SUPPORTED_ALGORITHMS,
  TokenError,
  KeySourceUnavailableError,
  KeySourceUnavailable,
  RefreshTokenError,
  DpopVerifier,
  DpopError,
  DPOP_ALGORITHMS,
  DEFAULT_DPOP_ALGORITHMS,
  jwkThumbprint,
  dpopTargetUri,
  tokenRequestProof,
  dpopTokenError,
} from './tokens';
export type {
  RequireBearerOptions,
  AuthInfo,
  JwtPayload,
  JwtHeader,
  JsonPrimitive,
  VerifyJwtOptions,
  VerifiedJwt,
  SupportedAlgorithm,
  JwksCacheOptions,
  JwksHandlerOptions,
  KeySetOptions,
  KeyDefinition,
  KeyMaterial,
  KeyResolver,
  SigningKey,
  JsonWebKeySet,
  TokenServiceOptions,
  AccessTokenInput,
  TokenAuthentication,
  IdTokenInput,
  IssuedToken,
  IssuedAccessToken,
  IssuedTokens,
  RedeemRefreshTokenInput,
  RefreshTokensOptions,
  RefreshTokenRecord,
  IssueRefreshTokenInput,
  IssuedRefreshToken,
  RevocableClaims,
  TokenErrorReason,
  KeySourceFailure,
  RefreshTokenErrorReason,
  DpopVerifierOptions,
  DpopRequestFacts,
  VerifiedDpopProof,
  DpopNonceOptions,
  DpopAlgorithm,
  DpopErrorReason,
  DpopErrorCode,
  DpopMode,
  RequireDpopOptions,
  TokenRequestProofOptions,
} from './tokens';

// Access control: roles and permissions over a session user or a verified token.
export { createPolicy, requirePermission, requireAuth, parsePermission } from './rbac';
export type {
  Policy,
  PolicyOptions,
  RoleDefinition,
  PermissionSubject,
  Permission,
  PermissionObject,
  ParsedPermission,
  RequirePermissionOptions,
  PermissionCheckContext,
  RequireAuthOptions,
} from './rbac';

// Access control in one place: host/path/method rules, first match wins, closed by default.
export { accessPolicy } from './access';
export { forwardAuth } from './forward-auth';
export type { ForwardAuthOptions, ForwardAuthAssertionOptions, IdentityHeaderNames, OriginalRequest } from './forward-auth';
export type { AccessPolicyOptions, AccessPolicyLevel, AccessRule } from './access';

// CORS preflight for cross-origin API calls with the session cookie.
export { corsPreflight, compileOrigins } from './cors';
export type { CorsPreflightOptions, OriginMatcher } from './cors';

// HTTP Basic for service accounts.
export { requireBasic, basicCredentials, constantTimeEqual, parseBasicAuthorization } from './basic';
export type { RequireBasicOptions, BasicCredentialEntry, BasicUser, BasicVerifier, BasicAuthorization } from './basic';

// OpenID Connect relying party: one router, its parts, and the pure cores for custom flows.
export {
  oidc,
  oidcProvider,
  OidcProvider,
  oidcLogin,
  oidcCallback,
  oidcContext,
  oidcLogout,
  upstreamLogoutUrl,
  backchannelLogout,
  defaultClaimsToUser,
  rolesFromClaims,
  validateIdToken,
  validateLogoutToken,
  redeemAuthorizationCode,
  refreshTokenGrant,
  requestUserinfo,
  IdTokenRejectedError,
  LogoutTokenRejectedError,
  OidcGrantError,
} from './oidc';
export type {
  OidcOptions,
  OidcRouter,
  OidcRoutes,
  OidcProviderOptions,
  OidcProviderMetadata,
  OidcEndpoints,
  OidcLoginOptions,
  LoginQueryParameter,
  OidcCallbackOptions,
  OidcContextOptions,
  OidcLogoutOptions,
  BackchannelLogoutOptions,
  ClaimsToUser,
  OidcUserProfile,
  RolesClaim,
  IdTokenExpectations,
  LogoutRequest,
  TokenSet,
  OidcSessionState,
  OidcRequestContext,
} from './oidc';

// QR-code login: the provider, the relying-party client, and the token issuer for the phone app.
export { qrLoginProvider, qrLogin, qrTokenIssuer, hashAppSecret, generateAppSecret, WeChatApiError, WECHAT_ERRORS } from './qr';
export type {
  QrLoginProviderOptions,
  QrRateLimits,
  QrLoginOptions,
  QrLoginHandlers,
  QrUserProfile,
  QrTokenIssuerOptions,
  QrAppRegistration,
  WeChatErrorName,
  QrTokenIssuer,
  QrUserDirectory,
  QrDirectoryUser,
  QrAccessTokenRequest,
  QrRotatedRefreshToken,
  QrUserinfo,
  QrLoginSessionState,
  QrProviderTokens,
} from './qr';

// Accounts: user directories (read-only from a file; writable on memory, the kit store or PostgreSQL), the password
// policy with its common-password list and breach check, and single-use links for password reset and email verification.
export {
  fileUserDirectory,
  memoryUserDirectory,
  redisUserDirectory,
  postgresUserDirectory,
  postgresUserDirectorySql,
  isWritableUserDirectory,
  normalizeEmail,
  passwordPolicy,
  rangeBreachCheck,
  BreachCheckUnavailableError,
  AccountTokens,
  accountAdmin,
  accountAdminRoutes,
} from './accounts';
export type {
  UserDirectory,
  DirectoryUser,
  UserRecord,
  WritableUserDirectory,
  ManagedUserDirectory,
  Account,
  NewAccount,
  AccountSearch,
  AccountPage,
  CredentialVersionCondition,
  SetEmailOptions,
  FileUserDirectoryOptions,
  MemoryUserDirectoryOptions,
  RedisUserDirectoryOptions,
  PostgresUserDirectoryOptions,
  PasswordPolicy,
  PasswordPolicyOptions,
  PasswordContext,
  PasswordRefusal,
  PasswordRefusalCode,
  PasswordVerdict,
  BreachCheck,
  BreachCheckResult,
  RangeBreachCheckOptions,
  AccountTokensOptions,
  IssuedAccountToken,
  AccountTokenCheck,
  AccountTokenRefusal,
  AccountAdmin,
  AccountAdminOptions,
  AccountAdminRoutesOptions,
  AdminActor,
} from './accounts';

// Mail: the account messages through SMTP (nodemailer), from templates the app can replace.
export { mailer, MailDeliveryError, DEFAULT_MAIL_TEMPLATES } from './mail';
export type {
  Mailer,
  MailerOptions,
  SmtpOptions,
  SentMail,
  MailBase,
  MailData,
  MailKind,
  MailLink,
  MailNotice,
  MailTemplates,
  RenderedMail,
} from './mail';

// The login portal: password login pages, password hashes, login throttling.
export {
  loginPortal,
  hashPassword,
  verifyPasswordHash,
  parsePasswordHash,
  LoginThrottle,
  totpFactor,
  recoveryCodeFactor,
  PasswordResetLinks,
  passwordResetLinkSender,
} from './portal';
export type {
  LoginPortalOptions,
  PortalAccountOptions,
  AccountNoticeKind,
  PasswordResetLinksOptions,
  SendResetLink,
  ResetLinkSent,
  PortalLoginLink,
  PortalTwoFactorOptions,
  SecondFactor,
  ScryptParameters,
  ParsedPasswordHash,
  LoginThrottleOptions,
  ThrottleLimit,
  LoginAttemptFacts,
  AllowedLogin,
  RefusedLogin,
  ThrottleDecision,
  ThrottleScope,
  IssuedDeviceTokens,
} from './portal';

// The portal as an OpenID Provider, for apps outside the parent domain.
export { openidProvider, endProviderAccess } from './provider';
export type {
  OidcProviderInstance,
  OpenidProviderRouter,
  OpenidProviderOptions,
  ProviderClient,
  ProviderClientJwks,
  ProviderDpopMode,
  ProviderGrantType,
  ProviderResource,
  ProviderSessions,
} from './provider';

// Passkeys (WebAuthn): the ceremonies, free of Express, over any CredentialStore.
export { PasskeyCeremonies, PasskeyVerificationError, passkeyMethods, passkeyOriginAllowed, passkeyUserHandle } from './credentials';
export type { PasskeyAssertion, PasskeyCeremonyOptions, PasskeyRecords, PasskeyRefusal, PasskeyUser } from './credentials';
export type { PortalPasskeyOptions } from './portal';

// Security events: one vocabulary of every authentication and authorization decision, its sinks and its metrics.
export { securityEvents, pinoSink, redisStreamSink, postgresEventSink, metricsHandler, requestIdOf, SECURITY_EVENT_TYPES } from './events';
export type {
  SecurityEvents,
  SecurityEventsOptions,
  SecurityEvent,
  SecurityEventValue,
  SecurityEventType,
  SecurityEventTypeSpec,
  SecurityEventOutcome,
  SecurityEventReason,
  SecurityEventFields,
  SecurityEventFacts,
  SecurityEventInput,
  SecurityEventFactor,
  SecurityEventSink,
  SecurityEventHook,
  SecurityEventSinkStatus,
  SecurityEventStore,
  SinkReporter,
  DropReason,
  PinoSinkOptions,
  RedisStreamSinkOptions,
  PostgresEventSinkOptions,
  PostgresEventSink,
  SecurityMetrics,
  SessionCacheReading,
  MetricsHandlerOptions,
} from './events';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    /**
     * The logged-in user: the kit's fields merged into Express's `User`, as passport declares it, so an app that
     * uses both (or augments `User` itself) gets one type.
     */
    // eslint-disable-next-line @typescript-eslint/no-empty-object-type
    interface User extends KitSessionUser {}

    interface Request {
      /** The logged-in user, set by `requireSession` (or `requireBasic`). Declared exactly as `@types/passport` does. */
      user?: User | undefined;
      /** The verified Bearer token, set by `requireBearer`; the same declaration as express-oauth2-jwt-bearer's. */
      auth?: KitAuthInfo;
      /** OpenID Connect helpers, set by `oidcContext` for sessions that logged in through one of its providers. */
      oidc?: KitOidcRequestContext;
      /** The shared session context (manager, login URL, redirect policy, cookie settings), set by `ssoSession`. */
      sso?: KitSsoRequestContext;
    }
  }
}

declare module 'express-session' {
  interface SessionData {
    user: KitSessionUser;
    meta: SessionMeta;
    oidc: OidcSessionState;
    /** OIDC login transactions in flight, keyed by state (single use). */
    oidcTransactions: Record<string, string>;
    qrLogin: QrLoginSessionState;
    /** A form posted to the portal that waits for a step-up (`requireSession`), sent on by the step-up page. */
    stepUpResume: ResumableForm;
  }
}
