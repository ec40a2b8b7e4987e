import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { Request } from 'express';
import { Registry } from 'prom-client';
import { redactCredentials } from '../util/debug';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import { SecurityMetrics } from './metrics';
import { pinoSink } from './pino-sink';
import { requestFacts } from './request-facts';
import { buildEvent, printable, type SecurityEvent } from './security-event';
import { SinkQueue, type DropReason, type SecurityEventSink, type SinkReporter } from './sink-queue';
import type { SecurityEventInput, SecurityEventType } from './vocabulary';

/** A function that receives every event: the simplest sink. It may return a promise (awaited, with a timeout). */
export type SecurityEventHook = (event: SecurityEvent) => void | Promise<void>;

/** Options of {@link securityEvents}. */
export interface SecurityEventsOptions {
  /** Names the app (`shop`, `auth`) in every event. Default none. */
  app?: string;
  /**
   * Where events go: sinks such as `pinoSink()`, `redisStreamSink(...)`, `postgresEventSink(...)`, or functions.
   * Default `[pinoSink()]`: JSON lines on stderr.
   */
  sinks?: ReadonlyArray<SecurityEventSink | SecurityEventHook>;
  /**
   * The key of the username hash (`usernameHash`), at least 32 bytes; give every instance the same one so attempts
   * on one account can be counted across them. Default: a random key per process (hashes then match only within it).
   */
  usernameHashKey?: string | Buffer;
  /** Events waiting per sink before new ones are dropped (and counted). Default 10000. */
  queueCapacity?: number;
  /** A sink write that takes longer is given up (its batch counted as dropped). Default 5. */
  writeTimeoutSeconds?: number;
  /** The IPv6 prefix recorded as the client network. Default 64. */
  ipv6PrefixLength?: number;
  /** The prom-client registry the metrics go to. Default a registry of their own (`events.metrics.registry`). */
  registry?: Registry;
}

/** The state of one sink, for health pages and tests. */
export interface SecurityEventSinkStatus {
  name: string;
  /** Events waiting to be written. */
  queued: number;
  /** Events lost so far, by reason. */
  dropped: Record<DropReason, number>;
  /** False from a failed write until the next write that succeeds. */
  healthy: boolean;
}

/**
 * The security events of an app: one object, given to the kit's factories (`events` option), that records every
 * authentication and authorization decision in one vocabulary, counts it in Prometheus metrics and hands it to
 * the sinks. Emitting never throws and never waits for a sink.
 */
export interface SecurityEvents {
  readonly app: string | undefined;
  readonly metrics: SecurityMetrics;
  /**
   * Records one event. `req` supplies the request id, network, user agent, host, and the signed-in user and session
   * when the input does not name them.
   */
  emit<T extends SecurityEventType>(type: T, input: SecurityEventInput<T>, req?: Request): void;
  /** The last events of a user, newest first, from the first sink that keeps them (a stream or a table). */
  recentEvents(userId: string, options?: { limit?: number }): Promise<SecurityEvent[]>;
  /** Each sink's queue, losses and health. */
  status(): SecurityEventSinkStatus[];
  /** Resolves once every event emitted so far was written or dropped. */
  flush(): Promise<void>;
  /** Flushes, then closes the sinks (the connections they opened themselves). */
  close(): Promise<void>;
}

const SCHEMA: OptionSchema = {
  app: {
    type: 'string',
    expected: 'a short name like "shop"',
    check: (app: string) =>
      /^[A-Za-z0-9._-]{1,64}$/.test(app) ? undefined : `must be a short name like "shop", got ${JSON.stringify(app)}`,
  },
  sinks: { type: 'array', expected: 'an array of sinks (pinoSink(), redisStreamSink(...), a function)' },
  usernameHashKey: {
    type: ['string', 'buffer'],
    expected: 'a secret of at least 32 bytes',
    check: (key: string | Buffer) => (Buffer.byteLength(key) >= 32 ? undefined : 'must be at least 32 bytes'),
  },
  queueCapacity: { type: 'integer', expected: 'a whole number from 1 to 1000000', check: within(1, 1_000_000) },
  writeTimeoutSeconds: { type: 'number', expected: 'a number of seconds from 0.01 to 60', check: within(0.01, 60) },
  ipv6PrefixLength: { type: 'integer', expected: 'a prefix length from 32 to 128', check: within(32, 128) },
  registry: {
    type: 'object',
    expected: 'a prom-client Registry',
    check: (registry: { getSingleMetric?: unknown }) =>
      typeof registry.getSingleMetric === 'function' ? undefined : 'must be a prom-client Registry',
  },
};

const BATCH_SIZE = 100;
const WARNING_INTERVAL_MS = 60_000;

function asSink(entry: SecurityEventSink | SecurityEventHook, index: number): SecurityEventSink {
  if (typeof entry === 'function') return { name: entry.name || `hook-${index}`, write: (batch) => hookWrite(entry, batch) };
  if (entry === null || typeof entry !== 'object' || typeof entry.write !== 'function' || typeof entry.name !== 'string') {
    throw new OptionsError(`securityEvents: sinks[${index}] must be a sink ({ name, write }) or a function`);
  }
  return entry;
}

async function hookWrite(hook: SecurityEventHook, batch: readonly SecurityEvent[]): Promise<void> {
  for (const event of batch) await hook(event);
}

/** Reports one sink's losses as metrics and rate-limited warnings: a loss is never silent. */
class SinkHealth implements SinkReporter {
  readonly losses: Record<DropReason, number> = { overflow: 0, failed: 0, timeout: 0 };
  healthy = true;
  private warnedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly name: string,
    private readonly metrics: SecurityMetrics,
  ) {}

  dropped(count: number, reason: DropReason): void {
    this.losses[reason] += count;
    this.metrics.eventsDropped(this.name, reason, count);
    if (reason === 'overflow') this.warn(`its queue is full; ${this.lost()} event(s) lost so far`);
  }

  failed(error: unknown): void {
    this.healthy = false;
    const why = error instanceof Error ? `${error.name}: ${redactCredentials(error.message)}` : 'an error';
    this.warn(`a write failed (${printable(why, 200)}); ${this.lost()} event(s) lost so far`);
  }

  recovered(): void {
    this.healthy = true;
    this.warnedAt = Number.NEGATIVE_INFINITY;
    console.warn(`[express-sso-kit] securityEvents: sink "${this.name}" writes again; ${this.lost()} event(s) were lost`);
  }

  private lost(): number {
    return this.losses.overflow + this.losses.failed + this.losses.timeout;
  }

  private warn(message: string): void {
    const now = Date.now();
    if (now - this.warnedAt < WARNING_INTERVAL_MS) return;
    this.warnedAt = now;
    console.warn(`[express-sso-kit] securityEvents: sink "${this.name}": ${message}`);
  }
}

class KitSecurityEvents implements SecurityEvents {
  readonly metrics: SecurityMetrics;
  private readonly queues: SinkQueue[];
  private readonly health: SinkHealth[];
  private emitFailedAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly app: string | undefined,
    sinks: readonly SecurityEventSink[],
    limits: { capacity: number; writeTimeoutMs: number },
    private readonly usernameKey: KeyObject,
    private readonly ipv6PrefixLength: number,
    registry: Registry,
  ) {
    this.metrics = new SecurityMetrics(registry);
    this.health = sinks.map((sink) => new SinkHealth(sink.name, this.metrics));
    this.queues = sinks.map((sink, index) => {
      const health = this.health[index] as SinkHealth;
      sink.bind?.(health);
      const queue = new SinkQueue(
        sink,
        { capacity: limits.capacity, batchSize: BATCH_SIZE, writeTimeoutMs: limits.writeTimeoutMs },
        health,
      );
      this.metrics.trackQueue(sink.name, () => queue.depth);
      return queue;
    });
  }

  emit<T extends SecurityEventType>(type: T, input: SecurityEventInput<T>, req?: Request): void {
    try {
      const facts = req === undefined ? undefined : requestFacts(req, this.ipv6PrefixLength);
      const event = buildEvent(type, input as unknown as Record<string, unknown>, {
        now: Date.now(),
        app: this.app,
        facts,
        usernameKey: this.usernameKey,
      });
      this.metrics.countEvent(event);
      for (const queue of this.queues) queue.push(event);
    } catch (error) {
      // Recording must never break the request that is being answered: the loss is counted and said instead.
      this.metrics.eventsDropped('emit', 'failed', 1);
      const now = Date.now();
      if (now - this.emitFailedAt >= WARNING_INTERVAL_MS) {
        this.emitFailedAt = now;
        const why = error instanceof Error ? `${error.name}: ${redactCredentials(error.message)}` : 'an error';
        console.warn(`[express-sso-kit] securityEvents: a ${type} event could not be recorded (${printable(why, 200)})`);
      }
    }
  }

  async recentEvents(userId: string, options: { limit?: number } = {}): Promise<SecurityEvent[]> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new OptionsError(`securityEvents.recentEvents: limit must be a whole number from 1 to 1000, got ${String(limit)}`);
    }
    const reader = this.queues.find((queue) => typeof queue.sink.recentEvents === 'function')?.sink;
    if (reader === undefined) {
      throw new OptionsError('securityEvents.recentEvents: no sink keeps events; add redisStreamSink(...) or postgresEventSink(...)');
    }
    return (reader.recentEvents as NonNullable<SecurityEventSink['recentEvents']>)(userId, limit);
  }

  status(): SecurityEventSinkStatus[] {
    return this.queues.map((queue, index) => {
      const health = this.health[index] as SinkHealth;
      return { name: queue.sink.name, queued: queue.depth, dropped: { ...health.losses }, healthy: health.healthy };
    });
  }

  async flush(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.drained()));
  }

  async close(): Promise<void> {
    await this.flush();
    await Promise.all(this.queues.map((queue) => queue.sink.close?.()));
  }
}

/**
 * Creates the security events of an app. Give the result to the factories as `events`: to `ssoSession` (every
 * middleware mounted after it finds it on `req.sso`: the login portal, OIDC and QR logins, logout, CSRF, the
 * OpenID Provider built on that session), to `requireBearer` or the `TokenService` it verifies with, to
 * `qrLoginProvider`, and to `errorHandler` where no session runs. Serve its metrics with `metricsHandler`.
 *
 * @example
 * const events = securityEvents({ app: 'shop', usernameHashKey: process.env.EVENTS_KEY,
 *   sinks: [pinoSink(), redisStreamSink({ store })] });
 * app.use(ssoSession({ ...sessionOptions, events }));
 * app.get('/metrics', metricsHandler({ events }));
 */
export function securityEvents(options: SecurityEventsOptions = {}): SecurityEvents {
  checkOptions('securityEvents', options, SCHEMA);
  const sinks = (options.sinks ?? [pinoSink()]).map(asSink);
  const names = sinks.map((sink) => sink.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) throw new OptionsError(`securityEvents: two sinks are named "${repeated}"; give each its own name`);
  // A fixed derivation, so the hash key is not the configured secret itself.
  const usernameKey = createSecretKey(
    createHmac('sha256', options.usernameHashKey ?? randomBytes(32))
      .update('express-sso-kit username hash')
      .digest(),
  );
  return new KitSecurityEvents(
    options.app,
    sinks,
    { capacity: options.queueCapacity ?? 10_000, writeTimeoutMs: (options.writeTimeoutSeconds ?? 5) * 1000 },
    usernameKey,
    options.ipv6PrefixLength ?? 64,
    options.registry ?? new Registry(),
  );
}
