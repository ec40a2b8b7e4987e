/** Relying-app state of a QR login in progress, kept in the browser's session. */
export interface QrLoginSessionState {
  /** Single-use states of QR logins started from this browser, each with its sanitized return_to. */
  pending?: Record<string, { returnTo: string; createdAt: number }>;
}
