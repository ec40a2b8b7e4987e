import { securityEvents, type SecurityEvent, type SecurityEvents, type SecurityEventsOptions, type SecurityEventType } from '../../lib';

/** Security events recorded through a function sink, for asserting what a journey emitted. */
export interface EventRecorder {
  readonly events: SecurityEvents;
  /** Every event recorded so far (after {@link EventRecorder.settled}), in order. */
  readonly recorded: readonly SecurityEvent[];
  /** Waits until every event emitted so far has reached the sinks. */
  settled(): Promise<SecurityEvent[]>;
  /** The recorded events of one type. */
  ofType(type: SecurityEventType): SecurityEvent[];
  /** Settles, then returns the single event of `type`; fails the test when there is not exactly one. */
  only(type: SecurityEventType): Promise<SecurityEvent>;
  /** Resolves with the next event of `type` to be recorded (for events no request waits for). */
  next(type: SecurityEventType): Promise<SecurityEvent>;
  /** Forgets what was recorded. */
  clear(): Promise<void>;
}

/**
 * `securityEvents` whose only sink (besides any the test adds) is an in-memory list.
 *
 * @example
 * const recorder = recordEvents({ app: 'shop' });
 * const sessions = ssoSession(ssoOptions({ store, events: recorder.events }));
 * expect((await recorder.only('session.created')).method).toBe('password');
 */
export function recordEvents(options: SecurityEventsOptions = {}): EventRecorder {
  const recorded: SecurityEvent[] = [];
  const waiting: Array<{ type: SecurityEventType; resolve: (event: SecurityEvent) => void }> = [];
  const events = securityEvents({
    usernameHashKey: 'test-username-hash-key-0123456789abcdef',
    ...options,
    sinks: [
      function recordEvent(event: SecurityEvent) {
        recorded.push(event);
        for (const waiter of waiting.filter((candidate) => candidate.type === event.type)) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.resolve(event);
        }
      },
      ...(options.sinks ?? []),
    ],
  });
  const ofType = (type: SecurityEventType) => recorded.filter((event) => event.type === type);
  return {
    events,
    recorded,
    async settled() {
      await events.flush();
      return recorded;
    },
    ofType,
    async only(type) {
      await events.flush();
      const found = ofType(type);
      if (found.length !== 1) {
        throw new Error(`expected exactly one ${type} event, got ${found.length}: ${JSON.stringify(recorded.map((event) => event.type))}`);
      }
      return found[0]!;
    },
    next(type) {
      return new Promise((resolve) => waiting.push({ type, resolve }));
    },
    async clear() {
      await events.flush();
      recorded.length = 0;
    },
  };
}

/** An ISO-8601 UTC time with milliseconds, as every event carries. */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** A request id the kit generated (a random UUID). */
export const GENERATED_REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
