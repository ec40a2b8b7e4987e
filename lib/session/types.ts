import type { Request } from 'express';
import type { SecurityEvents } from '../events/security-events';
import type { Identity } from './identity';
import type { Authentication, LoginAuthentication } from './authentication';

/** How a user proved who they are. `password`, `qr` and `oidc` are the kit's own; apps may add their own. */
export type AuthenticationMethod = 'password' | 'qr' | 'oidc' | 'basic' | (string & {});

/** Identity-provider details kept on a session user: never secrets or tokens. */
export type UserAttributes = Record<string, string | number | boolean | null>;

/** The logged-in user as the session keeps it and `req.user` exposes it. */
export interface SessionUser extends Identity {
  /**
   * The user id: `<source>|<subject>` (see `identityId`), so users of two sources never share an id. Key sessions,
   * permissions and your own records on it, never on `subject` alone.
   */
  id: string;
  /** Display name. */
  name: string;
  roles: string[];
  /** How they authenticated. */
  method: AuthenticationMethod;
  /** When they authenticated, in epoch milliseconds. */
  authenticatedAt: number;
  /** How strongly: methods (`amr`), level (`acr`) and time of each factor. Read it with `authenticationOf(user)`. */
  authentication?: Authentication;
  /** Provider-specific identity details (e.g. the OIDC issuer and `sid`), never secrets. */
  attributes?: UserAttributes;
  /** Set when `linkAccount` logged this identity in as a local account: the identity that authenticated. */
  linkedFrom?: Identity;
}

/**
 * The user as given to `establishLogin`: the identity that authenticated (source and subject), its name and
 * roles. The id is derived from the identity; `authenticatedAt` defaults to now.
 */
export interface LoginUser extends Identity {
  name: string;
  roles: string[];
  method: AuthenticationMethod;
  authenticatedAt?: number;
  /** The methods, level and time of this authentication; derived from `method` when absent. */
  authentication?: LoginAuthentication;
  attributes?: UserAttributes;
}

/**
 * The local account a login is mapped onto by `linkAccount`. The name defaults to the login's; the roles default
 * to none, so another source's roles never become the local account's unless the hook says so.
 */
export interface LinkedAccount extends Identity {
  name?: string;
  roles?: string[];
  attributes?: UserAttributes;
}

/**
 * The one place where two sources meet: given the identity that just authenticated, return the local account it
 * logs in as, `undefined` to log it in as itself, or `null` to refuse the login (403 `account_not_linked`).
 * Never implicit: without this hook, every identity is its own user.
 */
export type LinkAccount = (
  login: Readonly<LoginUser>,
  req: Request,
) => LinkedAccount | null | undefined | Promise<LinkedAccount | null | undefined>;

/** Bookkeeping the kit keeps in every logged-in session. */
export interface SessionMeta {
  /** Epoch milliseconds of the login; the absolute lifetime counts from here. */
  createdAt: number;
  /** Epoch milliseconds of the last request that refreshed the idle timer. */
  lastSeenAt: number;
  ip?: string;
  userAgent?: string;
  /** Index tags given to `establishLogin` (e.g. `oidc-sid:<issuer>|<sid>`), so logout can unindex the session. */
  tags?: string[];
}

/** One session of a user as `listSessions` and `GET /sessions` show it. */
export interface SessionSummary {
  /** A public handle of the session (a keyed hash of its id); the session id itself is never shown. */
  id: string;
  createdAt: number;
  lastSeenAt: number;
  ip?: string;
  userAgent?: string;
  method: AuthenticationMethod;
  /** True for the session of the request that asked. */
  current: boolean;
}

/**
 * Operations on the sessions of the shared store, available as `ssoSession(...).manager` and `req.sso.manager`.
 * Every method rejects with `ServiceUnavailableError` (503) when the store is down.
 */
export interface SessionManager {
  /** The user's live sessions, oldest first; index entries of sessions that are gone are dropped. */
  listSessions(userId: string, currentSessionId?: string): Promise<SessionSummary[]>;
  /** Ends one session of the user by its public handle. False when the handle is unknown or not the user's. */
  revokeSession(userId: string, handle: string): Promise<boolean>;
  /** Ends every session of the user; resolves to how many were live. */
  logoutEverywhere(userId: string): Promise<number>;
  /**
   * Ends every session of every user who signed in within a session's absolute lifetime (an administrator's "sign
   * everyone out"); resolves to how many users had sessions and how many sessions were live.
   */
  logoutEveryone(): Promise<{ users: number; sessions: number }>;
  /** Ends every session indexed under a tag given to `establishLogin`; resolves to how many were live. */
  destroyByTag(tag: string): Promise<number>;
  /** The public handle of a session id. */
  handleOf(sessionId: string): string;
  /**
   * Calls `listener` with the public handles of sessions that ended by logout, logout everywhere, revocation or
   * `destroyByTag`, in any process sharing the store (announced over the store's publish/subscribe). Sessions that
   * simply expire are not announced. Resolves, once subscribed, to a function that unsubscribes.
   */
  onSessionsEnded(listener: (handles: string[]) => void): Promise<() => Promise<void>>;
  /** Closes the Redis connection if `ssoSession` opened it (from the `redis` option); otherwise does nothing. */
  close(): Promise<void>;
}

/** The redirect-target check (see `createRedirectPolicy`). */
export interface RedirectPolicy {
  /** True when the target may be redirected to. */
  isSafe(target: unknown): boolean;
  /** The target as a normalized absolute URL when safe, otherwise `defaultUrl`. */
  sanitize(target: unknown): string;
  readonly defaultUrl: string;
}

/** The attributes of the shared session cookie, for code that must set or clear it the same way. */
export interface SessionCookieSettings {
  readonly name: string;
  readonly domain: string;
  readonly path: '/';
  readonly httpOnly: true;
  readonly secure: boolean;
  readonly sameSite: 'lax';
}

/** What `ssoSession` puts on `req.sso` for the kit's other functions (one shared object, never per request). */
export interface SsoRequestContext {
  readonly manager: SessionManager;
  /** Absolute URL of the central login page. */
  readonly loginUrl: string;
  /** The redirect policy of the parent domain; pass every `return_to` through `redirects.sanitize`. */
  readonly redirects: RedirectPolicy;
  readonly cookie: SessionCookieSettings;
  readonly idleTimeoutSeconds: number;
  readonly absoluteLifetimeSeconds: number;
  /** The security events given to `ssoSession`, for the kit's later middlewares and the app's own events. */
  readonly events?: SecurityEvents | undefined;
}
