import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Session } from 'express-session';
import { UnauthorizedError } from '../http/errors';
import { checkOptions } from '../util/options';
import { CSRF_MOVED, refuseRenamedOptions } from './renamed-options';
import { requestOrigin } from '../util/request-origin';
import { judgeSession } from './session-lifetime';
import { asOutage } from './session-manager';
import { loginRedirectPrefix, runtimeOf, type SsoRuntime } from './sso-runtime';

/** Options of {@link requireSession}. */
export interface RequireSessionOptions {
  /** Where browser navigations without a login are sent. Default the `loginUrl` of `ssoSession`. */
  loginUrl?: string;
}

function isNavigation(req: Request): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && req.accepts(['application/json', 'text/html']) === 'text/html';
}

function destroyExpired(current: Session): Promise<void> {
  return new Promise((resolve, reject) => current.destroy((err: unknown) => (err ? reject(asOutage(err)) : resolve())));
}

function absoluteHttpUrl(value: string): string | undefined {
  try {
    const url = new URL(value);
    return /^https?:$/.test(url.protocol) && !url.hash ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Lets only logged-in requests through and sets `req.user`. A browser navigation (GET/HEAD preferring HTML)
 * without a login is redirected (302) to the login page with `return_to` set to the URL it asked for; any other
 * request gets 401 problem+json (`session_required`). A store outage is 503, never "logged out". Mount after
 * `ssoSession`, which has already refused state-changing requests from other origins (403 `csrf_origin`).
 *
 * @example
 * app.use(ssoSession({ ... }));
 * app.get('/orders', requireSession(), (req, res) => res.json({ user: req.user!.id }));
 */
export function requireSession(options: RequireSessionOptions = {}): RequestHandler {
  refuseRenamedOptions('requireSession', options, { csrf: CSRF_MOVED });
  checkOptions('requireSession', options as unknown, {
    loginUrl: {
      type: 'string',
      check: (value: string) =>
        absoluteHttpUrl(value) === undefined
          ? `must be an absolute http(s) URL such as "https://auth.example.test/login", got ${JSON.stringify(value)}`
          : undefined,
    },
  });
  const loginOverrideUrl = options.loginUrl === undefined ? undefined : absoluteHttpUrl(options.loginUrl);
  const loginOverride = loginOverrideUrl === undefined ? undefined : loginRedirectPrefix(loginOverrideUrl);

  function refuse(req: Request, res: Response, next: NextFunction, runtime: SsoRuntime): void {
    const prefix = loginOverride ?? runtime.loginRedirectPrefix;
    if (isNavigation(req)) {
      // From the protocol and Host Express trusts (with its port, on Express 4 and 5 alike); still checked, since
      // a client chooses its Host header, and replaced by the default without a usable one.
      const origin = requestOrigin(req);
      const requested = origin === undefined ? undefined : `${origin}${req.originalUrl}`;
      const returnTo = requested !== undefined && runtime.redirects.isSafe(requested) ? requested : runtime.redirects.defaultUrl;
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
    req.user = user;
    next();
  };
}
