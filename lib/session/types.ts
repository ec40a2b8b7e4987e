/** How a user proved who they are. `password`, `qr` and `oidc` are the kit's own; apps may add their own. */
export type AuthenticationMethod = 'password' | 'qr' | 'oidc' | 'basic' | (string & {});

/** The logged-in user as the session keeps it and `req.user` exposes it. */
export interface SessionUser {
  /** Stable user id (the subject). */
  id: string;
  /** Display name. */
  name: string;
  roles: string[];
  /** How they authenticated. */
  method: AuthenticationMethod;
  /** When they authenticated, in epoch milliseconds. */
  authenticatedAt: number;
  /** Provider-specific identity details (e.g. the OIDC issuer and `sid`), never secrets. */
  attributes?: Record<string, string | number | boolean | null>;
}

/** The user as given to `establishLogin`; `authenticatedAt` defaults to now. */
export type LoginUser = Omit<SessionUser, 'authenticatedAt'> & { authenticatedAt?: number };

/** Bookkeeping the kit keeps in every logged-in session. */
export interface SessionMeta {
  /** Epoch milliseconds of the login; the absolute lifetime counts from here. */
  createdAt: number;
  /** Epoch milliseconds of the last request that refreshed the idle timer. */
  lastSeenAt: number;
  ip?: string;
  userAgent?: string;
}
