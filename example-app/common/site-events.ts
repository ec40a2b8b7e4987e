/**
 * The security events of one demo site: JSON lines on stderr named after the site (the launcher prefixes them with
 * `[shop ]` too) and, on Redis, the stream the portal's "Recent security activity" page reads. Each site serves
 * its Prometheus metrics at `/metrics` on its own port, for a local scrape; never through the front door.
 */
import type { NextFunction, Request, Response } from 'express';
import {
  metricsHandler,
  pinoSink,
  RedisStore,
  redisStreamSink,
  securityEvents,
  type KeyValueStore,
  type SecurityEvents,
} from 'express-sso-kit';
import { secretFor, type DemoConfig, type SiteName } from './config';

/**
 * One site's events: stderr always, the Redis stream when the store is Redis.
 *
 * @example
 * const events = siteEvents('shop', config, store);
 */
export function siteEvents(site: SiteName, config: DemoConfig, store: KeyValueStore): SecurityEvents {
  return securityEvents({
    app: site,
    // The same key on every site, so attempts on one account hash alike wherever they were made.
    usernameHashKey: secretFor(config, 'events-username-hash'),
    sinks: [pinoSink({ name: site }), ...(store instanceof RedisStore ? [redisStreamSink({ store })] : [])],
  });
}

/**
 * `GET /metrics` for a scraper on the site's own port. A request through the front door (or Caddy) carries
 * `X-Forwarded-For` and gets a 404: the counts are for the operator, not for visitors.
 *
 * @example
 * root.get('/metrics', localMetrics(events));
 */
export function localMetrics(events: SecurityEvents) {
  const serve = metricsHandler({ events });
  return function demoMetrics(req: Request, res: Response, next: NextFunction): void {
    if (req.headers['x-forwarded-for'] !== undefined) {
      next();
      return;
    }
    serve(req, res, next);
  };
}
