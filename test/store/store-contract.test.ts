import type { KeyValueStore } from '../../lib/store';
import { createRedisConnection, MemoryStore, RedisStore, StoreUnavailableError, StoreWrongTypeError } from '../../lib/store';
import { captureLogs } from '../helpers/log-capture';
import { startPrivateRedis, testRedisStore } from '../helpers/redis';

type Harness = { store: KeyValueStore; cleanup: () => Promise<void> };

const implementations: Array<[string, () => Promise<Harness>]> = [
  [
    'MemoryStore',
    async () => {
      const store = new MemoryStore();
      return { store, cleanup: () => store.close() };
    },
  ],
  ['RedisStore', async () => testRedisStore('contract')],
];

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(implementations)('%s honours the storage port contract', (_name, open) => {
  let harness: Harness;
  let store: KeyValueStore;
  beforeEach(async () => {
    harness = await open();
    store = harness.store;
  });
  afterEach(() => harness.cleanup());

  it('gets what was set and null for a missing key', async () => {
    await store.set('a', '1');
    expect(await store.get('a')).toBe('1');
    expect(await store.get('missing')).toBeNull();
  });

  it('expires a key after its TTL', async () => {
    await store.set('short', 'x', 0.15);
    expect(await store.get('short')).toBe('x');
    const ttl = await store.ttlMillis('short');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(150);
    await tick(220);
    expect(await store.get('short')).toBeNull();
    expect(await store.ttlMillis('short')).toBe(-2);
  });

  it('reports -1 for a key without expiry and extends expiry with expire()', async () => {
    await store.set('forever', 'x');
    expect(await store.ttlMillis('forever')).toBe(-1);
    expect(await store.expire('forever', 10)).toBe(true);
    expect(await store.ttlMillis('forever')).toBeGreaterThan(9000);
    expect(await store.expire('nothing-here', 10)).toBe(false);
  });

  it('setIfAbsent creates once and refuses the second time', async () => {
    expect(await store.setIfAbsent('lock', 'first', 5)).toBe(true);
    expect(await store.setIfAbsent('lock', 'second', 5)).toBe(false);
    expect(await store.get('lock')).toBe('first');
  });

  it('take returns the value to exactly one of many concurrent callers', async () => {
    await store.set('code', 'secret', 60);
    const results = await Promise.all(Array.from({ length: 50 }, () => store.take('code')));
    expect(results.filter((value) => value === 'secret')).toHaveLength(1);
    expect(await store.get('code')).toBeNull();
  });

  it('compareAndSet swaps only from the expected value, keeping or replacing the TTL', async () => {
    await store.set('state', 'pending', 30);
    expect(await store.compareAndSet('state', 'scanned', 'confirmed')).toBe(false);
    expect(await store.compareAndSet('state', 'pending', 'scanned')).toBe(true);
    expect(await store.get('state')).toBe('scanned');
    expect(await store.ttlMillis('state')).toBeGreaterThan(25_000);
    expect(await store.compareAndSet('state', 'scanned', 'confirmed', 2)).toBe(true);
    expect(await store.ttlMillis('state')).toBeLessThanOrEqual(2000);
    expect(await store.compareAndSet('absent', 'x', 'y')).toBe(false);
  });

  it('lets exactly one of many concurrent compareAndSet calls win', async () => {
    await store.set('qr', 'scanned', 30);
    const wins = await Promise.all(Array.from({ length: 100 }, () => store.compareAndSet('qr', 'scanned', 'confirmed')));
    expect(wins.filter(Boolean)).toHaveLength(1);
  });

  it('compareAndSetThenPublish announces every swap that happened and none that did not, in order, keeping the TTL', async () => {
    const swap = store.compareAndSetThenPublish?.bind(store);
    if (!swap) throw new Error('the store has no compareAndSetThenPublish');
    const received: string[] = [];
    const unsubscribe = await store.subscribe('qr:{login-1}:events', (message) => received.push(message));
    await store.set('qr:{login-1}', 'pending', 30);
    expect(await swap('qr:{login-1}', 'scanned', 'confirmed', 'qr:{login-1}:events', 'wrong')).toBe(false);
    expect(await swap('qr:{login-1}', 'pending', 'scanned', 'qr:{login-1}:events', 'scanned')).toBe(true);
    // Of many concurrent swaps from one value, one wins and one announcement goes out.
    const wins = await Promise.all(
      Array.from({ length: 20 }, () => swap('qr:{login-1}', 'scanned', 'confirmed', 'qr:{login-1}:events', 'confirmed')),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect(await swap('qr:{absent}', 'x', 'y', 'qr:{login-1}:events', 'absent')).toBe(false);
    for (let i = 0; i < 50 && received.length < 2; i += 1) await tick(10);
    await tick(50);
    await unsubscribe();
    expect(received).toEqual(['scanned', 'confirmed']);
    expect(await store.get('qr:{login-1}')).toBe('confirmed');
    expect(await store.ttlMillis('qr:{login-1}')).toBeGreaterThan(25_000);
  });

  it('counts within a fixed window and starts over after it', async () => {
    expect(await store.increment('hits', 0.2)).toBe(1);
    expect(await store.increment('hits', 0.2)).toBe(2);
    expect(await store.increment('hits', 0.2)).toBe(3);
    await tick(260);
    expect(await store.increment('hits', 0.2)).toBe(1);
  });

  it('keeps sets with add, remove, members and an optional expiry', async () => {
    await store.addToSet('sessions', ['s1', 's2'], 60);
    await store.addToSet('sessions', ['s2', 's3']);
    expect((await store.members('sessions')).sort()).toEqual(['s1', 's2', 's3']);
    await store.removeFromSet('sessions', ['s2']);
    expect((await store.members('sessions')).sort()).toEqual(['s1', 's3']);
    expect(await store.members('none')).toEqual([]);
    expect(await store.ttlMillis('sessions')).toBeGreaterThan(0);
  });

  it('sets and renews a set expiry with the members it adds, also for a long list of members', async () => {
    await store.addToSet('tagged', ['t1'], 5);
    expect(await store.ttlMillis('tagged')).toBeGreaterThan(4000);
    expect(await store.ttlMillis('tagged')).toBeLessThanOrEqual(5000);
    await store.addToSet('tagged', ['t2'], 60);
    expect(await store.ttlMillis('tagged')).toBeGreaterThan(59_000);
    expect((await store.members('tagged')).sort()).toEqual(['t1', 't2']);
    const many = Array.from({ length: 2500 }, (_, index) => `m${index}`);
    await store.addToSet('many', many, 60);
    expect((await store.members('many')).length).toBe(2500);
    expect(await store.ttlMillis('many')).toBeGreaterThan(59_000);
  });

  it('deletes keys and counts those that existed', async () => {
    await store.set('d1', 'x');
    await store.set('d2', 'x');
    expect(await store.delete('d1', 'd2', 'd3')).toBe(2);
    expect(await store.get('d1')).toBeNull();
  });

  it('delivers published messages to subscribers until they unsubscribe', async () => {
    const received: string[] = [];
    const unsubscribe = await store.subscribe('events', (message) => received.push(message));
    await store.publish('events', 'one');
    for (let i = 0; i < 50 && received.length < 1; i += 1) await tick(10);
    expect(received).toEqual(['one']);
    await unsubscribe();
    await store.publish('events', 'two');
    await tick(50);
    expect(received).toEqual(['one']);
  });

  it('delivers the messages of one channel in the order they were published (also on a Redis Cluster)', async () => {
    const received: string[] = [];
    const sent = Array.from({ length: 100 }, (_unused, index) => String(index));
    const unsubscribe = await store.subscribe('ordered:{one-login}', (message) => received.push(message));
    for (const message of sent) await store.publish('ordered:{one-login}', message);
    for (let i = 0; i < 200 && received.length < sent.length; i += 1) await tick(10);
    await unsubscribe();
    expect(received).toEqual(sent);
  });

  it('refuses to read a set as a string, or to add to a string, with code store_wrong_type', async () => {
    await store.addToSet('kinds:{set}', ['a']);
    await store.set('kinds:{string}', 'x');
    await expect(store.get('kinds:{set}')).rejects.toMatchObject({ name: 'StoreWrongTypeError', code: 'store_wrong_type' });
    await expect(store.addToSet('kinds:{string}', ['b'])).rejects.toBeInstanceOf(StoreWrongTypeError);
    await expect(store.get('kinds:{set}')).rejects.not.toBeInstanceOf(StoreUnavailableError);
  });

  it('refuses to add with an expiry to a string, and then changes nothing: no members, no expiry', async () => {
    await store.set('kinds:{plain}', 'x');
    await expect(store.addToSet('kinds:{plain}', ['b'], 60)).rejects.toBeInstanceOf(StoreWrongTypeError);
    expect(await store.ttlMillis('kinds:{plain}')).toBe(-1);
    expect(await store.get('kinds:{plain}')).toBe('x');
  });

  it('answers ping', async () => {
    await expect(store.ping()).resolves.toBeUndefined();
  });
});

describe('RedisStore during an outage', () => {
  it('fails with StoreUnavailableError while Redis is down and recovers after a restart', async () => {
    const redis = await startPrivateRedis();
    const store = new RedisStore(redis.url, { prefix: 'outage:' });
    try {
      await store.set('k', 'v');
      await redis.stop();
      const started = Date.now();
      await expect(store.get('k')).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(Date.now() - started).toBeLessThan(3000);
      await redis.start();
      let value: string | null | undefined;
      for (let i = 0; i < 40 && value === undefined; i += 1) {
        value = await store.get('k').catch(() => undefined);
        if (value === undefined) await tick(100);
      }
      // The private server keeps nothing on disk, so the restarted instance is empty but answering.
      expect(value).toBeNull();
    } finally {
      await store.close();
      await redis.stop();
    }
  });

  it('says on the store debug channel why it answers unavailable, without keys or values', async () => {
    const redis = await startPrivateRedis();
    const store = new RedisStore(redis.url, { prefix: 'outage-debug:' });
    const logs = captureLogs({ debug: 'express-sso-kit:store' });
    try {
      await store.set('session-key-Yq3v0c1X9kTQ2mZp', 'value-8s7RbA4nW6eLhJdU');
      await redis.stop();
      await expect(store.set('session-key-Yq3v0c1X9kTQ2mZp', 'value-8s7RbA4nW6eLhJdU')).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      logs.stop();
      await store.close();
      await redis.stop();
    }
    expect(logs.debugLines('store')).toContainEqual(expect.stringMatching(/express-sso-kit:store outage, answering 503: \w+/));
    expect(logs.containing('Yq3v0c1X9kTQ2mZp')).toEqual([]);
    expect(logs.containing('8s7RbA4nW6eLhJdU')).toEqual([]);
  });

  it('refuses a prefix that would break Cluster hash tags', () => {
    expect(() => new RedisStore('redis://127.0.0.1:1', { prefix: 'a{b}:' })).toThrow('RedisStore: prefix must not contain "{" or "}"');
  });
});

describe('store options', () => {
  it('MemoryStore sweeps every sweepIntervalSeconds (fractions allowed) and refuses the old millisecond name', async () => {
    const store = new MemoryStore({ sweepIntervalSeconds: 0.05 });
    try {
      await store.set('short', 'x', 0.01);
      await tick(120);
      // Swept without a read: the key is gone from the map itself, not only hidden by the read-time check.
      expect((store as unknown as { entries: Map<string, unknown> }).entries.has('short')).toBe(false);
    } finally {
      await store.close();
    }
    expect(() => new MemoryStore({ sweepIntervalSeconds: 0 })).toThrow(
      'MemoryStore: sweepIntervalSeconds must be from 0.001 to 86400, got 0',
    );
  });

  it('createRedisConnection refuses two connection modes and a foreign URL scheme without echoing the URL', () => {
    expect(() => createRedisConnection({ url: 'redis://127.0.0.1:6379', cluster: { nodes: [{ host: '127.0.0.1', port: 7000 }] } })).toThrow(
      'createRedisConnection: url and cluster cannot be used together; give only one of them',
    );
    let message = '';
    try {
      createRedisConnection('http://:hunter2-password@redis.example.test:6379');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe('createRedisConnection: url must start with redis:// or rediss://, got a URL starting with "http:"');
    expect(() => createRedisConnection({ sentinel: { sentinels: [], name: 'mymaster' } })).toThrow(
      'createRedisConnection: sentinel.sentinels needs at least one sentinel address',
    );
    expect(() => createRedisConnection({ cluster: { nodes: [], option: {} } as never })).toThrow(
      /unknown option "cluster.option" \(did you mean "cluster.options"\?\)/,
    );
  });
});
