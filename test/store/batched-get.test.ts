import Redis from 'ioredis';
import { BatchedGet } from '../../lib/store/batched-get';
import { createRedisConnection, type RedisClient } from '../../lib/store';
import { deleteByPrefix, startPrivateRedis, testPrefix, testRedisClient, type PrivateRedis } from '../helpers/redis';

/** Calls per command on a private Redis, from INFO commandstats (the server counts what the client really sent). */
async function commandCalls(admin: Redis): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) calls[match[1] as string] = Number(match[2]);
  return calls;
}

describe('BatchedGet on a private Redis', () => {
  let redis: PrivateRedis;
  let client: RedisClient;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    client = createRedisConnection(redis.url);
    admin = new Redis(redis.url);
    await client.ping();
  });
  afterAll(async () => {
    client.disconnect();
    admin.disconnect();
    await redis.stop();
  });
  beforeEach(async () => {
    await admin.flushall();
    await admin.config('RESETSTAT');
  });

  it('sends the reads of one turn as one MGET and gives each caller its own value', async () => {
    await admin.mset('k1', 'one', 'k3', 'three');
    const reads = new BatchedGet(client);
    const values = await Promise.all(['k1', 'k2', 'k3', 'k1'].map((key) => reads.get(key)));
    expect(values).toEqual(['one', null, 'three', 'one']);
    const calls = await commandCalls(admin);
    expect(calls.mget).toBe(1);
    expect(calls.get).toBeUndefined();
  });

  it('sends a lone read as a plain GET', async () => {
    await admin.set('alone', 'value');
    const reads = new BatchedGet(client);
    expect(await reads.get('alone')).toBe('value');
    const calls = await commandCalls(admin);
    expect(calls.get).toBe(1);
    expect(calls.mget).toBeUndefined();
  });

  it('splits a batch larger than maxBatch', async () => {
    await admin.mset('a', '1', 'b', '2', 'c', '3', 'd', '4', 'e', '5');
    const reads = new BatchedGet(client, { maxBatch: 2 });
    expect(await Promise.all(['a', 'b', 'c', 'd', 'e'].map((key) => reads.get(key)))).toEqual(['1', '2', '3', '4', '5']);
    const calls = await commandCalls(admin);
    expect(calls.mget).toBe(2);
    expect(calls.get).toBe(1);
  });

  it('rejects every read of a failed batch, and the next turn reads normally', async () => {
    await admin.set('fine', 'ok');
    const reads = new BatchedGet(client);
    // An ACL that forbids MGET makes the whole batch fail on the server.
    await admin.call('ACL', 'SETUSER', 'default', '-mget');
    try {
      const failed = await Promise.allSettled([reads.get('fine'), reads.get('fine')]);
      expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    } finally {
      await admin.call('ACL', 'SETUSER', 'default', '+mget');
    }
    expect(await Promise.all([reads.get('fine'), reads.get('fine')])).toEqual(['ok', 'ok']);
  });

  it('fails every read within the fail-fast bound while Redis is down, and reads again once it is back', async () => {
    const reads = new BatchedGet(client);
    await redis.stop();
    try {
      const started = Date.now();
      // Reads over several turns, as a server under load issues them: each batch fails on its own.
      const pending: Array<Promise<string | null>> = [];
      for (let turn = 0; turn < 5; turn += 1) {
        for (let index = 0; index < 3; index += 1) pending.push(reads.get(`down-${turn}-${index}`));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const results = await Promise.allSettled(pending);
      expect(results.every((result) => result.status === 'rejected')).toBe(true);
      // The kit's fail-fast defaults end a command within about two seconds of an outage.
      expect(Date.now() - started).toBeLessThan(2500);
    } finally {
      await redis.start();
    }
    await client.ping();
    await admin.set('back', 'yes');
    expect(await reads.get('back')).toBe('yes');
  });

  it('refuses a maxBatch that is not a positive integer', () => {
    expect(() => new BatchedGet(client, { maxBatch: 0 })).toThrow('BatchedGet: maxBatch must be at least 1, got 0');
  });
});

describe('BatchedGet on the suite Redis (a Cluster in the cluster run)', () => {
  let client: RedisClient;
  const prefix = testPrefix('batched-get');
  beforeAll(() => {
    client = testRedisClient();
  });
  afterAll(async () => {
    await deleteByPrefix(client, prefix);
    await client.quit();
  });

  it('gives every caller the value of its own key, whatever slots the keys hash to', async () => {
    const keys = Array.from({ length: 40 }, (_, index) => `${prefix}${index}`);
    for (const [index, key] of keys.entries()) if (index % 3 !== 0) await client.set(key, `value-${index}`);
    const reads = new BatchedGet(client);
    const values = await Promise.all(keys.map((key) => reads.get(key)));
    // On a Cluster an MGET across slots would fail with CROSSSLOT; BatchedGet reads with plain GETs there.
    expect(values).toEqual(keys.map((_, index) => (index % 3 === 0 ? null : `value-${index}`)));
  });
});
