import cors from 'cors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ForbiddenError } from '../http/errors';
import { compileOrigins } from './origin-matcher';

/** Options of {@link corsPreflight}. */
export interface CorsPreflightOptions {
  /**
   * Origins allowed to read responses: exact origins (`https://shop.example.test`) and parent-domain patterns
   * (`https://*.example.test`, one or more labels before the parent; an explicit port only if written), or `'*'`
   * for every origin (never together with `credentials`). Required.
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

const OPTION_KEYS = new Set([
  'origins',
  'credentials',
  'methods',
  'allowedHeaders',
  'exposedHeaders',
  'maxAgeSeconds',
  'rejectDisallowedOrigins',
]);
const RENAMED: Record<string, string> = {
  origin: 'origins',
  maxAge: 'maxAgeSeconds',
  headers: 'allowedHeaders',
  allowHeaders: 'allowedHeaders',
  exposeHeaders: 'exposedHeaders',
};
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const DEFAULT_METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE'];
const DEFAULT_ALLOWED_HEADERS = ['Content-Type', 'Authorization'];

function looksLikeRequest(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'headers' in value && 'method' in value;
}

function tokenList(name: string, value: unknown, fallback: readonly string[]): string[] {
  if (value === undefined) return [...fallback];
  if (!Array.isArray(value)) throw new TypeError(`corsPreflight: ${name} must be an array of names, e.g. ["Content-Type", "X-Request-Id"]`);
  for (const item of value) {
    if (item === '*')
      throw new TypeError(`corsPreflight: ${name} must list names explicitly; "*" is not accepted (browsers ignore it with credentials)`);
    if (typeof item !== 'string' || !TOKEN.test(item))
      throw new TypeError(`corsPreflight: ${name} must contain header or method names, got ${JSON.stringify(item)}`);
  }
  return [...value];
}

/**
 * CORS for the apps of one parent domain, on the `cors` package with checks it lacks: origins are compiled and
 * validated once, a refused preflight (origin, method or a header not allowed) answers 403 problem+json without
 * CORS headers (spec §4.9) instead of a header-less 204, an allowed one answers 204, and `Vary: Origin` is set on
 * every answer so shared caches never mix them. Actual requests from other origins pass without CORS headers
 * (the browser then withholds the response), or get 403 with `rejectDisallowedOrigins`.
 *
 * @example
 * app.use('/api', corsPreflight({
 *   origins: ['https://*.example.test'],
 *   credentials: true,
 *   allowedHeaders: ['Content-Type', 'Authorization', 'X-Request-Id'],
 * }));
 */
export function corsPreflight(options: CorsPreflightOptions): RequestHandler {
  if (looksLikeRequest(options)) {
    throw new TypeError(
      "corsPreflight: it was mounted as middleware itself; call it: app.use(corsPreflight({ origins: ['https://*.example.test'] }))",
    );
  }
  if (options === null || typeof options !== 'object')
    throw new TypeError("corsPreflight: pass options, e.g. { origins: ['https://shop.example.test'] }");
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      const hint = RENAMED[key] ? `; use "${RENAMED[key]}"` : `; known options are ${[...OPTION_KEYS].join(', ')}`;
      throw new TypeError(`corsPreflight: unknown option "${key}"${hint}`);
    }
  }
  const { credentials = false, maxAgeSeconds = 600, rejectDisallowedOrigins = false } = options;
  if (typeof credentials !== 'boolean') throw new TypeError('corsPreflight: credentials must be true or false');
  if (typeof rejectDisallowedOrigins !== 'boolean') throw new TypeError('corsPreflight: rejectDisallowedOrigins must be true or false');
  if (!Number.isInteger(maxAgeSeconds) || maxAgeSeconds < 0)
    throw new TypeError(`corsPreflight: maxAgeSeconds must be a whole number of seconds ≥ 0, got ${String(maxAgeSeconds)}`);
  const matcher = compileOrigins(options.origins);
  if (matcher.any && credentials) {
    throw new TypeError(
      'corsPreflight: origins "*" cannot be combined with credentials: true; list the origins, e.g. ["https://*.example.test"]',
    );
  }
  const methods = tokenList('methods', options.methods, DEFAULT_METHODS).map((method) => method.toUpperCase());
  const allowedHeaders = tokenList('allowedHeaders', options.allowedHeaders, DEFAULT_ALLOWED_HEADERS);
  const exposedHeaders = tokenList('exposedHeaders', options.exposedHeaders, []);
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

  return function corsPreflightMiddleware(req: Request, res: Response, next: NextFunction): void {
    // Every answer depends on Origin, refused and non-CORS ones included, so caches must key on it.
    res.vary('Origin');
    const origin = req.headers.origin;
    const requestedMethod = req.headers['access-control-request-method'];
    const isPreflight = req.method === 'OPTIONS' && origin !== undefined && requestedMethod !== undefined;
    if (!isPreflight) {
      if (origin === undefined) {
        next();
        return;
      }
      if (matcher.matches(origin)) {
        decorateActual(req, res, next);
        return;
      }
      next(rejectDisallowedOrigins ? refuse('This origin may not make cross-origin requests here.') : undefined);
      return;
    }
    res.vary('Access-Control-Request-Method');
    res.vary('Access-Control-Request-Headers');
    if (!matcher.matches(origin)) {
      next(refuse('This origin may not make cross-origin requests here.'));
      return;
    }
    if (!allowedMethodSet.has(requestedMethod.toUpperCase())) {
      next(
        refuse(
          `Cross-origin ${TOKEN.test(requestedMethod) && requestedMethod.length <= 20 ? requestedMethod : 'such'} requests are not allowed here.`,
        ),
      );
      return;
    }
    const requestedHeaders = req.headers['access-control-request-headers'];
    if (requestedHeaders) {
      for (const name of requestedHeaders.split(',')) {
        const header = name.trim().toLowerCase();
        if (header !== '' && !allowedHeaderSet.has(header)) {
          next(refuse('A requested header is not allowed in cross-origin requests here.'));
          return;
        }
      }
    }
    answerPreflight(req, res, next);
  };
}
