import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { checkOptions } from '../util/options';
import { eventsOption } from './event-source';
import type { SecurityEvents } from './security-events';

/** Options of {@link metricsHandler}. */
export interface MetricsHandlerOptions {
  /** The security events whose metrics (the prom-client registry of `events.metrics`) are served. */
  events: SecurityEvents;
}

/**
 * Serves the Prometheus metrics of `securityEvents` (prom-client's text exposition format) for a scraper: event
 * counters by type, outcome and reason, login and token-verification latency, session cache hits, throttle
 * refusals, JWKS refreshes, store errors and lost events. The counts say how often people sign in and fail:
 * mount it on an internal port or behind `requireBasic`, not on the public site.
 *
 * @example
 * internal.get('/metrics', metricsHandler({ events }));
 */
export function metricsHandler(options: MetricsHandlerOptions): RequestHandler {
  checkOptions('metricsHandler', options, { events: { type: 'object', required: true, expected: 'the object securityEvents() returns' } });
  const events = eventsOption('metricsHandler', options.events) as SecurityEvents;
  const { registry } = events.metrics;
  return function metricsEndpoint(_req: Request, res: Response, next: NextFunction): void {
    registry.metrics().then((text) => {
      res.setHeader('Content-Type', registry.contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.send(text);
    }, next);
  };
}
