import Redis, { Cluster } from 'ioredis';
import type { ClusterNode, ClusterOptions, RedisOptions, SentinelAddress } from 'ioredis';
import { checkOptions, type OptionSchema } from '../util/options';

/** A client the kit accepts wherever it needs Redis: a single node (direct or through Sentinel) or a Cluster. */
export type RedisClient = Redis | Cluster;

/**
 * How to reach Redis. A URL string (`redis://`, `rediss://` for TLS) or an object. Everything ioredis accepts can
 * be passed through `redisOptions`; the kit only sets fail-fast defaults so an outage becomes a quick 503 rather
 * than a hanging request.
 */
export interface RedisConnectionOptions {
  /** `redis://[:password@]host:port/db` or `rediss://…` for TLS. */
  url?: string;
  /** TLS options for a direct connection (also implied by `rediss://`). */
  tls?: RedisOptions['tls'];
  /** Connect through Sentinel: the sentinels' addresses and the monitored master's name. */
  sentinel?: { sentinels: Array<Partial<SentinelAddress>>; name: string; sentinelPassword?: string };
  /** Connect to a Redis Cluster through these seed nodes. */
  cluster?: { nodes: ClusterNode[]; options?: ClusterOptions };
  /** Passed through to ioredis as they are, after the kit's defaults. */
  redisOptions?: RedisOptions;
}

/**
 * The kit's defaults: a command waits at most `commandTimeout` ms, and while Redis is unreachable a command fails
 * after one reconnection attempt instead of waiting in the offline queue forever. Both make an outage fail closed
 * (503) within about two seconds.
 */
const FAIL_FAST_DEFAULTS: RedisOptions = {
  connectTimeout: 2000,
  commandTimeout: 2000,
  maxRetriesPerRequest: 1,
  // ioredis waits this long for a socket to close on disconnect; after an outage the socket may never report
  // closing, and a long wait would keep a shutting-down process alive.
  disconnectTimeout: 500,
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  // Sentinel failover: ask the sentinels again quickly and retry on READONLY after a promotion.
  sentinelRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
};

const nonEmpty = (what: string) => (list: readonly unknown[]) => (list.length === 0 ? `needs at least one ${what}` : undefined);

const OPTIONS: OptionSchema = {
  url: {
    type: 'string',
    expected: 'a redis:// or rediss:// URL',
    // The URL may hold a password: the message names only its scheme.
    check: (url: string) =>
      /^rediss?:\/\//.test(url)
        ? undefined
        : `must start with redis:// or rediss://, got a URL starting with "${url.split(':')[0]?.slice(0, 10)}:"`,
  },
  tls: { type: 'object' },
  sentinel: {
    type: 'object',
    members: {
      sentinels: { type: 'array', required: true, expected: 'an array of { host, port }', check: nonEmpty('sentinel address') },
      name: {
        type: 'string',
        required: true,
        expected: "the monitored master's name",
        check: (name: string) => (name ? undefined : 'must not be empty'),
      },
      sentinelPassword: { type: 'string' },
    },
  },
  cluster: {
    type: 'object',
    members: {
      nodes: { type: 'array', required: true, expected: 'an array of seed nodes { host, port }', check: nonEmpty('seed node') },
      options: { type: 'object' },
    },
  },
  redisOptions: { type: 'object' },
};

/**
 * Opens an ioredis connection with the kit's fail-fast defaults.
 *
 * @example
 * const client = createRedisConnection('redis://127.0.0.1:6379');
 * const cluster = createRedisConnection({ cluster: { nodes: [{ host: '10.0.0.1', port: 7000 }] } });
 */
export function createRedisConnection(options: string | RedisConnectionOptions): RedisClient {
  const normalized: RedisConnectionOptions = typeof options === 'string' ? { url: options } : { ...options };
  checkOptions('createRedisConnection', normalized, OPTIONS, { exclusive: [['url', 'sentinel', 'cluster']] });
  const base: RedisOptions = { ...FAIL_FAST_DEFAULTS, ...normalized.redisOptions };
  if (normalized.tls !== undefined) base.tls = normalized.tls;

  if (normalized.cluster) {
    return new Cluster(normalized.cluster.nodes, {
      clusterRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
      ...normalized.cluster.options,
      redisOptions: { ...base, ...normalized.cluster.options?.redisOptions },
    });
  }
  if (normalized.sentinel) {
    const { sentinels, name, sentinelPassword } = normalized.sentinel;
    return new Redis({ ...base, sentinels, name, ...(sentinelPassword ? { sentinelPassword } : {}) });
  }
  if (normalized.url !== undefined) return new Redis(normalized.url, base);
  return new Redis(base);
}

/** True for a Cluster client, whose multi-key operations need a shared hash tag. */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}
