import express, { type NextFunction, type Request, type Response, Router } from 'express';
import { BadRequestError, UnauthorizedError } from '../http/errors';
import { compileAllowedOrigins, csrfRefusal } from '../session/csrf-guard';
import { establishLogin } from '../session/establish-login';
import { sourceProblem } from '../session/identity';
import { DEFAULT_DIRECTORY_SOURCE } from './user-directory';
import { logout } from '../session/logout';
import type { KeyValueStore } from '../store/port';
import { LoginThrottle, type LoginThrottleOptions } from './login-throttle';
import { PORTAL_CSS, PORTAL_JS, renderLoginPage, renderSessionsPage, type LoginLink } from './portal-pages';
import type { UserDirectory } from './user-directory';

/** A "Sign in with …" link: the path (or URL) of an `oidcLogin` or `qrLogin` route and its label. */
export interface PortalLoginLink {
  href: string;
  label: string;
}

/** Options of {@link loginPortal}. */
export interface LoginPortalOptions {
  /** Where passwords are checked: {@link fileUserDirectory}, {@link redisUserDirectory} or your own. */
  users: UserDirectory;
  /** The kit store the brute-force counters live in (the same Redis as the sessions). */
  store: KeyValueStore;
  /** Throttling policy. Default 5 failures per account and 50 per IP, each per 15 minutes. */
  throttle?: LoginThrottleOptions;
  /** Heading and title of the login page. Default `Sign in`. */
  title?: string;
  /** Link to the QR login route (`qrLogin`'s login path), e.g. `{ href: '/login/qr', label: 'Scan a QR code' }`. */
  qrLogin?: PortalLoginLink;
  /** Links to `oidcLogin` routes, e.g. `[{ href: '/login/corp', label: 'Sign in with Corp' }]`. */
  providers?: readonly PortalLoginLink[];
  /** Origins besides the portal's own whose pages may post to it (login, logout, revoke). Default none. */
  allowedOrigins?: readonly string[];
  /** Where the router serves its CSS and JS. Default `/portal-assets`. */
  assetsPath?: string;
}

const OPTION_KEYS = new Set(['users', 'store', 'throttle', 'title', 'qrLogin', 'providers', 'allowedOrigins', 'assetsPath']);
const GENERIC_FAILURE = 'Wrong username or password';
const MAX_USERNAME = 256;
const MAX_PASSWORD = 1024;

function fail(message: string): never {
  throw new TypeError(`loginPortal: ${message}`);
}

function checkLink(link: unknown, option: string): LoginLink {
  const l = link as Partial<PortalLoginLink> | null;
  if (!l || typeof l !== 'object' || typeof l.href !== 'string' || typeof l.label !== 'string' || l.label.trim() === '') {
    fail(`${option} must be { href: '/login/…', label: 'Sign in with …' }, got ${JSON.stringify(link)}`);
  }
  if (!/^\/(?!\/)/.test(l.href) && !/^https?:\/\//.test(l.href))
    fail(`${option}.href must be a path starting with "/" or an http(s) URL, got "${l.href}"`);
  return { href: l.href, label: l.label };
}

function withReturnTo(href: string, returnTo: string): string {
  if (!returnTo) return href;
  return `${href}${href.includes('?') ? '&' : '?'}return_to=${encodeURIComponent(returnTo)}`;
}

function oneString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Adds origins to the `form-action` directive of the CSP already on the response (from `securityHeaders()`).
 * Chrome applies `form-action` to the redirect that answers a form POST, so a login that redirects to
 * `https://shop.example.test` needs that origin listed on the page holding the form. Only origins of targets the
 * redirect policy accepted are ever added, one exact origin at a time.
 */
/**
 * The portal's forms post to the portal itself, and the POST handlers check `Origin`. Under `no-referrer` browsers
 * send `Origin: null` on form posts, which the check must refuse; so the portal's pages set `same-origin` themselves
 * (as `securityHeaders()` does), whatever helmet setup the app has: full referrers to the portal itself, nothing to other sites, so `return_to`
 * never leaks.
 */
function allowSameOriginReferrer(res: Response): void {
  res.setHeader('Referrer-Policy', 'same-origin');
}

function extendFormAction(res: Response, origins: readonly string[]): void {
  const current = res.getHeader('Content-Security-Policy');
  if (typeof current !== 'string' || origins.length === 0) return;
  const extra = origins.join(' ');
  const directives = current
    .split(';')
    .map((d) => d.trim())
    .filter(Boolean);
  const index = directives.findIndex((d) => d.toLowerCase().startsWith('form-action'));
  if (index === -1) return; // No form-action restriction: nothing to widen.
  directives[index] = `${directives[index]} ${extra}`;
  res.setHeader('Content-Security-Policy', directives.join('; '));
}

/**
 * The central login portal, an Express Router for the `auth.<domain>` app:
 * `GET /login` (accessible password form, QR and OIDC links, `return_to` carried when safe), `POST /login`
 * (throttled per account and per IP, same-origin only, one generic failure message, a fresh session id, 302 to
 * `return_to`), `POST /logout`, `GET /sessions` (the user's signed-in browsers) and `POST /sessions/revocations`.
 * Mount it after `ssoSession()` and `securityHeaders()`; mount `errorHandler()` after it.
 *
 * @example
 * app.use(securityHeaders());
 * app.use(sessions);
 * app.use(loginPortal({ users: fileUserDirectory('users.json'), store, providers: [{ href: '/login/corp', label: 'Sign in with Corp' }] }));
 * app.use(errorHandler({ html: true }));
 */
export function loginPortal(options: LoginPortalOptions): Router {
  if (arguments.length === 3 || (typeof options === 'object' && options !== null && 'socket' in options)) {
    fail('it is a factory: write app.use(loginPortal({ users, store })), not app.use(loginPortal)');
  }
  if (options === null || typeof options !== 'object') fail('pass options: loginPortal({ users, store })');
  for (const key of Object.keys(options)) if (!OPTION_KEYS.has(key)) fail(`unknown option "${key}"`);
  const users = options.users;
  if (!users || typeof users.verifyPassword !== 'function' || typeof users.findById !== 'function') {
    fail('users must be a UserDirectory ({ verifyPassword, findById }), e.g. fileUserDirectory("users.json")');
  }
  // The directory's users are identities of the directory: its ids never meet another source's subjects.
  const directorySource = users.source ?? DEFAULT_DIRECTORY_SOURCE;
  const badSource = sourceProblem(directorySource);
  if (badSource !== undefined) fail(`users.source ${badSource}`);
  const throttle = new LoginThrottle(options.store, options.throttle ?? {});
  const title = options.title ?? 'Sign in';
  if (typeof title !== 'string' || title.trim() === '') fail('title must be a non-empty string');
  const qrLink = options.qrLogin === undefined ? undefined : checkLink(options.qrLogin, 'qrLogin');
  if (options.providers !== undefined && !Array.isArray(options.providers)) fail('providers must be an array of { href, label }');
  const providerLinks = (options.providers ?? []).map((link, i) => checkLink(link, `providers[${i}]`));
  const allowedOrigins = compileAllowedOrigins(options.allowedOrigins, 'loginPortal');
  const assetsPath = options.assetsPath ?? '/portal-assets';
  if (typeof assetsPath !== 'string' || !/^\/[A-Za-z0-9/_-]*[A-Za-z0-9_-]$/.test(assetsPath))
    fail(`assetsPath must be a path like "/portal-assets", got ${JSON.stringify(assetsPath)}`);

  const router = Router();
  const parseForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });

  function context(req: Request) {
    const sso = req.sso;
    if (!sso) throw new Error('loginPortal: no shared session on this request; mount app.use(ssoSession({...})) before loginPortal');
    return sso;
  }

  // Login CSRF matters as much as any other: a forged login would sign the victim into the attacker's account.
  // So the origin check runs on every POST, with or without a cookie (csrfGuard skips cookie-less requests).
  function sameOrigin(req: Request): void {
    const refusal = csrfRefusal(req, allowedOrigins);
    if (refusal) throw refusal;
  }

  /** The safe return_to of a request, or '' when absent or unsafe (then the default applies after login). */
  function safeReturnTo(req: Request, raw: unknown): string {
    const sso = context(req);
    return typeof raw === 'string' && raw !== '' && sso.redirects.isSafe(raw) ? sso.redirects.sanitize(raw) : '';
  }

  function sendLoginPage(req: Request, res: Response, status: number, returnTo: string, error?: string, username?: string): void {
    const sso = context(req);
    const target = returnTo || sso.redirects.defaultUrl;
    extendFormAction(
      res,
      [...new Set([new URL(target).origin, new URL(sso.redirects.defaultUrl).origin])].filter((o) => o !== `${req.protocol}://${req.host}`),
    );
    allowSameOriginReferrer(res);
    res.status(status).setHeader('Cache-Control', 'no-store');
    res.type('html').send(
      renderLoginPage({
        title,
        assetsPath,
        formAction: `${req.baseUrl}/login`,
        returnTo,
        ...(error ? { error } : {}),
        ...(username ? { username } : {}),
        ...(qrLink ? { qrLink: { label: qrLink.label, href: withReturnTo(qrLink.href, returnTo) } } : {}),
        providerLinks: providerLinks.map((link) => ({ label: link.label, href: withReturnTo(link.href, returnTo) })),
      }),
    );
  }

  router.get(`${assetsPath}/portal.css`, function portalStylesheet(_req: Request, res: Response) {
    res.type('text/css').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(PORTAL_CSS);
  });
  router.get(`${assetsPath}/portal.js`, function portalScript(_req: Request, res: Response) {
    res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(PORTAL_JS);
  });

  router.get('/login', function showLoginPage(req: Request, res: Response) {
    const returnTo = safeReturnTo(req, req.query.return_to);
    if (req.user && returnTo) {
      // Already signed in on the parent domain: single sign-on means no second password prompt.
      res.redirect(303, returnTo);
      return;
    }
    sendLoginPage(req, res, 200, returnTo);
  });

  router.post('/login', parseForm, async function submitLogin(req: Request, res: Response) {
    sameOrigin(req);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const username = oneString(body.username)?.trim() ?? '';
    const password = oneString(body.password) ?? '';
    const returnTo = safeReturnTo(req, body.return_to);
    if (username === '' || password === '' || username.length > MAX_USERNAME || password.length > MAX_PASSWORD) {
      sendLoginPage(req, res, 400, returnTo, 'Enter your username and password.', username.slice(0, MAX_USERNAME));
      return;
    }
    const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    const decision = await throttle.attempt(username, ip);
    if (!decision.allowed) {
      res.setHeader('Retry-After', String(decision.retryAfterSeconds));
      const minutes = Math.max(1, Math.ceil(decision.retryAfterSeconds / 60));
      sendLoginPage(
        req,
        res,
        429,
        returnTo,
        `Too many failed attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
        username,
      );
      return;
    }
    const user = await users.verifyPassword(username, password);
    if (!user) {
      await throttle.recordFailure(ip);
      sendLoginPage(req, res, 401, returnTo, GENERIC_FAILURE, username);
      return;
    }
    await throttle.recordSuccess(username);
    await establishLogin(req, {
      source: directorySource,
      subject: user.id,
      name: user.name,
      roles: user.roles,
      method: 'password',
      ...(user.attributes ? { attributes: user.attributes } : {}),
    });
    // 302, as the kit's login contract states; browsers follow it with a GET, like a 303.
    res.redirect(302, returnTo || context(req).redirects.defaultUrl);
  });

  router.post('/logout', function submitLogout(req: Request, res: Response, next: NextFunction) {
    sameOrigin(req);
    logout(req, res).then(() => res.redirect(303, `${req.baseUrl}/login`), next);
  });

  router.get('/sessions', async function showSessions(req: Request, res: Response) {
    const sso = context(req);
    if (!req.user) {
      const here = `${req.protocol}://${req.host}${req.originalUrl.split('?')[0]}`;
      res.redirect(303, `${req.baseUrl}/login?return_to=${encodeURIComponent(here)}`);
      return;
    }
    const sessions = await sso.manager.listSessions(req.user.id, req.sessionID);
    allowSameOriginReferrer(res);
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(
      renderSessionsPage({
        title: 'Your sessions',
        assetsPath,
        userName: req.user.name,
        revokeAction: `${req.baseUrl}/sessions/revocations`,
        logoutAction: `${req.baseUrl}/logout`,
        ...(req.query.revoked === '1' ? { notice: 'The session was signed out.' } : {}),
        sessions: sessions.map((s) => ({
          handle: s.id,
          userAgent: s.userAgent ?? '',
          ip: s.ip ?? '',
          lastSeenAt: s.lastSeenAt,
          createdAt: s.createdAt,
          method: s.method,
          current: s.current,
        })),
      }),
    );
  });

  router.post('/sessions/revocations', parseForm, async function revokeSession(req: Request, res: Response) {
    sameOrigin(req);
    const sso = context(req);
    if (!req.user) throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in to manage your sessions.' });
    const handle = oneString((req.body as Record<string, unknown> | undefined)?.session);
    if (!handle || handle.length > 256) throw new BadRequestError({ detail: 'Name the session to sign out.' });
    const ownHandle = sso.manager.handleOf(req.sessionID);
    const revoked = await sso.manager.revokeSession(req.user.id, handle);
    if (revoked && handle === ownHandle) {
      // This browser's own session is gone from the store; clear its cookie as a logout would.
      await logout(req, res);
      res.redirect(303, `${req.baseUrl}/login`);
      return;
    }
    res.redirect(303, `${req.baseUrl}/sessions${revoked ? '?revoked=1' : ''}`);
  });

  return router;
}
