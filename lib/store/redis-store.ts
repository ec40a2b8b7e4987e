import type Redis from 'ioredis';
import { debugChannel, redactCredentials } from '../util/debug';
import { checkOptions, OptionsError } from '../util/options';
import { type KeyValueStore, StoreUnavailableError, StoreWrongTypeError } from './port';
import { hashSlot } from './hash-slot';
import { createRedisConnection, isCluster, type RedisClient, type RedisConnectionOptions } from './redis-connection';
import { TurnPipeline } from './turn-pipeline';
import { REDIS_STORE_OPTIONS, resolveReplicaWait, waitMillis, type RedisStoreOptions, type ReplicaWait } from './redis-store-options';

export type { RedisStoreOptions, ReplicaWait } from './redis-store-options';

const debug = debugChannel('store');

// Reply errors that mean "this node cannot serve right now" rather than "your command is wrong".
const TRANSIENT_REPLY = /^(READONLY|LOADING|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|NOREPLICAS|MOVED|ASK)\b/;

/**
 * True when an error from ioredis means Redis is unreachable, slow or failing over: the caller should answer 503
 * rather than treat the request as logged out or allowed.
 */
export function isStoreOutage(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  if (error.name === 'ReplyError') return TRANSIENT_REPLY.test(error.message);
  // Connection closed, command timed out, MaxRetriesPerRequestError, ECONNREFUSED, ClusterAllFailedError, …
  return true;
}

/** A failure for the debug channel: name, code and the start of the message, with anything token-like redacted. */
function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const code = (error as { code?: unknown }).code;
  const message = redactCredentials(error.message.slice(0, 120));
  return `${error.name}${typeof code === 'string' ? ` (${code})` : ''}: ${message}`;
}

const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return 0 end
if ARGV[3] == '' then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`;

// The swap and its announcement in one step: PUBLISH runs on the node owning the key, which owns the channel too when
// both share a hash tag, so a channel's messages keep their order on a Cluster as well (see publish()).
const COMPARE_AND_SET_THEN_PUBLISH = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`;

const INCREMENT_IN_WINDOW = `
local value = redis.call('INCR', KEYS[1])
if value == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return value`;

// SADD and PEXPIRE as one atomic step in one command (a MULTI of them costs four commands on the connection).
const ADD_TO_SET_WITH_EXPIRY = `
redis.call('SADD', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

// Lua's unpack() takes a few thousand values at most; longer lists go through a MULTI instead.
const SCRIPT_MEMBERS_LIMIT = 1000;

/**
 * The storage port on Redis (single node, Sentinel or Cluster). Every operation that must be atomic is one Redis
 * command or one Lua script over a single key, so it is atomic on a Cluster too.
 *
 * @example
 * const store = new RedisStore('redis://127.0.0.1:6379', { prefix: 'shop:' });
 * const won = await store.setIfAbsent('lock:{user-1}', 'me', 5);
 */
export class RedisStore implements KeyValueStore {
  readonly kind = 'redis' as const;
  readonly client: RedisClient;
  readonly prefix: string;
  private readonly ownsClient: boolean;
  private readonly commands: TurnPipeline;
  private subscriber: RedisClient | undefined;
  private subscriberReady: Promise<RedisClient> | undefined;
  private readonly listeners = new Map<string, Set<(message: string) => void>>();
  /** The replica wait in effect after critical writes, or undefined when they are acknowledged without one. */
  readonly waitForReplicas: ReplicaWait | undefined;

  constructor(client: RedisClient | string | RedisConnectionOptions, options: RedisStoreOptions = {}) {
    checkOptions('RedisStore', options, REDIS_STORE_OPTIONS);
    if (client === null || (typeof client !== 'string' && typeof client !== 'object')) {
      throw new OptionsError(
        'RedisStore: pass a Redis URL, connection options or an ioredis client, e.g. new RedisStore("redis://127.0.0.1:6379")',
      );
    }
    this.prefix = options.prefix ?? 'sso:';
    this.ownsClient = typeof client === 'string' || !('status' in client);
    this.client = this.ownsClient ? createRedisConnection(client as string | RedisConnectionOptions) : (client as RedisClient);
    this.client.on('error', (error: Error) => {
      // Connection errors surface on the commands that fail (mapped to 503); an unhandled 'error' event would crash.
      debug('connection error: %s', describeFailure(error));
    });
    try {
      this.waitForReplicas = resolveReplicaWait(options.waitForReplicas, this.client);
    } catch (error) {
      // A store that cannot be made must not leave its connection reconnecting in the background.
      if (this.ownsClient) this.client.disconnect();
      throw error;
    }
    for (const [name, lua] of [
      ['ssoCompareAndSet', COMPARE_AND_SET],
      ['ssoCompareAndSetThenPublish', COMPARE_AND_SET_THEN_PUBLISH],
      ['ssoIncrementInWindow', INCREMENT_IN_WINDOW],
      ['ssoAddToSetWithExpiry', ADD_TO_SET_WITH_EXPIRY],
    ] as const) {
      if (!(name in this.client)) this.client.defineCommand(name, { numberOfKeys: 1, lua });
    }
    this.commands = new TurnPipeline(this.client);
  }

  private key(key: string): string {
    return this.prefix + key;
  }

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (isStoreOutage(error)) {
        debug('outage, answering 503: %s', describeFailure(error));
        throw new StoreUnavailableError(undefined, { cause: error });
      }
      if (error instanceof Error && error.name === 'ReplyError' && /^WRONGTYPE\b/.test(error.message)) {
        throw new StoreWrongTypeError(undefined, { cause: error });
      }
      throw error;
    }
  }

  get(key: string): Promise<string | null> {
    return this.run(() => this.commands.call<string | null>('get', [this.key(key)]));
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    await this.run(() =>
      ttlSeconds === undefined
        ? this.commands.call('set', [this.key(key), value])
        : this.commands.call('set', [this.key(key), value, 'PX', Math.ceil(ttlSeconds * 1000)]),
    );
  }

  async setIfAbsent(key: string, value: string, ttlSeconds?: number): Promise<boolean> {
    const reply = await this.run(() =>
      ttlSeconds === undefined
        ? this.commands.call<string | null>('set', [this.key(key), value, 'NX'])
        : this.commands.call<string | null>('set', [this.key(key), value, 'PX', Math.ceil(ttlSeconds * 1000), 'NX']),
    );
    return reply === 'OK';
  }

  take(key: string): Promise<string | null> {
    return this.run(() => this.commands.call<string | null>('getdel', [this.key(key)]));
  }

  async compareAndSet(key: string, expected: string, next: string, ttlSeconds?: number): Promise<boolean> {
    const ttl = ttlSeconds === undefined ? '' : String(Math.ceil(ttlSeconds * 1000));
    const reply = await this.run(() => this.commands.call<number>('ssoCompareAndSet', [this.key(key), expected, next, ttl]));
    return reply === 1;
  }

  async compareAndSetThenPublish(key: string, expected: string, next: string, channel: string, message: string): Promise<boolean> {
    const reply = await this.run(() =>
      this.commands.call<number>('ssoCompareAndSetThenPublish', [this.key(key), expected, next, this.key(channel), message]),
    );
    return reply === 1;
  }

  async delete(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    // One DEL per key: keys of different hash slots cannot share a command on a Cluster.
    const counts = await this.run(() => Promise.all(keys.map((key) => this.commands.call<number>('del', [this.key(key)]))));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  async expire(key: string, ttlSeconds: number): Promise<boolean> {
    const reply = await this.run(() => this.commands.call<number>('pexpire', [this.key(key), Math.ceil(ttlSeconds * 1000)]));
    return reply === 1;
  }

  ttlMillis(key: string): Promise<number> {
    return this.run(() => this.commands.call<number>('pttl', [this.key(key)]));
  }

  async increment(key: string, windowSeconds: number): Promise<number> {
    const reply = await this.run(() =>
      this.commands.call<number>('ssoIncrementInWindow', [this.key(key), String(Math.ceil(windowSeconds * 1000))]),
    );
    return Number(reply);
  }

  async addToSet(key: string, members: readonly string[], ttlSeconds?: number): Promise<void> {
    if (members.length === 0) return;
    const fullKey = this.key(key);
    if (ttlSeconds === undefined) {
      await this.run(() => this.commands.call('sadd', [fullKey, ...members]));
      return;
    }
    const ttlMillis = Math.ceil(ttlSeconds * 1000);
    if (members.length <= SCRIPT_MEMBERS_LIMIT) {
      await this.run(() => this.commands.call('ssoAddToSetWithExpiry', [fullKey, String(ttlMillis), ...members]));
      return;
    }
    await this.run(async () => {
      const results = await this.client
        .multi()
        .sadd(fullKey, ...members)
        .pexpire(fullKey, ttlMillis)
        .exec();
      const failure = results?.find(([error]) => error);
      if (failure?.[0]) throw failure[0];
    });
  }

  async removeFromSet(key: string, members: readonly string[]): Promise<void> {
    if (members.length === 0) return;
    await this.run(() => this.commands.call('srem', [this.key(key), ...members]));
  }

  members(key: string): Promise<string[]> {
    return this.run(() => this.commands.call<string[]>('smembers', [this.key(key)]));
  }

  async publish(channel: string, message: string): Promise<void> {
    const fullChannel = this.key(channel);
    // A Cluster client sends PUBLISH to a random node, and messages that enter the cluster at different nodes can
    // reach a subscriber out of order (a QR login's `scanned` after its `confirmed`); one node keeps their order.
    await this.run(() =>
      isCluster(this.client)
        ? this.connectionOwning(fullChannel).publish(fullChannel, message)
        : this.commands.call('publish', [fullChannel, message]),
    );
  }

  async confirmWrites(keys: readonly string[]): Promise<void> {
    const wait = this.waitForReplicas;
    if (wait === undefined) return;
    // WAIT counts the writes of the connection it is sent on: on a Cluster, the connection to each master that
    // received one of the keys; elsewhere the one connection every command of this store travels on, through the
    // store's own command queue, so it follows every write this store has handed to that connection.
    const millis = waitMillis(wait.timeoutSeconds);
    const acknowledged = await this.run(() => {
      if (!isCluster(this.client)) return this.commands.call<number>('wait', [wait.replicas, millis]).then((count) => [count]);
      const masters = new Set(keys.map((key) => this.connectionOwning(this.key(key))));
      return Promise.all([...masters].map((connection) => connection.wait(wait.replicas, millis)));
    });
    const fewest = Math.min(...acknowledged);
    if (fewest < wait.replicas) {
      debug('write refused: %d of %d replicas acknowledged within %d ms', fewest, wait.replicas, millis);
      throw new StoreUnavailableError(`only ${fewest} of ${wait.replicas} Redis replicas acknowledged the write within ${millis} ms`);
    }
  }

  /** On a Cluster, the connection to the master that owns the key's (or channel's) hash slot; elsewhere the client. */
  private connectionOwning(key: string): RedisClient {
    const client = this.client;
    if (!isCluster(client)) return client;
    const owner = client.slots[hashSlot(key)]?.[0];
    if (owner === undefined) return client;
    const node = client.nodes('master').find((candidate) => `${candidate.options.host}:${candidate.options.port}` === owner);
    return node ?? client;
  }

  private connectSubscriber(): Promise<RedisClient> {
    if (!this.subscriberReady) {
      // A Cluster's subscriber re-subscribes on a new node and handles its own failures. A single node's ioredis
      // re-subscription after a reconnection is a promise nobody can handle: when Redis goes away again while it is
      // in flight and the next connection attempt is refused, it rejects unhandled, which ends a process on Node's
      // default. The store re-subscribes itself.
      const subscriber = isCluster(this.client) ? this.client.duplicate() : this.client.duplicate({ autoResubscribe: false });
      this.subscriber = subscriber;
      subscriber.on('error', () => {
        // Reconnection is automatic; every channel is subscribed again once it is back (below).
      });
      if (!isCluster(subscriber)) {
        let connectedBefore = false;
        subscriber.on('ready', () => {
          // The first connection sends the subscriptions queued while it connected; a reconnection has none.
          if (connectedBefore) this.resubscribe(subscriber);
          connectedBefore = true;
        });
      }
      subscriber.on('message', (channel: string, message: string) => {
        const set = this.listeners.get(channel);
        if (set) for (const listener of set) listener(message);
      });
      this.subscriberReady = Promise.resolve(subscriber);
    }
    return this.subscriberReady;
  }

  /** After a reconnection: every channel with a listener again, in one SUBSCRIBE. */
  private resubscribe(subscriber: Redis): void {
    const channels = [...this.listeners.keys()];
    if (channels.length === 0) return;
    subscriber.subscribe(...channels).catch((error: unknown) => {
      debug('re-subscribing after a reconnection failed: %s', describeFailure(error));
      // Until a SUBSCRIBE succeeds no message can arrive; a new connection tries again.
      if (subscriber.status === 'ready') subscriber.disconnect(true);
    });
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
    const fullChannel = this.key(channel);
    const subscriber = await this.connectSubscriber();
    let set = this.listeners.get(fullChannel);
    if (!set) {
      set = new Set();
      this.listeners.set(fullChannel, set);
      try {
        await this.run(() => (subscriber as Redis).subscribe(fullChannel));
      } catch (error) {
        this.listeners.delete(fullChannel);
        throw error;
      }
    }
    set.add(listener);
    return async () => {
      const current = this.listeners.get(fullChannel);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) {
        this.listeners.delete(fullChannel);
        await (subscriber as Redis).unsubscribe(fullChannel).catch(() => undefined);
      }
    };
  }

  async ping(): Promise<void> {
    await this.run(() => this.client.ping());
  }

  async close(): Promise<void> {
    this.listeners.clear();
    if (this.subscriber) this.subscriber.disconnect();
    if (this.ownsClient) {
      // QUIT lets pending replies arrive; disconnect() afterwards also stops a client that was reconnecting.
      await this.client.quit().catch(() => undefined);
      this.client.disconnect();
    }
  }
}
