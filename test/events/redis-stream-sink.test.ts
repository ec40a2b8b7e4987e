import { hashSlot } from '../../lib/store';
import { redisStreamSink, securityEvents, StoreUnavailableError, type SecurityEvents } from '../../lib';
import { captureLogs } from '../helpers/log-capture';
import { startPrivateRedis, testRedisStore } from '../helpers/redis';

describe('redisStreamSink', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let events: SecurityEvents;

  beforeAll(async () => {
    redis = await testRedisStore('event-stream');
    events = securityEvents({ app: 'shop', sinks: [redisStreamSink({ store: redis.store, maxEventsPerUser: 10 })] });
  });
  afterAll(async () => {
    await events.close();
    await redis.cleanup();
  });

  const userKey = (userId: string) => `${redis.prefix}events:user:{${userId}}`;
  const allKey = () => `${redis.prefix}events:all`;

  it("answers the last N events of one user, newest first, from that user's stream alone", async () => {
    events.emit('signin.failed', { reason: 'bad_credentials', method: 'password', userId: 'directory:local|ann' });
    events.emit('signin.succeeded', { reason: 'authenticated', method: 'password', userId: 'directory:local|ann' });
    events.emit('signin.succeeded', { reason: 'authenticated', method: 'password', userId: 'directory:local|ben' });
    events.emit('session.ended', { reason: 'logout', userId: 'directory:local|ann' });
    events.emit('csrf.refused', { reason: 'cross_site', guard: 'ssoSession' });
    await events.flush();
    const recent = await events.recentEvents('directory:local|ann', { limit: 2 });
    expect(recent.map((event) => [event.type, event.reason])).toEqual([
      ['session.ended', 'logout'],
      ['signin.succeeded', 'authenticated'],
    ]);
    expect(recent[0]).toMatchObject({ app: 'shop', userId: 'directory:local|ann', time: expect.any(String) });
    expect(await redis.client.xlen(userKey('directory:local|ben'))).toBe(1);
    // Every event, with or without a user, is in the stream of all events.
    expect(await redis.client.xlen(allKey())).toBe(5);
  });

  it("keeps a user's stream in one Cluster slot and bounded in length and age", async () => {
    const userId = 'directory:local|busy';
    for (let i = 0; i < 300; i += 1) events.emit('signin.failed', { reason: 'bad_credentials', method: 'password', userId });
    await events.flush();
    // MAXLEN ~ trims whole stream nodes (100 entries by default), so "about 10" is at most one node more.
    const length = await redis.client.xlen(userKey(userId));
    expect(length).toBeGreaterThanOrEqual(10);
    expect(length).toBeLessThanOrEqual(110);
    expect((await events.recentEvents(userId, { limit: 1000 })).length).toBe(length);
    const ttl = await redis.client.pttl(userKey(userId));
    expect(ttl).toBeGreaterThan(89 * 86_400_000);
    expect(ttl).toBeLessThanOrEqual(90 * 86_400_000);
    // The hash tag is the user id: a write and a read of one user touch one slot.
    expect(hashSlot(userKey(userId))).toBe(hashSlot(`{${userId}}`));
  });

  it('does not show entries past the age limit that trimming has not reached yet', async () => {
    const userId = 'directory:local|old';
    const old = {
      time: new Date(Date.now() - 91 * 86_400_000).toISOString(),
      type: 'signin.succeeded',
      outcome: 'success',
      reason: 'authenticated',
      userId,
    };
    await redis.client.xadd(userKey(userId), '*', 'event', JSON.stringify(old));
    events.emit('session.ended', { reason: 'logout', userId });
    await events.flush();
    expect((await events.recentEvents(userId)).map((event) => event.type)).toEqual(['session.ended']);
  });

  it('answers a read during an outage with StoreUnavailableError (503), and writes with a counted loss', async () => {
    const down = await startPrivateRedis();
    const sink = redisStreamSink({ redis: down.url });
    const own = securityEvents({ sinks: [sink], writeTimeoutSeconds: 10 });
    await down.stop();
    const logs = captureLogs({ debug: false });
    try {
      await expect(own.recentEvents('u')).rejects.toBeInstanceOf(StoreUnavailableError);
      own.emit('csrf.refused', { reason: 'cross_site', guard: 'test', userId: 'u' });
      await own.flush();
      expect(own.status()[0]).toMatchObject({ name: 'redis-stream', healthy: false, dropped: { failed: 1 } });
      expect(logs.containing('sink "redis-stream": a write failed')).toHaveLength(1);
    } finally {
      logs.stop();
      await own.close();
    }
  });

  it('refuses options that cannot work', () => {
    expect(() => redisStreamSink({} as never)).toThrow(/exactly one of store, redis|store.*redis/);
    expect(() => redisStreamSink({ store: redis.store, maxEventsPerUser: 1 })).toThrow(/maxEventsPerUser/);
    expect(() => redisStreamSink({ store: redis.client as never })).toThrow(/store must be the kit RedisStore/);
  });
});
