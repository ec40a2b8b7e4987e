import type Redis from 'ioredis';
import { debugChannel } from '../util/debug';

/** Where Redis pushes invalidation messages for a RESP2 connection tracking with REDIRECT. */
export const INVALIDATION_CHANNEL = '__redis__:invalidate';

/** What a {@link SessionInvalidationTracker} reports to its cache. */
export interface TrackerEvents {
  invalidate(keys: readonly string[] | null): void;
  trackerLost(why: string): void;
  trackerReady(): void;
}

const debug = debugChannel('session');

/**
 * One dedicated connection that receives Redis's invalidation messages for every key under `keyPrefix`: on each
 * (re)connection it asks its own client id, turns on `CLIENT TRACKING ON REDIRECT <id> BCAST PREFIX <keyPrefix>`
 * and subscribes to `__redis__:invalidate`. It is `ready` only between the end of that setup and the next sign of
 * trouble (close, error, reconnect), and reports both edges, so its cache can fail closed.
 *
 * @example
 * const tracker = new SessionInvalidationTracker(client.duplicate(), 'sso:sess:', cache);
 */
export class SessionInvalidationTracker {
  private isReady = false;
  private closing = false;

  constructor(
    private readonly connection: Redis,
    private readonly keyPrefix: string,
    private readonly events: TrackerEvents,
  ) {
    // Subscriptions are redone by setUp, after tracking is on again; ioredis's own resubscription would come first.
    connection.options.autoResubscribe = false;
    connection.on('ready', () => void this.setUp());
    connection.on('close', () => this.lost('the connection closed'));
    connection.on('end', () => this.lost('the connection ended'));
    connection.on('reconnecting', () => this.lost('the connection is reconnecting'));
    connection.on('error', (error: Error) => {
      debug('session cache invalidation connection error: %s', error.name);
    });
    connection.on('messageBuffer', (channel: Buffer, message: unknown) => {
      if (channel.toString() !== INVALIDATION_CHANNEL) return;
      // An array of keys; anything else (a null payload) means "everything" (FLUSHALL, FLUSHDB).
      this.events.invalidate(Array.isArray(message) ? message.map((key: Buffer) => key.toString()) : null);
    });
    if (connection.status === 'ready') void this.setUp();
  }

  get ready(): boolean {
    return this.isReady;
  }

  private async setUp(): Promise<void> {
    if (this.closing) return;
    try {
      const id = (await this.connection.client('ID')) as number;
      await this.connection.call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(id), 'BCAST', 'PREFIX', this.keyPrefix);
      await this.connection.subscribe(INVALIDATION_CHANNEL);
      if (this.closing || this.connection.status !== 'ready') return;
      this.isReady = true;
      this.events.trackerReady();
    } catch (error) {
      // Not tracking means not ready; the connection is dropped so that its reconnection retries the setup.
      this.lost(`tracking could not be set up (${(error as Error).name})`);
      if (!this.closing) this.connection.disconnect(true);
    }
  }

  private lost(why: string): void {
    const wasReady = this.isReady;
    this.isReady = false;
    if (wasReady || !this.closing) this.events.trackerLost(why);
  }

  /**
   * Resolves once every invalidation Redis queued for this connection before now has been handled: a PING on the
   * same connection is answered after them. A connection that does not answer within `timeoutMs` is treated as lost.
   */
  async settle(timeoutMs: number): Promise<void> {
    if (!this.isReady) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      const outcome = await Promise.race([this.connection.ping().then(() => 'answered' as const), timedOut]);
      if (outcome === 'timeout') {
        this.lost('it did not answer a PING');
        this.connection.disconnect(true);
      }
    } catch (error) {
      this.lost(`a PING failed (${(error as Error).name})`);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    this.isReady = false;
    await this.connection.quit().catch(() => this.connection.disconnect());
  }
}
