import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import { checkOptions } from '../util/options';
import { HttpError } from './errors';
import { redactCredentials } from '../util/debug';
import { redactPath, routePattern } from './log-redaction';
import { toHttpError } from './to-http-error';
import { escapeHtml } from './pages/escape-html';
import { renderPage } from './pages/page-shell';

export { toHttpError } from './to-http-error';

/** Options of {@link errorHandler}. */
export interface ErrorHandlerOptions {
  /**
   * Receives every error with status ≥ 500 (and nothing else) for logging. The entry holds no query string and no
   * path segment that may be a credential (see {@link ErrorLogEntry}). Default: one line on `console.error`;
   * `false` turns logging off.
   */
  log?: ((entry: ErrorLogEntry) => void) | false;
  /**
   * When true, a browser navigation (a GET whose Accept prefers HTML) gets a small HTML page instead of
   * problem+json, with a link back to `homeUrl`. Default false.
   */
  html?: boolean;
  /** Where the HTML error page's "back" link points. Default `/`. */
  homeUrl?: string;
  /**
   * The stylesheet the HTML error pages link, on the app's own origin (its strict CSP allows no other): the kit's,
   * as `loginPortal` serves it (`/portal-assets/portal.css`), or the app's own. Default none: an unstyled page.
   */
  stylesheetUrl?: string;
  /** Base URI for the problem `type` member; `${typeBaseUri}${code}`. Default: `about:blank` for every problem. */
  typeBaseUri?: string;
}

/** What {@link ErrorHandlerOptions.log} receives. Nothing in it is a code, token, state, cookie or password. */
export interface ErrorLogEntry {
  status: number;
  code: string;
  name: string;
  /** The error's message, with runs that look like tokens replaced by `[redacted]`. */
  message: string;
  method: string;
  /**
   * The request path without its query, with every segment that may be a credential (a QR `auth_code`, a session
   * handle, anything percent-encoded) replaced by `[redacted]`.
   */
  path: string;
  /** The pattern of the route that failed, relative to its router (`/sns/qr-logins/:authCode/events`), when one did. */
  route?: string;
}

function wantsHtml(req: Request): boolean {
  return req.method === 'GET' && req.accepts(['application/json', 'application/problem+json', 'text/html']) === 'text/html';
}

function defaultLog(entry: ErrorLogEntry): void {
  console.error(`[express-sso-kit] ${entry.status} ${entry.code} ${entry.method} ${entry.path}: ${entry.name}: ${entry.message}`);
}

function logEntry(problem: HttpError, req: Request): ErrorLogEntry {
  const cause = problem.status === 500 && problem.cause instanceof Error ? problem.cause : problem;
  const route = routePattern(req);
  return {
    status: problem.status,
    code: problem.code,
    name: cause.name,
    message: redactCredentials(cause.message),
    method: req.method,
    path: redactPath(req.originalUrl ?? req.url),
    ...(route !== undefined ? { route } : {}),
  };
}

/**
 * Renders the kit's errors (and any other) as RFC 9457 `application/problem+json`, with the status and headers
 * the error carries: bad input of any library (a malformed percent-escape, an unparsable or oversized body) as its
 * 4xx with a stable code, outages as 503, anything unexpected as 500 without its message. Mount it last.
 *
 * @example
 * app.use(errorHandler({ html: true, homeUrl: 'https://shop.example.test/' }));
 */
export function errorHandler(options: ErrorHandlerOptions = {}): ErrorRequestHandler {
  checkOptions('errorHandler', options, {
    log: {
      type: ['function', 'boolean'],
      expected: 'a function or false',
      check: (value: unknown) => (value === true ? 'must be a function or false (logging is on by default)' : undefined),
    },
    html: { type: 'boolean' },
    homeUrl: { type: 'string' },
    stylesheetUrl: {
      type: 'string',
      expected: 'a path on the app\'s origin, like "/portal-assets/portal.css"',
      check: (url: string) =>
        /^\/(?![/\\])/.test(url)
          ? undefined
          : `must be a path on the app's origin, like "/portal-assets/portal.css", got ${JSON.stringify(url)}`,
    },
    typeBaseUri: { type: 'string' },
  });
  const log = options.log === false ? undefined : (options.log ?? defaultLog);
  const html = options.html === true;
  const homeUrl = options.homeUrl ?? '/';
  const stylesheetUrl = options.stylesheetUrl;
  const typeBase = options.typeBaseUri;

  return function errorHandlerMiddleware(error: unknown, req: Request, res: Response, next: NextFunction) {
    if (res.headersSent) {
      next(error);
      return;
    }
    const problem = toHttpError(error);
    if (problem.status >= 500 && log) log(logEntry(problem, req));
    res.status(problem.status);
    for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
    res.setHeader('Cache-Control', 'no-store');

    const detail = problem.expose ? problem.detail : problem.status === 500 ? 'An unexpected error occurred.' : problem.detail;
    if (html && wantsHtml(req)) {
      res.type('html').send(
        renderPage({
          title: `${problem.status} ${problem.title}`,
          ...(stylesheetUrl ? { stylesheetUrl } : {}),
          body:
            `<p class="eyebrow">Error ${problem.status}</p><h1>${escapeHtml(problem.title)}</h1>` +
            `${detail ? `<p>${escapeHtml(detail)}</p>` : ''}<p><a class="button" href="${escapeHtml(homeUrl)}">Back to the start page</a></p>`,
        }),
      );
      return;
    }
    const body: Record<string, unknown> = {
      type: typeBase ? `${typeBase}${problem.code}` : 'about:blank',
      title: problem.title,
      status: problem.status,
      code: problem.code,
      ...(detail ? { detail } : {}),
      ...problem.extensions,
    };
    res.type('application/problem+json').send(JSON.stringify(body));
  };
}
