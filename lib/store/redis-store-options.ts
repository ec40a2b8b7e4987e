import { OptionsError, type OptionSchema } from '../util/options';
import { isCluster, type RedisClient } from './redis-connection';

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /**
   * Prepended to every key and channel, so several apps or test runs share one Redis without touching each
   * other's keys. Must not contain `{` or `}` (it would break Cluster hash tags). Default `sso:`.
   */
  prefix?: string;
  /**
   * Make the kit's critical writes (login, logout, QR confirmation, refresh-token issue and rotation) durable
   * before they are acknowledged: after each, `WAIT replicas timeout` on the connection that wrote them, and a
   * 503 when fewer replicas than `replicas` acknowledged in time. Redis replication is asynchronous; without this a
   * write acknowledged just before the master dies can be lost in a Sentinel or Cluster failover. `WAIT` holds the
   * connection's later commands until it returns, so keep `timeoutSeconds` short (default 0.5) and below the
   * client's `commandTimeout`. Default: `{ replicas: 1 }` on a connection through Sentinel (a deployment built for
   * failover, which has a replica to wait for), off otherwise; `false` turns it off.
   */
  waitForReplicas?: { replicas: number; timeoutSeconds?: number } | false;
}

/** How {@link RedisStore} waits for replicas after a critical write (`RedisStore#waitForReplicas`). */
export interface ReplicaWait {
  readonly replicas: number;
  readonly timeoutSeconds: number;
}

/** The schema of {@link RedisStoreOptions} under the kit's options rule. */
export const REDIS_STORE_OPTIONS: OptionSchema = {
  prefix: {
    type: 'string',
    check: (prefix: string) => (/[{}]/.test(prefix) ? 'must not contain "{" or "}" (they would break Cluster hash tags)' : undefined),
  },
  waitForReplicas: {
    type: ['object', 'boolean'],
    expected: '{ replicas, timeoutSeconds? } or false, e.g. { replicas: 1, timeoutSeconds: 0.5 }',
    check: (value: unknown) => (value === true ? 'must be { replicas, timeoutSeconds? } or false, e.g. { replicas: 1 }' : undefined),
    members: {
      replicas: {
        type: 'integer',
        required: true,
        expected: 'a whole number of replicas of at least 1',
        check: (replicas: number) => (replicas < 1 ? `must be a whole number of replicas of at least 1, got ${replicas}` : undefined),
      },
      timeoutSeconds: {
        type: 'number',
        expected: 'a number of seconds, e.g. 0.5',
        check: (seconds: number) => (seconds < 0.001 ? `must be at least 0.001 seconds, got ${seconds}` : undefined),
      },
    },
  },
};

function isSentinelConnection(client: RedisClient): boolean {
  return !isCluster(client) && Array.isArray(client.options.sentinels) && client.options.sentinels.length > 0;
}

function commandTimeoutOf(client: RedisClient): number | undefined {
  return isCluster(client) ? client.options.redisOptions?.commandTimeout : client.options.commandTimeout;
}

/**
 * The replica wait in effect for a store on `client`: the option as given, or by default one replica on a
 * connection through Sentinel (a deployment built for failover), none otherwise. Throws when the wait could not
 * end before the client's command timeout, which would make every refusal look like an outage.
 *
 * @example
 * resolveReplicaWait({ replicas: 1 }, client); // { replicas: 1, timeoutSeconds: 0.5 }
 */
export function resolveReplicaWait(given: RedisStoreOptions['waitForReplicas'], client: RedisClient): ReplicaWait | undefined {
  if (given === false) return undefined;
  const commandTimeout = commandTimeoutOf(client);
  if (given === undefined) {
    if (!isSentinelConnection(client)) return undefined;
    // Half the command timeout at most, so a WAIT that runs out is a refusal and never looks like an outage.
    const millis = commandTimeout === undefined ? 500 : Math.max(1, Math.min(500, Math.floor(commandTimeout / 2)));
    return { replicas: 1, timeoutSeconds: millis / 1000 };
  }
  const timeoutSeconds = given.timeoutSeconds ?? 0.5;
  if (commandTimeout !== undefined && waitMillis(timeoutSeconds) >= commandTimeout) {
    throw new OptionsError(
      `RedisStore: waitForReplicas.timeoutSeconds (${timeoutSeconds}) must be below the client's commandTimeout (${commandTimeout / 1000} s), or WAIT would time out as an outage`,
    );
  }
  return { replicas: given.replicas, timeoutSeconds };
}

/**
 * The timeout of a `WAIT` command, which counts whole milliseconds.
 *
 * @example
 * waitMillis(0.5); // 500
 */
export function waitMillis(seconds: number): number {
  return Math.max(1, Math.round(seconds * 1000));
}
