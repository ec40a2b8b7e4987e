import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { EVENTS_OPTION, eventsFor, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { ForbiddenError } from '../http/errors';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError } from '../util/options';
import { routedOrigin } from '../util/request-origin';

/** Options of {@link csrfGuard}. */
export interface CsrfGuardOptions {
  /**
   * Exact origins, besides the request's own, whose pages may send state-changing requests, e.g. a sibling app
   * `https://admin.example.test`. Sibling subdomains are not trusted unless listed. Default none.
   */
  allowedOrigins?: readonly string[];
  /** Where refusals are recorded (`csrf.refused`). Default the events of `ssoSession`, when it ran before. */
  events?: SecurityEvents;
}

/** The request facts the origin check reads. */
export interface OriginFacts {
  method: string;
  /** The request's own origin, `https://shop.example.test`, from the trusted protocol and the routed host; undefined without a usable Host. */
  ownOrigin: string | undefined;
  origin: string | undefined;
  referer: string | undefined;
  secFetchSite: string | undefined;
}

/** Why {@link checkRequestOrigin} refused, or `undefined` when the request may proceed. */
export type OriginRefusal = 'cross-site' | 'no-host' | 'origin-not-allowed' | 'referer-not-allowed' | 'no-origin';

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
const debug = debugChannel('csrf');

/**
 * True for GET, HEAD and OPTIONS, the methods that must not change state (RFC 9110 §9.2.1) and so never need the
 * origin check.
 *
 * @example
 * isSafeMethod('POST'); // false
 */
export function isSafeMethod(method: string): boolean {
  return SAFE_METHODS.has(method);
}

function originOfUrl(url: string): string | undefined {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/**
 * The pure CSRF decision: safe methods pass; a state-changing request passes only when the browser does not call
 * it cross-site (`Sec-Fetch-Site`, Fetch Metadata) and its `Origin` (or, lacking one, its `Referer`'s origin) is
 * its own origin or an allowed one. `Origin: null` (sandboxed frames, `data:` pages, `no-referrer` pages) is
 * refused, and so is a request with neither header: every current browser sends `Origin` on state-changing
 * requests, so its absence means a client that cannot be told apart from a forgery.
 *
 * @example
 * checkRequestOrigin({ method: 'POST', ownOrigin: 'https://shop.example.test', origin: 'https://evil.test',
 *   referer: undefined, secFetchSite: 'cross-site' }, new Set()); // 'cross-site'
 */
export function checkRequestOrigin(facts: OriginFacts, allowed: ReadonlySet<string>): OriginRefusal | undefined {
  if (SAFE_METHODS.has(facts.method)) return undefined;
  // Joined duplicates ("same-origin, cross-site") count as cross-site too.
  if (facts.secFetchSite !== undefined && facts.secFetchSite.includes('cross-site')) return 'cross-site';
  if (facts.ownOrigin === undefined) return 'no-host';
  if (facts.origin !== undefined) {
    // `null` never equals an origin: compileAllowedOrigins accepts only tuple origins.
    return facts.origin === facts.ownOrigin || allowed.has(facts.origin) ? undefined : 'origin-not-allowed';
  }
  if (facts.referer !== undefined) {
    const origin = originOfUrl(facts.referer);
    return origin !== undefined && (origin === facts.ownOrigin || allowed.has(origin)) ? undefined : 'referer-not-allowed';
  }
  return 'no-origin';
}

/**
 * Validates and normalizes the allowed origins of a CSRF check, throwing an `OptionsError` that names the caller.
 * `allowHttp: false` also refuses `http:` origins (for checks that guard a Secure cookie).
 *
 * @example
 * const allowed = compileAllowedOrigins(['https://admin.example.test'], 'csrfGuard');
 */
export function compileAllowedOrigins(origins: unknown, caller: string, { allowHttp = true } = {}): ReadonlySet<string> {
  if (origins === undefined) return new Set();
  if (!Array.isArray(origins))
    throw new OptionsError(`${caller}: allowedOrigins must be an array of origins like "https://admin.example.test"`);
  return new Set(
    origins.map((origin: unknown) => {
      let parsed: URL | undefined;
      try {
        parsed = typeof origin === 'string' ? new URL(origin) : undefined;
      } catch {
        parsed = undefined;
      }
      const exact = parsed !== undefined && /^https?:$/.test(parsed.protocol) && /^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/.test(parsed.hostname);
      if (!parsed || !exact || parsed.origin !== String(origin).toLowerCase().replace(/\/$/, '')) {
        throw new OptionsError(
          `${caller}: allowedOrigins must list full origins like "https://admin.example.test" (no path, no wildcard), got ${JSON.stringify(origin)}`,
        );
      }
      if (!allowHttp && parsed.protocol === 'http:') {
        throw new OptionsError(
          `${caller}: allowedOrigins must use https (a plain-http page could be changed in transit), got ${JSON.stringify(origin)}; http only with allowInsecureLocalDevelopment`,
        );
      }
      return parsed.origin;
    }),
  );
}

/**
 * The facts {@link checkRequestOrigin} reads, taken from an Express request. The own origin comes from the Host
 * header the request was routed by, with its port, the same on Express 4 and 5; never from `X-Forwarded-Host`, which
 * a client can send through a proxy that passes it on.
 *
 * @example
 * checkRequestOrigin(originFactsOf(req), allowed);
 */
export function originFactsOf(req: Request): OriginFacts {
  const fetchSite = req.headers['sec-fetch-site'];
  return {
    method: req.method,
    ownOrigin: routedOrigin(req),
    origin: req.headers.origin,
    referer: req.headers.referer,
    secFetchSite: Array.isArray(fetchSite) ? fetchSite.join(', ') : fetchSite,
  };
}

const DETAILS: Record<OriginRefusal, string> = {
  'cross-site': 'The browser reports this request as cross-site; state-changing requests must come from this site.',
  'no-host': 'The request names no usable Host, so its origin cannot be checked.',
  'origin-not-allowed': 'The page that sent this request is not allowed to change data here.',
  'referer-not-allowed': 'The page that sent this request is not allowed to change data here.',
  'no-origin': 'A state-changing request must carry an Origin or Referer header.',
};

const EVENT_REASONS = {
  'cross-site': 'cross_site',
  'no-host': 'no_host',
  'origin-not-allowed': 'origin_not_allowed',
  'referer-not-allowed': 'referer_not_allowed',
  'no-origin': 'no_origin',
} as const satisfies Record<OriginRefusal, string>;

/**
 * Records a refusal of {@link checkRequestOrigin} as a `csrf.refused` event, in `events` or else the session's.
 *
 * @example
 * recordCsrfRefusal(req, 'cross-site', 'loginPortal');
 */
export function recordCsrfRefusal(req: Request, refusal: OriginRefusal, guard: string, events?: SecurityEvents): void {
  eventsFor(req, events)?.emit('csrf.refused', { reason: EVENT_REASONS[refusal], guard }, req);
}

/**
 * The 403 (`csrf_origin`) for a refusal of {@link checkRequestOrigin}, recorded as a `csrf.refused` event (in
 * `events`, else the session's) and said on the `csrf` debug channel with the reason and the sending origin (never
 * a path, query or cookie).
 *
 * @example
 * next(csrfError('cross-site', req, 'ssoSession'));
 */
export function csrfError(refusal: OriginRefusal, req: Request, guard: string, events?: SecurityEvents): ForbiddenError {
  recordCsrfRefusal(req, refusal, guard, events);
  if (debug.enabled) {
    const from =
      req.headers.origin ?? (req.headers.referer === undefined ? 'none' : `referer ${originOfUrl(req.headers.referer) ?? 'unparsable'}`);
    debug('%s refused %s: %s (from %s, Sec-Fetch-Site %s)', guard, req.method, refusal, from, req.headers['sec-fetch-site'] ?? 'absent');
  }
  return new ForbiddenError({ code: 'csrf_origin', detail: DETAILS[refusal] });
}

/**
 * Runs the origin check on an Express request; returns the 403 to pass on, or undefined.
 *
 * @example
 * const refusal = csrfRefusal(req, allowed);
 * if (refusal) return next(refusal);
 */
export function csrfRefusal(
  req: Request,
  allowed: ReadonlySet<string>,
  guard = 'csrf check',
  events?: SecurityEvents,
): ForbiddenError | undefined {
  const refusal = checkRequestOrigin(originFactsOf(req), allowed);
  return refusal === undefined ? undefined : csrfError(refusal, req, guard, events);
}

/**
 * Refuses cross-site state-changing requests that ride on the app's **own** cookies: a request other than GET,
 * HEAD or OPTIONS that carries a `Cookie` header gets 403 (`csrf_origin`) unless it comes from the request's own
 * origin or an allowed one. Requests without cookies carry no ambient authority and pass. Not needed for the
 * kit's shared session: `ssoSession` enforces the same rule on every request its cookie authenticates.
 *
 * @example
 * app.use(csrfGuard({ allowedOrigins: ['https://admin.example.test'] }));
 */
export function csrfGuard(options: CsrfGuardOptions = {}): RequestHandler {
  checkOptions('csrfGuard', options, {
    allowedOrigins: { type: 'string[]', expected: 'an array of origins like "https://admin.example.test"' },
    events: EVENTS_OPTION,
  });
  const allowed = compileAllowedOrigins(options.allowedOrigins, 'csrfGuard');
  const events = eventsOption('csrfGuard', options.events);
  return function csrfGuardMiddleware(req: Request, _res: Response, next: NextFunction): void {
    if (SAFE_METHODS.has(req.method) || req.headers.cookie === undefined) {
      next();
      return;
    }
    next(csrfRefusal(req, allowed, 'csrfGuard', events));
  };
}
