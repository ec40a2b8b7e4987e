/** The provider's tokens of a QR login, kept server-side in the session only (never in a cookie, URL or log). */
export interface QrProviderTokens {
  accessToken: string;
  refreshToken: string;
  openid: string;
  unionid?: string;
  scope?: string;
  /** Epoch seconds when the access token expires. */
  expiresAt: number;
}

/** Relying-app state of a QR login in progress, kept in the browser's session. */
export interface QrLoginSessionState {
  /** Single-use states of QR logins started from this browser, each with its sanitized return_to. */
  pending?: Record<string, { returnTo: string; createdAt: number }>;
  /** The provider's tokens after a completed QR login, for `refresh(req)`. */
  tokens?: QrProviderTokens;
}
export {};
