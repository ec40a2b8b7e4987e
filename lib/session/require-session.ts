import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Session } from 'express-session';
import { recordAccessDenied } from '../events/access-denied';
import { UnauthorizedError } from '../http/errors';
import { checkOptions, OptionsError, type OptionSpec } from '../util/options';
import { CSRF_MOVED, refuseRenamedOptions } from './renamed-options';
import { requestOrigin } from '../util/request-origin';
import { authenticationOf } from './authentication';
import { judgeSession } from './session-lifetime';
import { InsufficientAuthenticationError, meetsRequirement, REQUIREMENT_OPTIONS, type AuthenticationLevel } from './step-up';
import { asOutage } from './session-manager';
import { sessionView } from './session-engine';
import { keepResumableForm, readResumableFields } from './resumable-form';
import { loginRedirectPrefix, runtimeOf, type SsoRuntime } from './sso-runtime';

/** Options of {@link requireSession}. */
export interface RequireSessionOptions {
  /** Where browser navigations without a login are sent. Default the `loginUrl` of `ssoSession`. */
  loginUrl?: string;
  /**
   * The least authentication level this route needs: `1fa`, `2fa` or `phr` (`phr` ≥ `2fa` ≥ `1fa`). A session
   * below it is sent through the step-up page (browser navigations) or answered 401
   * `insufficient_user_authentication` (RFC 9470). Default: any login.
   */
  acr?: AuthenticationLevel;
  /** The factors giving the level must have been presented within this many seconds (RFC 9470 `max_age`). */
  maxAgeSeconds?: number;
  /**
   * The portal's step-up page. Default `step-up` next to the `loginUrl` of `ssoSession`
   * (`https://auth.example.test/login` → `https://auth.example.test/step-up`).
   */
  stepUpUrl?: string;
}

function isNavigation(req: Request): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && req.accepts(['application/json', 'text/html']) === 'text/html';
}

/** A form a browser submitted from a page (a POST preferring HTML that names the page it came from). */
function isFormSubmission(req: Request): boolean {
  return req.method === 'POST' && req.get('Referer') !== undefined && req.accepts(['application/json', 'text/html']) === 'text/html';
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

/** The schema entry of an option holding an absolute http(s) URL, with an example in its message. */
function absoluteUrlOption(example: string): OptionSpec {
  return {
    type: 'string',
    check: (value: string) =>
      absoluteHttpUrl(value) === undefined
        ? `must be an absolute http(s) URL such as "${example}", got ${JSON.stringify(value)}`
        : undefined,
  };
}

/**
 * Lets only logged-in requests through and sets `req.user`. A browser navigation (GET/HEAD preferring HTML)
 * without a login is redirected (302) to the login page with `return_to` set to the URL it asked for; any other
 * request gets 401 problem+json (`session_required`). A store outage is 503, never "logged out". Mount after
 * `ssoSession`, which has already refused state-changing requests from other origins (403 `csrf_origin`).
 *
 * With `acr` and/or `maxAgeSeconds` the route also needs that authentication level, recently enough: a browser
 * navigation is sent to the portal's step-up page (`return_to`, `acr`, `max_age`), which asks only the missing
 * factor and comes back; a form posted from a page of the parent domain is sent there too (303, nothing done yet):
 * a small urlencoded form posted to the portal's own origin is kept in the session and sent on by the step-up page
 * once the factor is given (`resume`; single use, for five minutes, and checked again like any post), any other
 * comes back to its page to be submitted again; any other request gets 401 `insufficient_user_authentication` with
 * an RFC 9470 challenge.
 *
 * @example
 * app.use(ssoSession({ ... }));
 * app.get('/orders', requireSession(), (req, res) => res.json({ user: req.user!.id }));
 * app.post('/payouts', requireSession({ acr: '2fa', maxAgeSeconds: 300 }), sendPayout);
 */
export function requireSession(options: RequireSessionOptions = {}): RequestHandler {
  refuseRenamedOptions('requireSession', options, { csrf: CSRF_MOVED });
  checkOptions('requireSession', options as unknown, {
    loginUrl: absoluteUrlOption('https://auth.example.test/login'),
    stepUpUrl: absoluteUrlOption('https://auth.example.test/step-up'),
    ...REQUIREMENT_OPTIONS,
  });
  if (options.stepUpUrl !== undefined && options.acr === undefined && options.maxAgeSeconds === undefined) {
    throw new OptionsError('requireSession: stepUpUrl is only used with acr or maxAgeSeconds; give one of them too');
  }
  const requirement = {
    ...(options.acr === undefined ? {} : { acr: options.acr }),
    ...(options.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: options.maxAgeSeconds }),
  };
  const stepUpRequired = options.acr !== undefined || options.maxAgeSeconds !== undefined;
  // What the step-up page is told besides return_to; it checks the session again, so these only guide it.
  const stepUpQuery =
    (requirement.acr === undefined ? '' : `&acr=${requirement.acr}`) +
    (requirement.maxAgeSeconds === undefined ? '' : `&max_age=${requirement.maxAgeSeconds}`);
  const stepUpOverride = options.stepUpUrl === undefined ? undefined : absoluteHttpUrl(options.stepUpUrl);
  const stepUpByRuntime = new WeakMap<SsoRuntime, string>();
  const stepUpUrlOf = (runtime: SsoRuntime): string => {
    let url = stepUpOverride ?? stepUpByRuntime.get(runtime);
    if (url === undefined) {
      url = new URL('step-up', runtime.loginUrl).href;
      stepUpByRuntime.set(runtime, url);
    }
    return url;
  };
  const loginOverrideUrl = options.loginUrl === undefined ? undefined : absoluteHttpUrl(options.loginUrl);
  const loginOverride = loginOverrideUrl === undefined ? undefined : loginRedirectPrefix(loginOverrideUrl);

  /** The URL this request asked for when it is a safe redirect target, else the policy's default. */
  function returnToOf(req: Request, runtime: SsoRuntime): string {
    // From the protocol and Host Express trusts (with its port, on Express 4 and 5 alike); still checked, since
    // a client chooses its Host header, and replaced by the default without a usable one.
    const origin = requestOrigin(req);
    const requested = origin === undefined ? undefined : `${origin}${req.originalUrl}`;
    return requested !== undefined && runtime.redirects.isSafe(requested) ? requested : runtime.redirects.defaultUrl;
  }

  function stepUp(req: Request, res: Response, next: NextFunction, runtime: SsoRuntime): void {
    const stepUpUrl = stepUpUrlOf(runtime);
    const separator = new URL(stepUpUrl).search ? '&' : '?';
    if (isNavigation(req)) {
      res.set('Cache-Control', 'no-store');
      res.redirect(302, `${stepUpUrl}${separator}return_to=${encodeURIComponent(returnToOf(req, runtime))}${stepUpQuery}`);
      return;
    }
    // A form posted from a page (the sessions page's "Revoke"): nothing is done now, and the browser is sent through
    // the step-up page, back to the page the form was on. ssoSession has already checked the post's origin; the page
    // it names must still be a safe redirect target.
    const formPage = isFormSubmission(req) ? req.get('Referer')! : undefined;
    if (formPage !== undefined && runtime.redirects.isSafe(formPage)) {
      resumableStepUp(req, res, runtime, stepUpUrl).then((resume) => {
        res.set('Cache-Control', 'no-store');
        res.redirect(303, `${stepUpUrl}${separator}return_to=${encodeURIComponent(formPage)}${stepUpQuery}${resume}`);
      }, next);
      return;
    }
    recordAccessDenied(req, 'insufficient_authentication');
    next(new InsufficientAuthenticationError(requirement, { stepUpUrl }));
  }

  /**
   * A form posted to the step-up page's own origin (the portal's) is kept in the session, and the step-up page sends
   * it on once the factor is given, so the click is not lost; `&resume=<id>` then, '' for any other form (a form
   * of another origin, or not a small urlencoded one), which the user submits again on its page.
   */
  async function resumableStepUp(req: Request, res: Response, runtime: SsoRuntime, stepUpUrl: string): Promise<string> {
    const origin = requestOrigin(req);
    if (origin === undefined || origin !== new URL(stepUpUrl).origin) return '';
    const fields = await readResumableFields(req, res);
    if (fields === undefined) return '';
    const action = `${origin}${req.originalUrl}`;
    if (!runtime.redirects.isSafe(action)) return '';
    return `&resume=${await keepResumableForm(req, action, fields)}`;
  }

  function refuse(req: Request, res: Response, next: NextFunction, runtime: SsoRuntime): void {
    const prefix = loginOverride ?? runtime.loginRedirectPrefix;
    if (isNavigation(req)) {
      res.set('Cache-Control', 'no-store');
      res.redirect(302, prefix + encodeURIComponent(returnToOf(req, runtime)));
      return;
    }
    recordAccessDenied(req, 'not_authenticated');
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
    const current = sessionView(req);
    const user = current?.user;
    if (current === undefined || user === undefined) {
      refuse(req, res, next, runtime);
      return;
    }
    const verdict = judgeSession(current.meta, Date.now(), runtime.limits);
    if (verdict !== 'live' && verdict !== 'touch') {
      // Past its lifetime since ssoSession loaded it (or a user without bookkeeping): end it, then treat as absent.
      req.user = undefined;
      destroyExpired(req.session).then(() => refuse(req, res, next, runtime), next);
      return;
    }
    req.user = user;
    if (stepUpRequired && !meetsRequirement(authenticationOf(user), requirement, Math.floor(Date.now() / 1000))) {
      stepUp(req, res, next, runtime);
      return;
    }
    next();
  };
}
