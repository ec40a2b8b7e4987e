import type { Request, Response } from 'express';
import { UnauthorizedError } from '../http/errors';
import { establishLogin } from '../session/establish-login';
import { refuseInsecureLogin } from '../session/https-required';
import { logout } from '../session/logout';
import type { LoginUser, RedirectPolicy, SessionManager } from '../session/types';
import type { OidcSessionState } from './types';
import { misconfigured } from './errors';

/**
 * Fails (500 `oidc_misconfigured`) with a message naming the missing middleware when no session is mounted before
 * an OIDC route, or when the Secure session cookie could not be set because Express sees plain http.
 *
 * @example
 * requireSessionSupport(req, 'oidcLogin');
 */
export function requireSessionSupport(req: Request, who: string): void {
  if (!req.session) {
    throw misconfigured(`${who}: req.session is missing; mount ssoSession() before ${who}`);
  }
  // express-session silently drops a Secure cookie on plain http: the login transaction would be lost.
  refuseInsecureLogin(req, who);
}

/**
 * The explicit policy, or the one `ssoSession` installed on the request.
 *
 * @example
 * const returnTo = redirectPolicyOf(req, options.redirects, 'oidcLogin').sanitize(req.query.return_to);
 */
export function redirectPolicyOf(req: Request, explicit: RedirectPolicy | undefined, who: string): RedirectPolicy {
  if (explicit) return explicit;
  const installed = req.sso?.redirects;
  if (!installed || typeof installed.sanitize !== 'function') {
    throw misconfigured(`${who}: no redirect policy; mount ssoSession() before ${who} or pass { redirects }`);
  }
  return installed;
}

/**
 * `req.session.save()` as a promise; a store outage rejects (and becomes a 503).
 *
 * @example
 * await saveSession(req);
 */
export function saveSession(req: Request): Promise<void> {
  return new Promise((resolve, reject) => req.session.save((error?: unknown) => (error ? reject(error) : resolve())));
}

/**
 * `req.session.reload()` as a promise: re-reads the session from the store.
 *
 * @example
 * await reloadSession(req); // pick up tokens another instance just refreshed
 */
export function reloadSession(req: Request): Promise<void> {
  return new Promise((resolve, reject) =>
    req.session.reload((error?: unknown) => {
      if (!error) resolve();
      // express-session's way of saying the record is gone: logged out (or expired) while we waited.
      else if (error instanceof Error && error.message === 'failed to load session') {
        reject(new UnauthorizedError({ code: 'session_ended', detail: 'This session ended; log in again.' }));
      } else reject(error);
    }),
  );
}

/**
 * Logs the user in through the session module (new session id, tags indexed) with the OIDC state in the same write.
 *
 * @example
 * await establishOidcLogin(req, user, [`oidc-sub:${issuer}|${sub}`], { provider: 'corp', idToken, accessToken });
 */
export async function establishOidcLogin(req: Request, user: LoginUser, tags: string[], oidc: OidcSessionState): Promise<void> {
  await establishLogin(req, user, { tags, data: { oidc } });
}

/**
 * The session manager given explicitly, or the one `ssoSession` installed.
 *
 * @example
 * await sessionManagerOf(req, options.sessions, 'backchannelLogout').destroyByTag(tag);
 */
export function sessionManagerOf(req: Request, explicit: SessionManager | undefined, who: string): SessionManager {
  if (explicit) return explicit;
  const manager = req.sso?.manager;
  if (!manager || typeof manager.destroyByTag !== 'function') {
    throw misconfigured(`${who}: no session manager; mount ssoSession() before ${who} or pass { sessions }`);
  }
  return manager;
}

/**
 * Ends the local shared session (store record, indexes, cookie) through the session module.
 *
 * @example
 * await endLocalSession(req, res);
 */
export async function endLocalSession(req: Request, res: Response): Promise<void> {
  await logout(req, res);
}
