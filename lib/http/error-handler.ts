import type { ErrorRequestHandler, Request, Response } from 'express';
import { StoreUnavailableError } from '../store/port';
import { HttpError, ServiceUnavailableError } from './errors';

/** Options of {@link errorHandler}. */
export interface ErrorHandlerOptions {
  /**
   * Receives every error with status ≥ 500 (and nothing else) for logging. The request line is given without its
   * query string, since a query can carry codes or tokens. Default: one line on `console.error`.
   */
  log?: ((entry: ErrorLogEntry) => void) | false;
  /**
   * When true, a browser navigation (a GET whose Accept prefers HTML) gets a small HTML page instead of
   * problem+json, with a link back to `homeUrl`. Default false.
   */
  html?: boolean;
  /** Where the HTML error page's "back" link points. Default `/`. */
  homeUrl?: string;
  /** Base URI for the problem `type` member; `${typeBaseUri}${code}`. Default: `about:blank` for every problem. */
  typeBaseUri?: string;
}

/** What {@link ErrorHandlerOptions.log} receives. */
export interface ErrorLogEntry {
  status: number;
  code: string;
  name: string;
  message: string;
  method: string;
  path: string;
}

interface ParserError {
  type?: unknown;
  status?: unknown;
  expose?: unknown;
}

/** Maps anything thrown to an {@link HttpError}: our own as is, body-parser's by status, the rest to 500. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof StoreUnavailableError) {
    return new ServiceUnavailableError({ code: 'store_unavailable', detail: 'The session store is unavailable. Try again shortly.' });
  }
  const parser = error as ParserError;
  if (typeof parser?.status === 'number' && parser.status >= 400 && parser.status < 500 && parser.expose === true) {
    const detail = parser.type === 'entity.parse.failed' ? 'The request body is not valid for its Content-Type.' : undefined;
    return new HttpError(parser.status, {
      code: typeof parser.type === 'string' ? parser.type.replace(/\./g, '_') : undefined,
      ...(detail ? { detail } : {}),
    });
  }
  return new HttpError(500, { code: 'internal_error', cause: error });
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function wantsHtml(req: Request): boolean {
  return req.method === 'GET' && req.accepts(['application/json', 'application/problem+json', 'text/html']) === 'text/html';
}

function defaultLog(entry: ErrorLogEntry): void {
  console.error(`[express-sso-kit] ${entry.status} ${entry.code} ${entry.method} ${entry.path}: ${entry.name}: ${entry.message}`);
}

/**
 * Renders the kit's errors (and any other) as RFC 9457 `application/problem+json`, with the status and headers
 * the error carries. Mount it last.
 *
 * @example
 * app.use(errorHandler({ html: true, homeUrl: 'https://shop.example.test/' }));
 */
export function errorHandler(options: ErrorHandlerOptions = {}): ErrorRequestHandler {
  if (options.log !== undefined && options.log !== false && typeof options.log !== 'function') {
    throw new TypeError('errorHandler: log must be a function or false');
  }
  const log = options.log === false ? undefined : (options.log ?? defaultLog);
  const homeUrl = options.homeUrl ?? '/';
  const typeBase = options.typeBaseUri;

  return function errorHandlerMiddleware(error: unknown, req: Request, res: Response, next: (err?: unknown) => void) {
    if (res.headersSent) {
      next(error);
      return;
    }
    const problem = toHttpError(error);
    if (problem.status >= 500 && log) {
      const cause = problem.status === 500 && problem.cause instanceof Error ? problem.cause : problem;
      log({
        status: problem.status,
        code: problem.code,
        name: cause.name,
        message: cause.message,
        method: req.method,
        path: req.originalUrl.split('?')[0] ?? req.originalUrl,
      });
    }
    res.status(problem.status);
    for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
    res.setHeader('Cache-Control', 'no-store');

    const detail = problem.expose ? problem.detail : problem.status === 500 ? 'An unexpected error occurred.' : problem.detail;
    if (options.html && wantsHtml(req)) {
      res
        .type('html')
        .send(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${problem.status} ${escapeHtml(problem.title)}</title></head>` +
            `<body><main><h1>${escapeHtml(problem.title)}</h1>${detail ? `<p>${escapeHtml(detail)}</p>` : ''}` +
            `<p><a href="${escapeHtml(homeUrl)}">Back to the start page</a></p></main></body></html>`,
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
