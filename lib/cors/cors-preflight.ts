import cors from 'cors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ForbiddenError } from '../http/errors';
import { redactPath } from '../http/log-redaction';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { warnCredentialedBreadth } from './cors-warnings';
import { compileOrigins } from './origin-matcher';

const debug = debugChannel('cors');

/** Options of {@link corsPreflight}. */
export interface CorsPreflightOptions {
  /**
   * Origins allowed to read responses: exact origins (`https://shop.example.test`) and parent-domain patterns
   * (`https://*.example.test`, one or more labels before the parent; an explicit port only if written), or `'*'`
   * for every origin (never together with `credentials`). Required. With `credentials`, list exact origins: a
   * pattern lets every matching subdomain read authenticated answers (a start-up warning says so).
   */
  origins: string | readonly string[];
  /** Send `Access-Control-Allow-Credentials: true`, so cookies and HTTP authentication go along. Default false. */
  credentials?: boolean;
  /** Methods a preflight may ask for. Default `GET, HEAD, PUT, PATCH, POST, DELETE`. */
  methods?: readonly string[];
  /** Request headers a preflight may ask for (case-insensitive). Default `Content-Type, Authorization`. */
  allowedHeaders?: readonly string[];
  /** Response headers scripts may read beyond the CORS-safelisted ones. Default none. */
  exposedHeaders?: readonly string[];
  /** `Access-Control-Max-Age`: how long a browser may cache a preflight answer. Default 600 (Chromium caps at 7200). */
  maxAgeSeconds?: number;
  /**
   * Answer 403 also to actual (non-preflight) requests that carry a disallowed `Origin`, instead of letting them
   * through without CORS headers. List your own origin too: browsers send `Origin` on same-origin POSTs. Default false.
   */
  rejectDisallowedOrigins?: boolean;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const DEFAULT_METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE'];
const DEFAULT_ALLOWED_HEADERS = ['Content-Type', 'Authorization'];

function names(what: string): OptionSchema[string] {
  return {
    type: 'string[]',
    expected: `an array of ${what} names, e.g. ${what === 'method' ? '["GET", "POST"]' : '["Content-Type", "X-Request-Id"]'}`,
    check: (list: readonly string[]) => {
      if (list.includes('*')) return 'must list names explicitly; "*" is not accepted (browsers ignore it with credentials)';
      const bad = list.find((item) => !TOKEN.test(item));
      return bad === undefined ? undefined : `must contain header or method names, got ${JSON.stringify(bad)}`;
    },
  };
}

const OPTIONS: OptionSchema = {
  origins: {
    type: ['string', 'string[]'],
    required: true,
    aliases: ['origin'],
    expected: 'a list such as ["https://shop.example.test", "https://admin.example.test"], or "*"',
  },
  credentials: { type: 'boolean' },
  methods: names('method'),
  allowedHeaders: { ...names('header'), aliases: ['headers', 'allowHeaders'] },
  exposedHeaders: { ...names('header'), aliases: ['exposeHeaders'] },
  maxAgeSeconds: {
    type: 'integer',
    aliases: ['maxAge'],
    expected: 'a whole number of seconds from 0 to 86400',
    check: (seconds: number) => (seconds < 0 || seconds > 86_400 ? `must be from 0 to 86400, got ${seconds}` : undefined),
  },
  rejectDisallowedOrigins: { type: 'boolean' },
};

/** An attacker-chosen header value for a debug line: quoted and cut short. */
function quoted(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/**
 * Whether a request is a CORS preflight: `OPTIONS` with `Origin` and `Access-Control-Request-Method`, as the Fetch
 * standard sends it (and as {@link corsPreflight} answers it).
 *
 * @example
 * if (isCorsPreflight(req)) return next();
 */
export function isCorsPreflight(req: Pick<Request, 'method' | 'headers'>): boolean {
  return req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
}

/**
 * CORS for the apps of one parent domain, on the `cors` package with checks it lacks: origins are compiled and
 * validated once, a refused preflight (origin, method or a header not allowed) answers 403 problem+json without
 * CORS headers (a preflight answer outside 200–299 fails the Fetch standard's CORS-preflight fetch) instead of a
 * header-less 204, an allowed
 * one answers 204, and `Vary: Origin` is set on every answer so shared caches never mix them. Actual requests from
 * other origins pass without CORS headers (the browser then withholds the response), or get 403 with
 * `rejectDisallowedOrigins`. With `credentials`, list the exact origins that may read authenticated answers.
 *
 * @example
 * app.use('/api', corsPreflight({
 *   origins: ['https://shop.example.test', 'https://admin.example.test'],
 *   credentials: true,
 *   allowedHeaders: ['Content-Type', 'Authorization', 'X-Request-Id'],
 * }));
 */
export function corsPreflight(options: CorsPreflightOptions): RequestHandler {
  checkOptions('corsPreflight', options, OPTIONS);
  const { credentials = false, maxAgeSeconds = 600, rejectDisallowedOrigins = false } = options;
  const matcher = compileOrigins(options.origins);
  if (matcher.any && credentials) {
    throw new OptionsError(
      'corsPreflight: origins "*" cannot be combined with credentials: true; list the origins, e.g. ["https://shop.example.test"]',
    );
  }
  if (credentials) warnCredentialedBreadth(matcher);
  const methods = [...(options.methods ?? DEFAULT_METHODS)].map((method) => method.toUpperCase());
  const allowedHeaders = [...(options.allowedHeaders ?? DEFAULT_ALLOWED_HEADERS)];
  const exposedHeaders = [...(options.exposedHeaders ?? [])];
  const allowedMethodSet = new Set(methods);
  const allowedHeaderSet = new Set(allowedHeaders.map((name) => name.toLowerCase()));

  // The origin decision is ours; `cors` only writes the headers, so it reflects the (already allowed) origin.
  const shared = {
    origin: matcher.any ? '*' : true,
    credentials,
    methods,
    allowedHeaders,
    ...(exposedHeaders.length ? { exposedHeaders } : {}),
  };
  const answerPreflight = cors({ ...shared, maxAge: maxAgeSeconds, optionsSuccessStatus: 204 });
  // preflightContinue lets a plain OPTIONS request (no Access-Control-Request-Method) reach the app's routes.
  const decorateActual = cors({ ...shared, preflightContinue: true });

  const refuse = (detail: string) => new ForbiddenError({ code: 'cors_refused', detail });
  const originRefused = () => refuse('This origin may not make cross-origin requests here.');

  return function corsPreflightMiddleware(req: Request, res: Response, next: NextFunction): void {
    // Every answer depends on Origin, refused and non-CORS ones included, so caches must key on it.
    res.vary('Origin');
    const origin = req.headers.origin;
    const requestedMethod = req.headers['access-control-request-method'];
    if (origin === undefined || requestedMethod === undefined || !isCorsPreflight(req)) {
      if (origin === undefined) {
        next();
        return;
      }
      if (matcher.matches(origin)) {
        decorateActual(req, res, next);
        return;
      }
      debug(
        '%s %s from origin %s: not allowed, %s',
        req.method,
        redactPath(req.originalUrl),
        quoted(origin),
        rejectDisallowedOrigins ? '403' : 'no CORS headers',
      );
      next(rejectDisallowedOrigins ? originRefused() : undefined);
      return;
    }
    res.vary('Access-Control-Request-Method');
    res.vary('Access-Control-Request-Headers');
    if (!matcher.matches(origin)) {
      debug('refused preflight for %s: origin %s is not allowed', redactPath(req.originalUrl), quoted(origin));
      next(originRefused());
      return;
    }
    if (!allowedMethodSet.has(requestedMethod.toUpperCase())) {
      debug('refused preflight for %s from %s: method %s is not allowed', redactPath(req.originalUrl), origin, quoted(requestedMethod));
      const named = TOKEN.test(requestedMethod) && requestedMethod.length <= 20 ? requestedMethod : 'such';
      next(refuse(`Cross-origin ${named} requests are not allowed here.`));
      return;
    }
    const requestedHeaders = req.headers['access-control-request-headers'];
    const refusedHeader = requestedHeaders
      ?.split(',')
      .map((name) => name.trim().toLowerCase())
      .find((header) => header !== '' && !allowedHeaderSet.has(header));
    if (refusedHeader !== undefined) {
      debug('refused preflight for %s from %s: header %s is not allowed', redactPath(req.originalUrl), origin, quoted(refusedHeader));
      next(refuse('A requested header is not allowed in cross-origin requests here.'));
      return;
    }
    answerPreflight(req, res, next);
  };
}
