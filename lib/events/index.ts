export {
  securityEvents,
  type SecurityEvents,
  type SecurityEventsOptions,
  type SecurityEventHook,
  type SecurityEventSinkStatus,
} from './security-events';
export {
  SECURITY_EVENT_TYPES,
  isKnownReason,
  type SecurityEventType,
  type SecurityEventOutcome,
  type SecurityEventReason,
  type SecurityEventFields,
  type SecurityEventFacts,
  type SecurityEventInput,
  type SecurityEventFactor,
  type SecurityEventTypeSpec,
} from './vocabulary';
export { printable, hashUsername, type SecurityEvent, type SecurityEventValue } from './security-event';
export { requestIdOf, networkOf, summarizeUserAgent } from './request-facts';
export type { SecurityEventSink, SinkReporter, DropReason } from './sink-queue';
export { pinoSink, type PinoSinkOptions } from './pino-sink';
export { redisStreamSink, type RedisStreamSinkOptions, type SecurityEventStore } from './redis-stream-sink';
export { postgresEventSink, type PostgresEventSinkOptions, type PostgresEventSink } from './postgres-event-sink';
export { SecurityMetrics, type SessionCacheReading } from './metrics';
export { metricsHandler, type MetricsHandlerOptions } from './metrics-handler';
export { eventsFor, eventsOption, rememberEvents, EVENTS_OPTION } from './event-source';
