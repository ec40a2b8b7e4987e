import { createHmac, type KeyObject } from 'node:crypto';
import type { RequestFacts } from './request-facts';
import { SECURITY_EVENT_TYPES, type SecurityEventOutcome, type SecurityEventType } from './vocabulary';

/** A value an event field may hold. */
export type SecurityEventValue = string | number | boolean | readonly string[];

/**
 * One recorded security event. The common fields are listed; the type's own fields (see `SecurityEventFields`)
 * sit beside them. Nothing in it is a password, code, token, cookie, secret or session id, and every string has its
 * control characters escaped.
 */
export interface SecurityEvent {
  /** ISO-8601 UTC, milliseconds. */
  readonly time: string;
  readonly type: SecurityEventType;
  readonly outcome: SecurityEventOutcome;
  readonly reason: string;
  /** The request's id (see `requestIdOf`); absent only for events no request caused (a session found expired). */
  readonly requestId?: string;
  /** The `app` of `securityEvents`. */
  readonly app?: string;
  /** The host the request asked for. */
  readonly host?: string;
  /** `<source>|<subject>` of the user concerned, when known. */
  readonly userId?: string;
  /** A keyed hash of the username a sign-in attempt typed (never the username itself). */
  readonly usernameHash?: string;
  /** The client's network: an IPv4 address as `/32`, an IPv6 /64. */
  readonly network?: string;
  /** `Chrome 131 on Linux`: a summary, never the raw header. */
  readonly userAgent?: string;
  /** The public handle of the session concerned (the session id is never recorded). */
  readonly sessionHandle?: string;
  readonly clientId?: string;
  readonly actorId?: string;
  readonly [field: string]: SecurityEventValue | undefined;
}

/** What the builder needs besides the emitter's input. */
export interface EventContext {
  now: number;
  app: string | undefined;
  facts: RequestFacts | undefined;
  usernameKey: KeyObject;
}

// The fields an event may carry: the common facts and every type's own. Anything else an emitter passes is
// dropped, so no free-form member can carry a secret into a log.
export const EVENT_FIELDS: ReadonlySet<string> = new Set([
  'userId',
  'sessionHandle',
  'clientId',
  'actorId',
  'method',
  'provider',
  'factors',
  'retryAfterSeconds',
  'factor',
  'acr',
  'remaining',
  'kind',
  'previousSessionHandle',
  'count',
  'guard',
  'route',
  'rule',
  'permission',
  'realm',
  'grantType',
  'scopes',
  'status',
  'code',
  'errorName',
  'httpMethod',
  'path',
]);
const MAX_TEXT = 256;
const MAX_LIST = 32;
// C0 and C1 controls, DEL, and the two Unicode line separators a log viewer would break a line at (ASVS 16.4.1).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * Text safe for a log line: control characters written as `\uXXXX` escapes, cut to `max` characters.
 *
 * @example
 * printable('alice\r\nadmin logged in'); // 'alice\\u000d\\u000aadmin logged in'
 */
export function printable(text: string, max = MAX_TEXT): string {
  const cut = text.length > max ? `${text.slice(0, max - 1)}…` : text;
  return cut.replace(CONTROL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function cleanValue(value: unknown): SecurityEventValue | undefined {
  if (typeof value === 'string') return printable(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.slice(0, MAX_LIST).map((item) => printable(String(item), 64));
  return undefined;
}

/**
 * A keyed hash of a username (case and Unicode form folded), so attempts on one account can be counted and
 * correlated across events without the events naming it.
 *
 * @example
 * hashUsername(key, 'Alice'); // 'q3v0c1X9kTQ2mZp8s7RbA4'
 */
export function hashUsername(key: KeyObject, username: string): string {
  return createHmac('sha256', key).update(username.normalize('NFKC').toLowerCase()).digest('base64url').slice(0, 22);
}

/**
 * Builds one event: the time, the type's outcome, the reason, the request's facts, the emitter's fields (only those
 * of the vocabulary), the username as a keyed hash. Pure apart from the HMAC; never throws on odd input.
 *
 * @example
 * const event = buildEvent('csrf.refused', { reason: 'cross_site', guard: 'ssoSession' }, context);
 */
export function buildEvent(type: SecurityEventType, input: Record<string, unknown>, context: EventContext): SecurityEvent {
  const { facts } = context;
  const event: Record<string, SecurityEventValue> = {
    time: new Date(context.now).toISOString(),
    type,
    outcome: SECURITY_EVENT_TYPES[type].outcome,
    reason: typeof input.reason === 'string' ? printable(input.reason, 64) : 'other',
  };
  if (facts !== undefined) event.requestId = printable(facts.requestId, 128);
  if (context.app !== undefined) event.app = context.app;
  if (facts?.host !== undefined) event.host = facts.host;
  for (const [name, value] of Object.entries(input)) {
    if (!EVENT_FIELDS.has(name)) continue;
    const clean = cleanValue(value);
    if (clean !== undefined) event[name] = clean;
  }
  if (typeof input.username === 'string' && input.username !== '') event.usernameHash = hashUsername(context.usernameKey, input.username);
  if (facts !== undefined) {
    // The request's session belongs to the event only when the event is about the request's own user (an
    // administrator ending someone's sessions is not ending them from that person's session).
    const ownUser = event.userId === undefined || event.userId === facts.userId;
    if (event.userId === undefined && facts.userId !== undefined) event.userId = printable(facts.userId);
    if (event.sessionHandle === undefined && facts.sessionHandle !== undefined && ownUser) event.sessionHandle = facts.sessionHandle;
    if (facts.network !== undefined) event.network = facts.network;
    if (facts.userAgent !== undefined) event.userAgent = printable(facts.userAgent, 128);
  }
  return event as unknown as SecurityEvent;
}
