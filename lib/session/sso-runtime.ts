import type { Request } from 'express';
import type { Store } from 'express-session';
import type { SecurityEvents } from '../events/security-events';
import type { SessionLimits } from './session-lifetime';
import type { KitSessionManager } from './session-manager';
import type { SsoSessionLimitOptions } from './sso-session-options';
import type { LinkAccount, RedirectPolicy, SessionCookieSettings, SsoRequestContext } from './types';
import { HttpError } from '../http/errors';

/**
 * The object `ssoSession` puts on `req.sso`: built once per `ssoSession(...)` call and shared by every request,
 * so no request allocates it. Besides the public {@link SsoRequestContext} it carries what the kit's own
 * functions need (the express-session store, the limits).
 *
 * @example
 * const runtime = runtimeOf(req, 'logout');
 * res.clearCookie(runtime.cookie.name, runtime.clearCookieOptions());
 */
export class SsoRuntime implements SsoRequestContext {
  readonly idleTimeoutSeconds: number;
  readonly absoluteLifetimeSeconds: number;
  /** `loginUrl` ready for `encodeURIComponent(returnTo)` to be appended. */
  readonly loginRedirectPrefix: string;

  constructor(
    readonly manager: KitSessionManager,
    readonly loginUrl: string,
    readonly redirects: RedirectPolicy,
    readonly cookie: SessionCookieSettings,
    readonly limits: SessionLimits,
    readonly sessionStore: Store,
    readonly linkAccount: LinkAccount | undefined = undefined,
    readonly events: SecurityEvents | undefined = undefined,
    readonly sessionLimit: Required<SsoSessionLimitOptions> | undefined = undefined,
  ) {
    this.idleTimeoutSeconds = limits.idleMs / 1000;
    this.absoluteLifetimeSeconds = limits.absoluteMs / 1000;
    this.loginRedirectPrefix = loginRedirectPrefix(loginUrl);
  }

  /** The options `res.clearCookie` needs to remove the cookie this runtime sets (same Domain, Path and flags). */
  clearCookieOptions(): { domain: string; path: string; httpOnly: true; secure: boolean; sameSite: 'lax' } {
    const { domain, path, httpOnly, secure, sameSite } = this.cookie;
    return { domain, path, httpOnly, secure, sameSite };
  }
}

/**
 * The login URL ready for an encoded `return_to` to be appended, computed once.
 *
 * @example
 * loginRedirectPrefix('https://auth.example.test/login?lang=en'); // 'https://auth.example.test/login?lang=en&return_to='
 */
export function loginRedirectPrefix(loginUrl: string): string {
  return `${loginUrl}${new URL(loginUrl).search ? '&' : '?'}return_to=`;
}

/**
 * The runtime of the `ssoSession` that ran for this request; throws naming the middleware that must come first.
 *
 * @example
 * const runtime = runtimeOf(req, 'requireSession');
 */
export function runtimeOf(req: Request, caller: string): SsoRuntime {
  const sso = req.sso;
  if (!(sso instanceof SsoRuntime)) {
    throw new HttpError(500, {
      code: 'middleware_order',
      detail: `${caller}: no shared session on this request; mount app.use(ssoSession({...})) before ${caller}`,
    });
  }
  return sso;
}
