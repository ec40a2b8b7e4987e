import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Session } from 'express-session';
import { UnauthorizedError } from '../http/errors';
import { compileAllowedOrigins, csrfRefusal, type CsrfGuardOptions } from './csrf-guard';
import { judgeSession } from './session-lifetime';
import { asOutage } from './session-manager';
import { loginRedirectPrefix, runtimeOf, type SsoRuntime } from './sso-runtime';

/** Options of {@link requireSession}. */
export interface RequireSessionOptions {
  /** Where browser navigations without a login are sent. Default the `loginUrl` of `ssoSession`. */
  loginUrl?: string;
  /**
   * The cross-site request check on POST/PUT/PATCH/DELETE (see `csrfGuard`). Default on (the request's own origin
   * only); pass `{ allowedOrigins }` to trust sibling apps, or `false` only when another guard does the same.
   */
  csrf?: boolean | CsrfGuardOptions;
}

function isNavigation(req: Request): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && req.accepts(['application/json', 'text/html']) === 'text/html';
}

function destroyExpired(current: Session): Promise<void> {
  return new Promise((resolve, reject) => current.destroy((err: unknown) => (err ? reject(asOutage(err)) : resolve())));
}

/**
 * Lets only logged-in requests through and sets `req.user`. A browser navigation (GET/HEAD preferring HTML)
 * without a login is redirected (302) to the login page with `return_to` set to the URL it asked for; any other
 * request gets 401 problem+json (`session_required`). State-changing requests must also pass the CSRF origin check
 * (403 `csrf_origin`). A store outage is 503, never "logged out". Mount after `ssoSession`.
 *
 * @example
 * app.use(ssoSession({ ... }));
 * app.get('/orders', requireSession(), (req, res) => res.json({ user: req.user!.id }));
 */
export function requireSession(options: RequireSessionOptions = {}): RequestHandler {
  if (arguments.length === 3 || (typeof options === 'object' && options !== null && 'socket' in options)) {
    throw new TypeError('requireSession: it is a factory: write app.use(requireSession()), not app.use(requireSession)');
  }
  if (options === null || typeof options !== 'object')
    throw new TypeError('requireSession: options must be an object, e.g. { csrf: true }');
  let loginOverride: string | undefined;
  let loginOverrideUrl: string | undefined;
  if (options.loginUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = typeof options.loginUrl === 'string' ? new URL(options.loginUrl) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.hash) {
      throw new TypeError(
        `requireSession: loginUrl must be an absolute http(s) URL such as "https://auth.example.test/login", got ${JSON.stringify(options.loginUrl)}`,
      );
    }
    loginOverrideUrl = url.href;
    loginOverride = loginRedirectPrefix(url.href);
  }
  const csrf = options.csrf ?? true;
  if (typeof csrf !== 'boolean' && (typeof csrf !== 'object' || csrf === null)) {
    throw new TypeError('requireSession: csrf must be true, false or { allowedOrigins: [...] }');
  }
  const csrfOrigins =
    csrf === false ? undefined : compileAllowedOrigins(csrf === true ? undefined : csrf.allowedOrigins, 'requireSession: csrf');

  function refuse(req: Request, res: Response, next: NextFunction, runtime: SsoRuntime): void {
    const prefix = loginOverride ?? runtime.loginRedirectPrefix;
    if (isNavigation(req)) {
      // Built from the protocol and host Express trusts; still checked, since a client chooses its Host header.
      const requested = `${req.protocol}://${req.host}${req.originalUrl}`;
      const returnTo = runtime.redirects.isSafe(requested) ? requested : runtime.redirects.defaultUrl;
      res.set('Cache-Control', 'no-store');
      res.redirect(302, prefix + encodeURIComponent(returnTo));
      return;
    }
    next(
      new UnauthorizedError({
        code: 'session_required',
        detail: 'Log in to continue.',
        extensions: { login_url: loginOverrideUrl ?? runtime.loginUrl },
      }),
    );
  }

  return function requireSessionMiddleware(req: Request, res: Response, next: NextFunction): void {
    let runtime: SsoRuntime;
    try {
      runtime = runtimeOf(req, 'requireSession');
    } catch (error) {
      next(error);
      return;
    }
    const current = req.session;
    const user = current?.user;
    if (current === undefined || user === undefined) {
      refuse(req, res, next, runtime);
      return;
    }
    const verdict = judgeSession(current.meta, Date.now(), runtime.limits);
    if (verdict !== 'live' && verdict !== 'touch') {
      // Past its lifetime since ssoSession loaded it (or a user without bookkeeping): end it, then treat as absent.
      req.user = undefined;
      destroyExpired(current).then(() => refuse(req, res, next, runtime), next);
      return;
    }
    if (csrfOrigins !== undefined && req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS') {
      const refusal = csrfRefusal(req, csrfOrigins);
      if (refusal !== undefined) {
        next(refusal);
        return;
      }
    }
    req.user = user;
    next();
  };
}
