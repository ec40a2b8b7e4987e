import { StoreUnavailableError } from '../store/port';
import { createRedisConnection, type RedisClient, type RedisConnectionOptions } from '../store/redis-connection';
import { isStoreOutage, RedisStore } from '../store/redis-store';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import type { SecurityEvent } from './security-event';
import type { SecurityEventSink } from './sink-queue';

/** Options of {@link redisStreamSink}. Exactly one of `store` and `redis`. */
export interface RedisStreamSinkOptions {
  /** The kit's `RedisStore`: its connection and key prefix are used (the events live beside the sessions). */
  store?: RedisStore;
  /** A Redis of its own (URL or connection options), opened with the kit's fail-fast defaults and closed by `close()`. */
  redis?: string | RedisConnectionOptions;
  /** Prefix of the stream keys, after the store's own. Default `events:`. */
  keyPrefix?: string;
  /** Events kept per user (approximately: trimmed with `MAXLEN ~`). Default 1000. */
  maxEventsPerUser?: number;
  /** Events kept in the stream of all events. Default 100000. */
  maxEvents?: number;
  /** Events older than this are trimmed (`MINID ~`), and an idle user's stream expires. Default 7776000 (90 days). */
  maxAgeSeconds?: number;
  /** Also append every event to the stream of all events (`<prefix>all`), for an operator's tail. Default true. */
  allEvents?: boolean;
}

/** A {@link SecurityEventSink} that also answers "the last events of this user". */
export interface SecurityEventStore extends SecurityEventSink {
  recentEvents(userId: string, limit: number): Promise<SecurityEvent[]>;
}

const DAY = 86_400;
const SCHEMA: OptionSchema = {
  store: { type: 'object', expected: 'the kit RedisStore' },
  redis: { type: ['string', 'object'], expected: 'a redis:// URL or connection options' },
  keyPrefix: {
    type: 'string',
    check: (prefix: string) => (/^[A-Za-z0-9:_.-]{0,64}$/.test(prefix) ? undefined : 'must be letters, digits and : _ . - only'),
  },
  maxEventsPerUser: { type: 'integer', expected: 'a whole number from 10 to 100000', check: within(10, 100_000) },
  maxEvents: { type: 'integer', expected: 'a whole number from 100 to 100000000', check: within(100, 100_000_000) },
  maxAgeSeconds: { type: 'integer', expected: 'a whole number of seconds from 3600 to 63072000', check: within(3600, 730 * DAY) },
  allEvents: { type: 'boolean' },
};

/**
 * Security events in Redis Streams, kept for the user's activity page: one stream per user
 * (`<prefix>user:{<userId>}`, its own Cluster hash tag, so every write and read touches one slot) and one stream of all
 * events (`<prefix>all`). Each is bounded by length (`XADD … MAXLEN ~`) and by age (`XTRIM … MINID ~`, and a
 * user's stream expires once idle that long), so the stores never grow without limit. "The last N events of user
 * X" is one `XREVRANGE … COUNT N` of one key.
 *
 * @example
 * const events = securityEvents({ sinks: [pinoSink(), redisStreamSink({ store })] });
 * const recent = await events.recentEvents(req.user.id, { limit: 20 });
 */
export function redisStreamSink(options: RedisStreamSinkOptions): SecurityEventStore {
  checkOptions('redisStreamSink', options, SCHEMA, { exactlyOne: [['store', 'redis']] });
  if (options.store !== undefined && !(options.store instanceof RedisStore)) {
    throw new OptionsError(
      'redisStreamSink: store must be the kit RedisStore (new RedisStore(url)); use redis for a connection of its own',
    );
  }
  const client: RedisClient = options.store?.client ?? createRedisConnection(options.redis as string | RedisConnectionOptions);
  if (options.store === undefined) {
    // Failures surface on the writes (counted as dropped); an unhandled 'error' event would end the process.
    client.on('error', () => undefined);
  }
  const prefix = `${options.store?.prefix ?? 'sso:'}${options.keyPrefix ?? 'events:'}`;
  const allKey = `${prefix}all`;
  const userKey = (userId: string) => `${prefix}user:{${userId}}`;
  const perUser = options.maxEventsPerUser ?? 1000;
  const all = options.maxEvents ?? 100_000;
  const maxAgeMs = (options.maxAgeSeconds ?? 90 * DAY) * 1000;
  const keepAll = options.allEvents !== false;

  /** One pipeline per key: on a Cluster every command of a pipeline must go to the same slot. */
  async function append(key: string, entries: readonly string[], maxLength: number): Promise<void> {
    const pipeline = client.pipeline();
    for (const entry of entries) pipeline.xadd(key, 'MAXLEN', '~', maxLength, '*', 'event', entry);
    pipeline.xtrim(key, 'MINID', '~', String(Date.now() - maxAgeMs));
    pipeline.pexpire(key, maxAgeMs);
    const results = (await pipeline.exec()) ?? [];
    const failure = results.find(([error]) => error !== null)?.[0];
    if (failure) throw failure;
  }

  return {
    name: 'redis-stream',
    async write(batch) {
      const byKey = new Map<string, string[]>();
      const add = (key: string, entry: string) => {
        const list = byKey.get(key);
        if (list === undefined) byKey.set(key, [entry]);
        else list.push(entry);
      };
      for (const event of batch) {
        const entry = JSON.stringify(event);
        if (keepAll) add(allKey, entry);
        if (event.userId !== undefined) add(userKey(event.userId), entry);
        // An attempt on a username no user was found for yet is kept under the username's keyed hash (`#<hash>`),
        // so the activity page of the account it names can show it.
        else if (event.usernameHash !== undefined) add(userKey(`#${event.usernameHash}`), entry);
      }
      await Promise.all([...byKey].map(([key, entries]) => append(key, entries, key === allKey ? all : perUser)));
    },
    async recentEvents(userId, limit) {
      let entries: Array<[string, string[]]>;
      try {
        entries = await client.xrevrange(userKey(userId), '+', '-', 'COUNT', limit);
      } catch (error) {
        if (isStoreOutage(error)) throw new StoreUnavailableError('the event stream is unavailable', { cause: error });
        throw error;
      }
      const oldest = new Date(Date.now() - maxAgeMs).toISOString();
      const events: SecurityEvent[] = [];
      for (const [, fields] of entries) {
        const text = fields[fields.indexOf('event') + 1];
        if (text === undefined) continue;
        try {
          const event = JSON.parse(text) as SecurityEvent;
          // Trimming by age is approximate; what is past the age is not shown.
          if (typeof event.time === 'string' && event.time >= oldest) events.push(event);
        } catch {
          // An entry another writer put under our key is skipped, not fatal.
        }
      }
      return events;
    },
    async close() {
      if (options.store === undefined) await client.quit().catch(() => client.disconnect());
    },
  };
}
