import type { Request } from 'express';
import { ForbiddenError, HttpError } from '../http/errors';
import { checkRequestOrigin, recordCsrfRefusal, type OriginRefusal } from '../session/csrf-guard';
import type { SsoRequestContext } from '../session/types';
import { debugChannel } from '../util/debug';
import { routedOrigin } from '../util/request-origin';

const debug = debugChannel('portal');

const REFUSALS: Record<OriginRefusal | 'no-host', string> = {
  'cross-site': 'This form was sent from another site.',
  'origin-not-allowed': 'This form was sent from another origin.',
  'referer-not-allowed': 'This form was sent from another origin.',
  'no-origin': 'The request names no origin, so it cannot be told apart from a forged one.',
  'no-host': 'The request names no usable host.',
};

/**
 * The shared-session context of the request; throws naming the middleware that must come first.
 *
 * @example
 * const sso = ssoContext(req);
 */
export function ssoContext(req: Request): SsoRequestContext {
  const sso = req.sso;
  if (!sso) {
    throw new HttpError(500, {
      code: 'middleware_order',
      detail: 'loginPortal: no shared session on this request; mount app.use(ssoSession({...})) before loginPortal',
    });
  }
  return sso;
}

/**
 * Refuses a POST from any origin but the portal's own (and the allowed ones), with or without a cookie: a forged
 * login would sign the victim into the attacker's account (login CSRF), and `csrfGuard` lets cookie-less requests
 * through. The portal's origin comes from the Host header it was routed by and the trusted protocol (`routedOrigin`),
 * never from `X-Forwarded-Host`.
 *
 * @example
 * requireSameOrigin(req, allowedOrigins);
 */
export function requireSameOrigin(req: Request, allowed: ReadonlySet<string>): void {
  const ownOrigin = routedOrigin(req);
  const refusal: OriginRefusal | 'no-host' | undefined =
    ownOrigin === undefined
      ? 'no-host'
      : checkRequestOrigin(
          {
            method: req.method,
            ownOrigin,
            origin: req.headers.origin,
            referer: req.headers.referer,
            secFetchSite: req.headers['sec-fetch-site'] as string | undefined,
          },
          allowed,
        );
  if (refusal === undefined) return;
  recordCsrfRefusal(req, refusal, 'loginPortal');
  debug('refused %s %s: %s (origin %s)', req.method, req.path, refusal, req.headers.origin ?? 'none');
  throw new ForbiddenError({ code: 'csrf_origin', detail: REFUSALS[refusal] });
}

/**
 * The request's `return_to` when the session's redirect policy accepts it, sanitized; '' when absent or unsafe
 * (then the policy's default applies after login).
 *
 * @example
 * const returnTo = safeReturnTo(req, req.query.return_to);
 */
export function safeReturnTo(req: Request, raw: unknown): string {
  const { redirects } = ssoContext(req);
  if (typeof raw !== 'string' || raw === '') return '';
  if (redirects.isSafe(raw)) return redirects.sanitize(raw);
  debug('dropped an unsafe return_to');
  return '';
}

/**
 * A form field that is one string (`a=1&a=2` gives an array, which no field of the portal accepts).
 *
 * @example
 * const username = oneString(req.body.username) ?? '';
 */
export function oneString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
