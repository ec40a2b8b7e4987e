import createDebug from 'debug';

/** The areas that explain their refusals on the `debug` channel `express-sso-kit:<area>`. */
export type DebugArea = 'session' | 'csrf' | 'token' | 'redirect' | 'oidc' | 'qr' | 'portal' | 'basic' | 'rbac' | 'cors' | 'store';

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
