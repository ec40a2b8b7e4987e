import type { Request } from 'express';
import { redactPath, routePattern } from '../http/log-redaction';
import { eventsFor } from './event-source';
import type { SecurityEventReason } from './vocabulary';

/** What an access refusal names besides its reason. */
export interface AccessDeniedFacts {
  /** The access rule that decided (`rules[2]`, `default`). */
  rule?: string;
  /** The permission that was missing (`delete reports:42`). */
  permission?: string;
}

/**
 * The route of a refused request as events name it: the mount path and the pattern of the route that refused it
 * (`/admin/reports/:id`), else the path with every segment that may be a credential redacted; never a query.
 *
 * @example
 * routeOf(req); // '/reports/:id'
 */
export function routeOf(req: Request): string {
  const pattern = routePattern(req);
  return pattern === undefined ? redactPath(`${req.baseUrl ?? ''}${req.path ?? ''}`) : `${req.baseUrl ?? ''}${pattern}`;
}

/**
 * Records an `access.denied` event in the request's events (those of `ssoSession`), if any: free without events.
 *
 * @example
 * recordAccessDenied(req, 'permission_denied', { permission: 'delete reports:42' });
 */
export function recordAccessDenied(req: Request, reason: SecurityEventReason<'access.denied'>, facts: AccessDeniedFacts = {}): void {
  eventsFor(req)?.emit('access.denied', { reason, route: routeOf(req), ...facts }, req);
}
