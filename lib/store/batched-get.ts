import { checkOptions } from '../util/options';
import { isCluster, type RedisClient } from './redis-connection';
import { TurnQueue } from './turn-queue';

interface PendingRead {
  key: string;
  resolve(value: string | null): void;
  reject(error: unknown): void;
}

/** Options of {@link BatchedGet}. */
export interface BatchedGetOptions {
  /** The most keys one MGET carries; a larger batch is split. Default 128. */
  maxBatch?: number;
}

/**
 * Reads single keys, but sends the reads that arrive in the same turn of the event loop as one `MGET`. Under load a
 * server parses several requests per turn; one command and one socket write for all of them costs far less than a
 * write per request, which on loopback is the largest single cost of a session lookup.
 *
 * Unlike ioredis's auto-pipelining, a batch never waits behind another one, so during an outage every read still
 * fails as fast as any other command (the kit's fail-fast defaults). A Cluster client always gets plain `GET`s,
 * since one `MGET` must stay within one slot.
 *
 * @example
 * const reads = new BatchedGet(client);
 * const text = await reads.get('sso:sess:abc');
 */
export class BatchedGet {
  private readonly client: RedisClient;
  private readonly maxBatch: number;
  private readonly batching: boolean;
  private readonly queue = new TurnQueue<PendingRead>((reads) => this.flush(reads));

  constructor(client: RedisClient, options: BatchedGetOptions = {}) {
    checkOptions('BatchedGet', options, {
      maxBatch: { type: 'integer', check: (size: number) => (size < 1 ? `must be at least 1, got ${size}` : undefined) },
    });
    this.client = client;
    this.maxBatch = options.maxBatch ?? 128;
    this.batching = !isCluster(client);
  }

  /** The value at `key` (null when absent), read in the current turn's batch. */
  get(key: string): Promise<string | null> {
    if (!this.batching) return this.client.get(key);
    return new Promise((resolve, reject) => this.queue.push({ key, resolve, reject }));
  }

  private flush(reads: PendingRead[]): void {
    for (let start = 0; start < reads.length; start += this.maxBatch) this.send(reads.slice(start, start + this.maxBatch));
  }

  private send(reads: PendingRead[]): void {
    if (reads.length === 1) {
      const [only] = reads as [PendingRead];
      this.client.get(only.key).then(only.resolve, only.reject);
      return;
    }
    this.client.mget(reads.map((read) => read.key)).then(
      (values) => {
        for (let index = 0; index < reads.length; index += 1) (reads[index] as PendingRead).resolve(values[index] ?? null);
      },
      (error: unknown) => {
        for (const read of reads) read.reject(error);
      },
    );
  }
}
