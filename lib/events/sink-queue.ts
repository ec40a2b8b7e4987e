import type { SecurityEvent } from './security-event';

/** Where events go: a log, a stream, a table, a function. */
export interface SecurityEventSink {
  /** Names the sink in metrics and warnings (`stderr`, `redis-stream`, `postgres`, …). */
  readonly name: string;
  /** Writes a batch, in order. A rejection (or taking longer than `writeTimeoutSeconds`) drops the batch, counted. */
  write(events: readonly SecurityEvent[]): void | Promise<void>;
  /** The last events of one user, newest first: sinks that keep events answer it (the activity page reads it). */
  recentEvents?(userId: string, limit: number): Promise<SecurityEvent[]>;
  /** Called once with the reporter of the queue in front of the sink, for losses the sink sees itself. */
  bind?(reporter: SinkReporter): void;
  close?(): Promise<void>;
}

/** Why events were lost: the queue was full, the sink failed, or it did not answer in time. */
export type DropReason = 'overflow' | 'failed' | 'timeout';

/** How a queue reports what happens to its sink. */
export interface SinkReporter {
  dropped(count: number, reason: DropReason): void;
  failed(error: unknown): void;
  recovered(): void;
}

/** Limits of one {@link SinkQueue}. */
export interface SinkQueueLimits {
  capacity: number;
  batchSize: number;
  writeTimeoutMs: number;
}

/** A sink write that took longer than the queue's `writeTimeoutMs`. */
class WriteTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'WriteTimeout';
  }
}

/**
 * The bounded queue in front of one sink. `push` is constant time and never waits: the request that emitted goes
 * on at once. Batches are written one at a time after the current turn of the event loop; a full queue refuses
 * the event, and a batch whose write fails or times out is dropped. Every loss is reported, none is silent.
 *
 * @example
 * const queue = new SinkQueue(sink, { capacity: 10_000, batchSize: 100, writeTimeoutMs: 5000 }, reporter);
 * queue.push(event);
 */
export class SinkQueue {
  private items: SecurityEvent[] = [];
  private running = false;
  private scheduled = false;
  private failing = false;
  private idle: Array<() => void> = [];

  constructor(
    readonly sink: SecurityEventSink,
    private readonly limits: SinkQueueLimits,
    private readonly reporter: SinkReporter,
  ) {}

  /** Events waiting to be written. */
  get depth(): number {
    return this.items.length;
  }

  push(event: SecurityEvent): void {
    if (this.items.length >= this.limits.capacity) {
      this.reporter.dropped(1, 'overflow');
      return;
    }
    this.items.push(event);
    if (!this.running && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.run();
      });
    }
  }

  /** Resolves once every event queued so far was written or dropped. */
  drained(): Promise<void> {
    if (!this.running && !this.scheduled && this.items.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private async run(): Promise<void> {
    this.running = true;
    while (this.items.length > 0) {
      const batch = this.items.splice(0, this.limits.batchSize);
      try {
        await this.writeWithin(batch);
        if (this.failing) {
          this.failing = false;
          this.reporter.recovered();
        }
      } catch (error) {
        this.failing = true;
        this.reporter.dropped(batch.length, error instanceof WriteTimeout ? 'timeout' : 'failed');
        this.reporter.failed(error);
      }
    }
    this.running = false;
    for (const resolve of this.idle.splice(0)) resolve();
  }

  private async writeWithin(batch: readonly SecurityEvent[]): Promise<void> {
    const written = this.sink.write(batch);
    if (written === undefined || typeof (written as Promise<void>).then !== 'function') return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new WriteTimeout(this.limits.writeTimeoutMs)), this.limits.writeTimeoutMs);
      timer.unref();
    });
    try {
      await Promise.race([written, timeout]);
    } finally {
      clearTimeout(timer);
      // A write that lost the race may still settle later; its outcome no longer matters.
      (written as Promise<void>).catch(() => undefined);
    }
  }
}
