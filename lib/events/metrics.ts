import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { OptionsError } from '../util/options';
import type { SecurityEvent } from './security-event';
import { isKnownReason, type SecurityEventOutcome } from './vocabulary';
import type { DropReason } from './sink-queue';

/** What a session cache reports at each scrape (counted by the session store, read only when scraped). */
export interface SessionCacheReading {
  hits: number;
  misses: number;
  entries: number;
}

// Sign-ins are dominated by a password hash (~50-500 ms) or a round trip to an identity provider.
const LOGIN_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// One signature check is tens of microseconds; a JWKS fetch or a revocation read adds milliseconds.
const VERIFICATION_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2];
const FIRST_METRIC = 'sso_security_events_total';
const MAX_TRACKED_REFUSALS = 10_000;

/**
 * The Prometheus metrics of one `securityEvents`, through prom-client. Every label takes values from a closed set
 * (event types, reason codes of the vocabulary or `other`, outcomes, sink names, the app's login methods), never a
 * user id, a network or a path, so the series count stays bounded whatever the traffic.
 *
 * @example
 * const metrics = new SecurityMetrics(new Registry());
 * metrics.observeLogin('password', 'success', 0.12);
 */
export class SecurityMetrics {
  readonly registry: Registry;
  private readonly events: Counter<'type' | 'outcome' | 'reason'>;
  private readonly throttled: Counter<'limit'>;
  private readonly storeErrors: Counter;
  private readonly loginSeconds: Histogram<'method' | 'outcome'>;
  private readonly verificationSeconds: Histogram<'outcome'>;
  private readonly jwksRefreshes: Counter<'outcome'>;
  private readonly dropped: Counter<'sink' | 'reason'>;
  private readonly sinkFailures: Counter<'sink'>;
  private readonly caches: Array<() => SessionCacheReading> = [];
  /** Who a throttle is refusing now (a limit and a hashed username or network) and until when, for the gauge. */
  private readonly refusing = new Map<string, { limit: string; until: number }>();
  private readonly queues = new Map<string, () => number>();

  constructor(registry: Registry = new Registry()) {
    if (registry.getSingleMetric(FIRST_METRIC) !== undefined) {
      throw new OptionsError('securityEvents: this registry already holds the metrics of another securityEvents; give each its own');
    }
    this.registry = registry;
    const registers = [registry];
    this.events = new Counter({
      name: FIRST_METRIC,
      help: 'Security events by type, outcome and reason code.',
      labelNames: ['type', 'outcome', 'reason'],
      registers,
    });
    this.throttled = new Counter({
      name: 'sso_throttle_refusals_total',
      help: 'Attempts refused by a throttle, by the limit that refused them.',
      labelNames: ['limit'],
      registers,
    });
    this.storeErrors = new Counter({
      name: 'sso_store_errors_total',
      help: 'Requests answered 503 because a store (Redis, PostgreSQL) did not answer.',
      registers,
    });
    this.loginSeconds = new Histogram({
      name: 'sso_login_duration_seconds',
      help: 'Time to answer a sign-in attempt, by method and outcome.',
      labelNames: ['method', 'outcome'],
      buckets: LOGIN_BUCKETS,
      registers,
    });
    this.verificationSeconds = new Histogram({
      name: 'sso_token_verification_duration_seconds',
      help: 'Time to verify an access token not already verified (signature, claims, key lookup), by outcome.',
      labelNames: ['outcome'],
      buckets: VERIFICATION_BUCKETS,
      registers,
    });
    this.jwksRefreshes = new Counter({
      name: 'sso_jwks_refreshes_total',
      help: 'Fetches of a remote JSON Web Key Set, by outcome.',
      labelNames: ['outcome'],
      registers,
    });
    this.dropped = new Counter({
      name: 'sso_security_events_dropped_total',
      help: 'Security events a sink lost: its queue was full (overflow), its write failed, or it timed out.',
      labelNames: ['sink', 'reason'],
      registers,
    });
    this.sinkFailures = new Counter({
      name: 'sso_security_event_sink_failures_total',
      help: 'Failed (or timed-out) batch writes of a security event sink.',
      labelNames: ['sink'],
      registers,
    });
    this.registerReadings(registers);
  }

  /** Counts one emitted event (and, for throttles and store outages, their own counters). */
  countEvent(event: SecurityEvent): void {
    const reason = isKnownReason(event.type, event.reason) ? event.reason : 'other';
    this.events.inc({ type: event.type, outcome: event.outcome, reason });
    if (event.type === 'request.throttled') {
      this.throttled.inc({ limit: reason });
      this.noteRefusal(event, reason);
    } else if (event.type === 'store.unavailable') this.storeErrors.inc();
  }

  /**
   * Records how long a sign-in attempt took to answer. `method` is one of the app's login methods (`password`,
   * `oidc`, `qr`, `passkey`, …): a small closed set.
   *
   * @example
   * events.metrics.observeLogin('password', 'failure', 0.31);
   */
  observeLogin(method: string, outcome: SecurityEventOutcome, seconds: number): void {
    this.loginSeconds.observe({ method, outcome }, seconds);
  }

  /**
   * Records how long verifying one access token took (a cache hit is no verification and is not observed).
   *
   * @example
   * events.metrics.observeTokenVerification('success', 0.00008);
   */
  observeTokenVerification(outcome: SecurityEventOutcome, seconds: number): void {
    this.verificationSeconds.observe({ outcome }, seconds);
  }

  /**
   * Counts one fetch of a remote key set.
   *
   * @example
   * events.metrics.jwksRefreshed('failure');
   */
  jwksRefreshed(outcome: SecurityEventOutcome): void {
    this.jwksRefreshes.inc({ outcome });
  }

  /** Counts events a sink lost (sink `emit`: events that could not even be built). */
  eventsDropped(sink: string, reason: DropReason, count: number): void {
    this.dropped.inc({ sink, reason }, count);
    if (reason !== 'overflow') this.sinkFailures.inc({ sink });
  }

  /**
   * Adds a session cache to the hit ratio (`sso_session_cache_lookups_total`), read only when scraped.
   *
   * @example
   * events.metrics.trackSessionCache(() => ({ hits, misses, entries: cache.size }));
   */
  trackSessionCache(read: () => SessionCacheReading): void {
    this.caches.push(read);
  }

  /**
   * Remembers who a throttle refuses until its `Retry-After` runs out (bounded: the oldest is forgotten first), so
   * `sso_throttle_active` tells how many are held back right now, by limit.
   */
  private noteRefusal(event: SecurityEvent, limit: string): void {
    const seconds = typeof event.retryAfterSeconds === 'number' ? event.retryAfterSeconds : 60;
    const key = `${limit}|${String(event.usernameHash ?? '')}|${String(event.network ?? '')}|${String(event.userId ?? '')}`;
    this.refusing.delete(key);
    if (this.refusing.size >= MAX_TRACKED_REFUSALS) this.refusing.delete(this.refusing.keys().next().value as string);
    this.refusing.set(key, { limit, until: Date.now() + seconds * 1000 });
  }

  /** Reports a sink's queue depth at each scrape. */
  trackQueue(sink: string, depth: () => number): void {
    this.queues.set(sink, depth);
  }

  /** Metrics whose values live elsewhere and are read at scrape time, so counting them costs the requests nothing. */
  private registerReadings(registers: Registry[]): void {
    const caches = this.caches;
    const queues = this.queues;
    const refusing = this.refusing;
    new Gauge({
      name: 'sso_throttle_active',
      help: 'Accounts, networks or users a throttle is refusing right now (seen by this process), by limit.',
      labelNames: ['limit'],
      registers,
      collect() {
        const now = Date.now();
        const counts = new Map<string, number>();
        for (const [key, held] of refusing) {
          if (held.until <= now) refusing.delete(key);
          else counts.set(held.limit, (counts.get(held.limit) ?? 0) + 1);
        }
        this.reset();
        for (const [limit, count] of counts) this.set({ limit }, count);
      },
    });
    new Counter({
      name: 'sso_session_cache_lookups_total',
      help: 'Session reads answered from the in-process session cache (hit) or from Redis (miss).',
      labelNames: ['result'],
      registers,
      collect() {
        const total = caches.reduce(
          (sum, read) => {
            const reading = read();
            return { hits: sum.hits + reading.hits, misses: sum.misses + reading.misses };
          },
          { hits: 0, misses: 0 },
        );
        this.reset();
        this.inc({ result: 'hit' }, total.hits);
        this.inc({ result: 'miss' }, total.misses);
      },
    });
    new Gauge({
      name: 'sso_session_cache_entries',
      help: 'Sessions held in the in-process session cache.',
      registers,
      collect() {
        this.set(caches.reduce((sum, read) => sum + read().entries, 0));
      },
    });
    new Gauge({
      name: 'sso_security_event_queue_depth',
      help: 'Security events waiting in the queue in front of a sink.',
      labelNames: ['sink'],
      registers,
      collect() {
        for (const [sink, depth] of queues) this.set({ sink }, depth());
      },
    });
  }
}
