export {
  ssoSession,
  type SsoCsrfOptions,
  type SsoSessionOptions,
  type SsoSessionMiddleware,
  type SsoSessionCacheOptions,
  type SsoSessionLimitOptions,
  type SsoSessionCacheStatus,
} from './sso-session';
export { establishLogin, type EstablishLoginOptions } from './establish-login';
export { logout, logoutEverywhere } from './logout';
export { RESUMABLE_FORM_LIFETIME_SECONDS, takeResumableForm, type ResumableForm } from './resumable-form';
export { requireSession, type RequireSessionOptions } from './require-session';
export { sessionsResource, type SessionsResourceOptions } from './sessions-resource';
export { createRedirectPolicy, isSafeRedirect, MAX_REDIRECT_LENGTH, type RedirectPolicyOptions } from './redirect-policy';
export { csrfGuard, checkRequestOrigin, type CsrfGuardOptions, type OriginFacts, type OriginRefusal } from './csrf-guard';
export { validateCookieDomain } from './cookie-domain';
export { judgeSession, storeTtlMillis, type SessionLimits, type SessionVerdict } from './session-lifetime';
export type { SessionSummary, SessionManager, RedirectPolicy, SessionCookieSettings, SsoRequestContext } from './types';
export { authenticationOf, type Authentication, type AuthenticationFactor, type LoginAuthentication } from './authentication';
export { identityId, parseIdentityId, DEFAULT_DIRECTORY_SOURCE, type Identity } from './identity';
export type { SessionUser, LoginUser, LinkAccount, LinkedAccount, AuthenticationMethod, UserAttributes, SessionMeta } from './types';
export {
  meetsRequirement,
  raiseAuthentication,
  levelRank,
  stepUpChallenge,
  InsufficientAuthenticationError,
  AUTHENTICATION_LEVELS,
  type AuthenticationLevel,
  type AuthenticationRequirement,
} from './step-up';
export { raiseSessionAuthentication } from './raise-authentication';
