/** OpenID Connect state kept server-side in the session after a login (tokens never reach cookies or logs). */
export interface OidcSessionState {
  /** Name of the provider the user logged in with. */
  provider: string;
  /**
   * Issuer of that provider (set by `oidcCallback`). The tokens belong to it alone: `req.oidc` refreshes, and
   * `oidcLogout` sends the ID token hint, only through a provider of this name *and* issuer; without it, through none.
   */
  issuer?: string;
  idToken?: string;
  accessToken?: string;
  refreshToken?: string;
  /** Epoch seconds when the access token expires. */
  expiresAt?: number;
  /** The `sid` claim of the ID token, for back-channel logout. */
  sid?: string;
  /**
   * The provider's end-session URL for this client (RP-Initiated Logout: its `end_session_endpoint` with
   * `client_id` and the `postLogoutRedirectUri`), kept at login so that a sign-out on any app of the domain can end
   * the provider's session too (`upstreamLogoutUrl(req)` adds the ID token hint). Absent when the provider offers none.
   */
  endSessionUrl?: string;
}

/** What `req.oidc` offers inside a request of a logged-in OIDC session. */
export interface OidcRequestContext {
  /** Current access token (refreshed when near expiry), or undefined when the session has none. */
  accessToken(): Promise<string | undefined>;
  /** Forces a refresh_token grant now. */
  refresh(): Promise<void>;
}
