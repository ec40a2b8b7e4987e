/**
 * express-sso-kit: single sign-on across the apps of one parent domain, and the middlewares that protect them.
 * This file is the whole public surface.
 */
import type { SessionMeta, SessionUser, SsoRequestContext } from './session/types';
import type { AuthInfo } from './tokens/types';
import type { OidcRequestContext, OidcSessionState } from './oidc/types';
import type { QrLoginSessionState } from './qr/types';
import type {} from 'express-session';

export * from './store';
export * from './http';
export * from './session';
export * from './tokens';
export * from './rbac';
export * from './cors';
export * from './basic';
export * from './oidc';
export * from './qr';
export * from './portal';

export type { SessionMeta, SessionUser, LoginUser, AuthenticationMethod } from './session/types';
export type { AuthInfo } from './tokens/types';
export type { OidcRequestContext, OidcSessionState } from './oidc/types';
export type { QrLoginSessionState } from './qr/types';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The logged-in user, set by `requireSession` (or `requireBasic`). */
      user?: SessionUser;
      /** The verified Bearer token, set by `requireBearer`. */
      auth?: AuthInfo;
      /** OpenID Connect helpers, set by `oidcContext` for sessions that logged in through one of its providers. */
      oidc?: OidcRequestContext;
      /** The shared session context (manager, login URL, redirect policy, cookie settings), set by `ssoSession`. */
      sso?: SsoRequestContext;
    }
  }
}

declare module 'express-session' {
  interface SessionData {
    user: SessionUser;
    meta: SessionMeta;
    oidc: OidcSessionState;
    /** OIDC login transactions in flight, keyed by state (single use). */
    oidcTransactions: Record<string, string>;
    qrLogin: QrLoginSessionState;
  }
}
