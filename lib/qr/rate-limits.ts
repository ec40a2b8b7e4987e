import type { Request, RequestHandler } from 'express';
import { eventsFor } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { TooManyRequestsError } from '../http/errors';
import { KeyValueRateLimitStore } from '../http/rate-limit-store';
import type { KeyValueStore } from '../store/port';
import type { RegisteredQrApp } from './app-registry';
import type { QrRateLimits } from './provider-options';

/** The provider's two limiters; both let everything through when limiting is off. */
export interface QrRateLimiters {
  /** QR login requests per client IP (an IPv6 /56). */
  qrconnect: RequestHandler;
  /** Token, refresh and userinfo calls per appid (per client IP without a known appid). */
  token: RequestHandler;
}

const noLimit: RequestHandler = function noRateLimit(_req, _res, next) {
  next();
};

/**
 * Builds the provider's limiters over the kit's store, so the counts hold across instances. A store outage is
 * passed on as an error (503), never as "allowed".
 *
 * @example
 * const limiters = createRateLimiters(store, apps, { qrconnectPerMinute: 30, tokenPerMinute: 600 });
 * router.get('/sns/oauth2/qrconnect', limiters.qrconnect, qrConnect);
 */
export function createRateLimiters(
  store: KeyValueStore,
  apps: ReadonlyMap<string, RegisteredQrApp>,
  limits: Required<QrRateLimits> | undefined,
  events?: SecurityEvents,
): QrRateLimiters {
  const throttled = (req: Request, reason: 'qr_requests' | 'qr_tokens', retryAfterSeconds: number) =>
    eventsFor(req, events)?.emit('request.throttled', { reason, method: 'qr', retryAfterSeconds }, req);
  if (!limits) return { qrconnect: noLimit, token: noLimit };
  const qrconnect = rateLimit({
    windowMs: 60_000,
    limit: limits.qrconnectPerMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    store: new KeyValueRateLimitStore({ store, prefix: 'rl:qrconnect:' }),
    keyGenerator: (req) => ipKeyGenerator(req.ip ?? 'unknown'),
    handler: (req, _res, next, used) => {
      throttled(req, 'qr_requests', used.windowMs / 1000);
      next(new TooManyRequestsError(used.windowMs / 1000, { detail: 'Too many QR codes requested. Wait a minute.' }));
    },
  });
  const token = rateLimit({
    windowMs: 60_000,
    limit: limits.tokenPerMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    store: new KeyValueRateLimitStore({ store, prefix: 'rl:qrtoken:' }),
    // Per appid where one is given, so one app's burst cannot starve another; otherwise per client IP.
    keyGenerator: (req) => {
      const source = (req.method === 'GET' ? req.query : req.body) as Record<string, unknown> | undefined;
      const appid = source?.appid;
      return typeof appid === 'string' && apps.has(appid) ? `app:${appid}` : `ip:${ipKeyGenerator(req.ip ?? 'unknown')}`;
    },
    handler: (req, _res, next, used) => {
      throttled(req, 'qr_tokens', used.windowMs / 1000);
      next(new TooManyRequestsError(used.windowMs / 1000));
    },
  });
  return { qrconnect, token };
}
