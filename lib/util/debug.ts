import createDebug from 'debug';

/** The areas that explain their refusals on the `debug` channel `express-sso-kit:<area>`. */
export type DebugArea =
  | 'session'
  | 'forward-auth'
  | 'csrf'
  | 'token'
  | 'redirect'
  | 'oidc'
  | 'qr'
  | 'portal'
  | 'basic'
  | 'rbac'
  | 'cors'
  | 'store'
  | 'credentials'
  | 'accounts'
  | 'mail';

/** A debug logger: call it only with reasons and public facts, never a token, code, state, cookie or password. */
export interface DebugLog {
  (formatter: string, ...args: unknown[]): void;
  /** False unless `DEBUG` names this channel; check it before building an expensive message. */
  readonly enabled: boolean;
}

const channels = new Map<DebugArea, DebugLog>();

/**
 * The debug channel of one area. `DEBUG=express-sso-kit:*` shows why a session, token or redirect was refused;
 * messages carry reasons, never secrets.
 *
 * @example
 * const debug = debugChannel('csrf');
 * debug('refused %s %s: origin %s is not allowed', req.method, path, origin);
 */
export function debugChannel(area: DebugArea): DebugLog {
  let channel = channels.get(area);
  if (channel === undefined) {
    channel = createDebug(`express-sso-kit:${area}`);
    channels.set(area, channel);
  }
  return channel;
}

/** What replaces a run of characters that may be a credential in a log line. */
export const REDACTED = '[redacted]';

// Runs of token characters (base64url, hex, a whole JWT) inside free text, such as an error message.
const TOKEN_RUN = /[A-Za-z0-9_~+/=.-]{20,}/g;

/**
 * Free text for a log line (an error message of a library) with every run of token characters that looks random
 * replaced by `[redacted]`: 20 or more with a digit, or 32 or more. A token, code or secret a library quotes in its
 * message then does not reach a log; words and short numbers stay.
 *
 * @example
 * redactCredentials('code 4f9a1c0e8b7d6a5f4e3d2c1b0a9f8e7d was refused'); // 'code [redacted] was refused'
 */
export function redactCredentials(text: string): string {
  return text.replace(TOKEN_RUN, (run) => (run.length >= 32 || /[0-9]/.test(run) ? REDACTED : run));
}
