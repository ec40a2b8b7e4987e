import type { Request } from 'express';
import { OptionsError } from '../util/options';
import type { SecurityEvents } from './security-events';

// The events of the kit middleware that refused a request, for the error handler that renders the refusal.
const refusedBy = new WeakMap<Request, SecurityEvents>();

/**
 * Checks a factory's `events` option: the object `securityEvents()` returned, or undefined.
 *
 * @example
 * const events = eventsOption('requireBearer', options.events);
 */
export function eventsOption(factory: string, value: unknown): SecurityEvents | undefined {
  if (value === undefined) return undefined;
  const candidate = value as Partial<SecurityEvents> | null;
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.emit !== 'function' ||
    typeof candidate.flush !== 'function'
  ) {
    throw new OptionsError(`${factory}: events must be the object securityEvents() returns`);
  }
  return candidate as SecurityEvents;
}

/** The spec of an `events` option, for a factory's option schema. */
export const EVENTS_OPTION = { type: 'object', expected: 'the object securityEvents() returns' } as const;

/**
 * The events a request's decisions go to: the factory's own, else those of the shared session (`ssoSession({
 * events })` puts them on `req.sso`, so every middleware after it finds them), else those of the kit middleware
 * that refused the request (for the error handler). Read only when something is emitted.
 *
 * @example
 * eventsFor(req, own)?.emit('csrf.refused', { reason: 'cross_site', guard: 'csrfGuard' }, req);
 */
export function eventsFor(req: Request, own?: SecurityEvents): SecurityEvents | undefined {
  return own ?? (req.sso as { events?: SecurityEvents } | undefined)?.events ?? refusedBy.get(req);
}

/**
 * Leaves the events of a middleware that refused a request on it, so the error handler mounted after it records
 * the answer (a 503, a 500) in the same events without its own `events` option.
 *
 * @example
 * rememberEvents(req, events);
 * next(error);
 */
export function rememberEvents(req: Request, events: SecurityEvents | undefined): void {
  if (events !== undefined) refusedBy.set(req, events);
}
