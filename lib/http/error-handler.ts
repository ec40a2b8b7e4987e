import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import { EVENTS_OPTION, eventsFor, eventsOption } from '../events/event-source';
import { networkOf, requestIdOf } from '../events/request-facts';
import { printable } from '../events/security-event';
import type { SecurityEvents } from '../events/security-events';
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
   * path segment that may be a credential (see {@link ErrorLogEntry}). Default: the error becomes a security event
   * (`store.unavailable` or `error.internal`) when there are events, else one line on `console.error` with the time,
   * the request id, the user and the network; `false` turns the line off (events are still recorded).
   */
  log?: ((entry: ErrorLogEntry) => void) | false;
  /**
   * Where 5xx answers are recorded as events. Default the events of the session (`ssoSession({ events })`) or of
   * the kit middleware that refused the request.
   */
  events?: SecurityEvents;
  /**
   * When true, a browser gets a small HTML page instead of problem+json, with a link back to `homeUrl`: a navigation
   * (a GET whose Accept prefers HTML) and a form it posted (a POST with a form's body type whose Accept prefers HTML).
   * Default false.
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
  /** When the error was answered, ISO-8601 UTC. */
  time: string;
  /** The request's id (`requestIdOf`), also in the problem body as `request_id`. */
  requestId: string;
  /** The signed-in user, when there is one. */
  userId?: string;
  /** The client's network (IPv4 /32, IPv6 /64). */
  network?: string;
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

// What an HTML form can send (its enctypes); a script's JSON or other body is an API call, whatever it accepts.
const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

/**
 * A browser showing the answer as a page: a navigation (GET), or a form it posted (POST with a form's body type),
 * preferring HTML to JSON. Such a browser gets the error as a page, not a JSON document printed on the screen.
 */
function wantsHtml(req: Request): boolean {
  const browserRequest = req.method === 'GET' || (req.method === 'POST' && (!req.headers['content-type'] || req.is(FORM_TYPES) !== false));
  return browserRequest && req.accepts(['application/json', 'application/problem+json', 'text/html']) === 'text/html';
}

function defaultLog(entry: ErrorLogEntry): void {
  const who = [
    `request ${entry.requestId}`,
    ...(entry.userId ? [`user ${entry.userId}`] : []),
    ...(entry.network ? [`from ${entry.network}`] : []),
  ];
  console.error(
    `[express-sso-kit] ${entry.time} ${entry.status} ${entry.code} ${entry.method} ${entry.path} (${who.join(', ')}): ${entry.name}: ${entry.message}`,
  );
}

function logEntry(problem: HttpError, req: Request): ErrorLogEntry {
  const cause = problem.status === 500 && problem.cause instanceof Error ? problem.cause : problem;
  const route = routePattern(req);
  const address = req.ip ?? req.socket?.remoteAddress;
  const userId = req.user?.id;
  return {
    time: new Date().toISOString(),
    requestId: requestIdOf(req),
    ...(userId !== undefined ? { userId: printable(userId) } : {}),
    ...(address !== undefined ? { network: networkOf(address) } : {}),
    status: problem.status,
    code: problem.code,
    name: cause.name,
    message: printable(redactCredentials(cause.message), 512),
    method: req.method,
    path: redactPath(req.originalUrl ?? req.url),
    ...(route !== undefined ? { route } : {}),
  };
}

/** A 5xx as a security event: a store outage answered 503 (fail closed), or another server-side failure. */
function recordServerError(events: SecurityEvents, entry: ErrorLogEntry, req: Request): void {
  const where = { status: entry.status, httpMethod: entry.method, path: entry.path, ...(entry.route ? { route: entry.route } : {}) };
  if (entry.code === 'store_unavailable') {
    events.emit('store.unavailable', { reason: 'store_unavailable', ...where }, req);
    return;
  }
  const reason =
    entry.status === 500
      ? 'internal_error'
      : entry.status === 502
        ? 'bad_gateway'
        : entry.status === 503
          ? 'dependency_unavailable'
          : 'other';
  events.emit('error.internal', { reason, code: entry.code, errorName: entry.name, ...where }, req);
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
    events: EVENTS_OPTION,
  });
  const ownEvents = eventsOption('errorHandler', options.events);
  const customLog = options.log === false ? undefined : options.log;
  const lineWithoutEvents = options.log === undefined;
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
    if (problem.status >= 500) {
      const entry = logEntry(problem, req);
      const events = eventsFor(req, ownEvents);
      if (events !== undefined) recordServerError(events, entry, req);
      if (customLog) customLog(entry);
      else if (lineWithoutEvents && events === undefined) defaultLog(entry);
    }
    // Carried by every problem (and sent as X-Request-Id), so a user's report finds its events and log lines.
    const requestId = requestIdOf(req);
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
      request_id: requestId,
    };
    res.type('application/problem+json').send(JSON.stringify(body));
  };
}
