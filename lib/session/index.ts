export { ssoSession, type SsoSessionOptions, type SsoSessionMiddleware } from './sso-session';
export { establishLogin, type EstablishLoginOptions } from './establish-login';
export { logout, logoutEverywhere } from './logout';
export { requireSession, type RequireSessionOptions } from './require-session';
export { sessionsResource, type SessionsResourceOptions } from './sessions-resource';
export { createRedirectPolicy, isSafeRedirect, MAX_REDIRECT_LENGTH, type RedirectPolicyOptions } from './redirect-policy';
export { csrfGuard, checkRequestOrigin, type CsrfGuardOptions, type OriginFacts, type OriginRefusal } from './csrf-guard';
export { validateCookieDomain } from './cookie-domain';
export { judgeSession, storeTtlMillis, type SessionLimits, type SessionVerdict } from './session-lifetime';
export type {
  SessionSummary,
  SessionManager,
  RedirectPolicy,
  SessionCookieSettings,
  SsoRequestContext,
} from './types';
