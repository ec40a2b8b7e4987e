import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ForbiddenError } from '../http/errors';

/** Options of {@link csrfGuard} (and of `requireSession`'s `csrf`). */
export interface CsrfGuardOptions {
  /**
   * Exact origins, besides the request's own, whose pages may send state-changing requests, e.g. a sibling app
   * `https://admin.example.test`. Sibling subdomains are not trusted unless listed. Default none.
   */
  allowedOrigins?: readonly string[];
}

/** The request facts the origin check reads. */
export interface OriginFacts {
  method: string;
  /** The request's own origin, `https://shop.example.test`, built from the trusted protocol and host. */
  ownOrigin: string;
  origin: string | undefined;
  referer: string | undefined;
  secFetchSite: string | undefined;
}

/** Why {@link checkRequestOrigin} refused, or `undefined` when the request may proceed. */
export type OriginRefusal = 'cross-site' | 'origin-not-allowed' | 'referer-not-allowed' | 'no-origin';

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

function refererOrigin(referer: string): string | undefined {
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}

/**
 * The pure CSRF decision: safe methods pass; a state-changing request passes only when its `Origin` (or, lacking
 * one, its `Referer`'s origin) is its own origin or an allowed one, and the browser does not call it cross-site.
 * Without either header it is refused: every current browser sends `Origin` on cross-origin and on same-origin
 * state-changing fetches, so its absence means an old or stripped client that cannot be told apart from a forgery.
 *
 * @example
 * checkRequestOrigin({ method: 'POST', ownOrigin: 'https://shop.example.test', origin: 'https://evil.test',
 *   referer: undefined, secFetchSite: 'cross-site' }, new Set()); // 'cross-site'
 */
export function checkRequestOrigin(facts: OriginFacts, allowed: ReadonlySet<string>): OriginRefusal | undefined {
  if (SAFE_METHODS.has(facts.method)) return undefined;
  if (facts.secFetchSite === 'cross-site') return 'cross-site';
  if (facts.origin !== undefined) {
    return facts.origin === facts.ownOrigin || allowed.has(facts.origin) ? undefined : 'origin-not-allowed';
  }
  if (facts.referer !== undefined) {
    const origin = refererOrigin(facts.referer);
    return origin !== undefined && (origin === facts.ownOrigin || allowed.has(origin)) ? undefined : 'referer-not-allowed';
  }
  return 'no-origin';
}

/**
 * Validates and normalizes the allowed origins of a CSRF check, throwing a `TypeError` that names the caller.
 *
 * @example
 * const allowed = compileAllowedOrigins(['https://admin.example.test'], 'csrfGuard');
 */
export function compileAllowedOrigins(origins: unknown, caller: string): ReadonlySet<string> {
  if (origins === undefined) return new Set();
  if (!Array.isArray(origins))
    throw new TypeError(`${caller}: allowedOrigins must be an array of origins like "https://admin.example.test"`);
  return new Set(
    origins.map((origin: unknown) => {
      let parsed: URL | undefined;
      try {
        parsed = typeof origin === 'string' ? new URL(origin) : undefined;
      } catch {
        parsed = undefined;
      }
      const exact = parsed !== undefined && /^https?:$/.test(parsed.protocol) && /^[a-z0-9.-]+$/.test(parsed.hostname);
      if (!parsed || !exact || parsed.origin !== String(origin).toLowerCase().replace(/\/$/, '')) {
        throw new TypeError(
          `${caller}: allowedOrigins must list full origins like "https://admin.example.test" (no path, no wildcard), got ${JSON.stringify(origin)}`,
        );
      }
      return parsed.origin;
    }),
  );
}

const DETAILS: Record<OriginRefusal, string> = {
  'cross-site': 'The browser reports this request as cross-site; state-changing requests must come from this site.',
  'origin-not-allowed': 'The page that sent this request is not allowed to change data here.',
  'referer-not-allowed': 'The page that sent this request is not allowed to change data here.',
  'no-origin': 'A state-changing request must carry an Origin or Referer header.',
};

/**
 * Runs the origin check on an Express request; returns the 403 to pass on, or undefined.
 *
 * @example
 * const refusal = csrfRefusal(req, allowed);
 * if (refusal) return next(refusal);
 */
export function csrfRefusal(req: Request, allowed: ReadonlySet<string>): ForbiddenError | undefined {
  const refusal = checkRequestOrigin(
    {
      method: req.method,
      ownOrigin: `${req.protocol}://${req.host.toLowerCase()}`,
      origin: req.headers.origin,
      referer: req.headers.referer,
      secFetchSite: req.headers['sec-fetch-site'] as string | undefined,
    },
    allowed,
  );
  return refusal === undefined ? undefined : new ForbiddenError({ code: 'csrf_origin', detail: DETAILS[refusal] });
}

/**
 * Refuses cross-site state-changing requests that ride on cookies: a POST, PUT, PATCH or DELETE carrying a
 * `Cookie` header gets 403 (`csrf_origin`) unless it comes from the request's own origin or an allowed one.
 * Requests without cookies carry no ambient authority and pass. `requireSession` applies this check itself.
 *
 * @example
 * app.use(csrfGuard({ allowedOrigins: ['https://admin.example.test'] }));
 */
export function csrfGuard(options: CsrfGuardOptions = {}): RequestHandler {
  if (arguments.length === 3 || (typeof options === 'object' && options !== null && 'socket' in options)) {
    throw new TypeError('csrfGuard: it is a factory: write app.use(csrfGuard()), not app.use(csrfGuard)');
  }
  if (options === null || typeof options !== 'object')
    throw new TypeError('csrfGuard: options must be an object, e.g. { allowedOrigins: [...] }');
  const allowed = compileAllowedOrigins(options.allowedOrigins, 'csrfGuard');
  return function csrfGuardMiddleware(req: Request, _res: Response, next: NextFunction): void {
    if (SAFE_METHODS.has(req.method) || req.headers.cookie === undefined) {
      next();
      return;
    }
    next(csrfRefusal(req, allowed));
  };
}
