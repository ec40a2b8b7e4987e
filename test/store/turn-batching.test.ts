import Redis from 'ioredis';
import { BatchedGet } from '../../lib/store/batched-get';
import { createRedisConnection, RedisStore, type RedisClient } from '../../lib/store';
import { TurnPipeline } from '../../lib/store/turn-pipeline';
import { deleteByPrefix, startPrivateRedis, testPrefix, testRedisClient, type PrivateRedis } from '../helpers/redis';

// The two ways RedisStore sends what one turn of the event loop asks for: reads as one MGET (BatchedGet), every
// other command pipelined in one socket write (TurnPipeline). Neither lets a batch wait behind another.

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Counts what the client's socket hands to the operating system: one call of the stream's `_write` or `_writev` is
 * one write to the connection, however many commands it carries.
 */
function socketWrites(redisClient: RedisClient): () => number {
  const stream = (redisClient as unknown as { stream: { _write: () => void; _writev: () => void } }).stream;
  const single = jest.spyOn(stream, '_write');
  const vector = jest.spyOn(stream, '_writev');
  return () => single.mock.calls.length + vector.mock.calls.length;
}

/** Calls per command on a private Redis, from INFO commandstats (the server counts what the client really sent). */
async function commandCalls(admin: Redis): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) calls[match[1] as string] = Number(match[2]);
  return calls;
}

describe('batching one turn’s commands, on a private Redis', () => {
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
    jest.restoreAllMocks();
    await admin.flushall();
    await admin.config('RESETSTAT');
  });

  /** Stops Redis, calls over several turns as a server under load would, and expects each call to fail fast. */
  async function expectEveryCallToFailWhileDown(call: (key: string) => Promise<unknown>): Promise<void> {
    await redis.stop();
    try {
      const started = Date.now();
      const pending: Array<Promise<unknown>> = [];
      for (let turn = 0; turn < 5; turn += 1) {
        for (let index = 0; index < 3; index += 1) pending.push(call(`down-${turn}-${index}`));
        await nextTurn();
      }
      const results = await Promise.allSettled(pending);
      expect(results.every((result) => result.status === 'rejected')).toBe(true);
      // The kit's fail-fast defaults end a command within about two seconds of an outage.
      expect(Date.now() - started).toBeLessThan(2500);
    } finally {
      await redis.start();
    }
    await client.ping();
  }

  describe('BatchedGet', () => {
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
      await expectEveryCallToFailWhileDown((key) => reads.get(key));
      await admin.set('back', 'yes');
      expect(await reads.get('back')).toBe('yes');
    });

    it('refuses a maxBatch that is not a positive integer', () => {
      expect(() => new BatchedGet(client, { maxBatch: 0 })).toThrow('BatchedGet: maxBatch must be at least 1, got 0');
    });
  });

  describe('TurnPipeline', () => {
    it('sends the commands of one turn in one socket write, in order, each with its own reply', async () => {
      const writes = socketWrites(client);
      const commands = new TurnPipeline(client);
      const replies = await Promise.all([
        commands.call('set', ['k', 'one', 'PX', 60_000]),
        commands.call('get', ['k']),
        commands.call('sadd', ['s', 'a', 'b']),
        commands.call('smembers', ['s']),
      ]);
      expect(writes()).toBe(1);
      expect(replies[0]).toBe('OK');
      // The GET was queued after the SET of the same turn and sees its value.
      expect(replies[1]).toBe('one');
      expect(replies[2]).toBe(2);
      expect((replies[3] as string[]).sort()).toEqual(['a', 'b']);
    });

    it('sends a lone command on its own, and each turn in a write of its own', async () => {
      const writes = socketWrites(client);
      const commands = new TurnPipeline(client);
      expect(await commands.call('set', ['alone', 'v'])).toBe('OK');
      expect(writes()).toBe(1);
      expect(await Promise.all([commands.call('get', ['alone']), commands.call('get', ['other'])])).toEqual(['v', null]);
      expect(writes()).toBe(2);
    });

    it('rejects only the command that failed; the others of its turn keep their replies', async () => {
      await admin.sadd('a-set', 'member');
      await admin.set('a-string', 'value');
      const commands = new TurnPipeline(client);
      const [wrongType, fine] = await Promise.allSettled([commands.call('get', ['a-set']), commands.call('get', ['a-string'])]);
      expect(wrongType.status).toBe('rejected');
      expect((wrongType as PromiseRejectedResult).reason).toMatchObject({
        name: 'ReplyError',
        message: expect.stringMatching(/^WRONGTYPE/),
      });
      expect(fine).toEqual({ status: 'fulfilled', value: 'value' });
    });

    it('refuses an unknown command alone; the others of its turn go through', async () => {
      const commands = new TurnPipeline(client);
      const [unknown, fine] = await Promise.allSettled([commands.call('nosuchcommand', ['x']), commands.call('set', ['k', 'v'])]);
      expect(unknown).toMatchObject({ status: 'rejected', reason: { message: 'no Redis command nosuchcommand' } });
      expect(fine).toEqual({ status: 'fulfilled', value: 'OK' });
    });

    it('runs scripts defined on the client, also on a connection that has not loaded them yet', async () => {
      const fresh = createRedisConnection(redis.url);
      try {
        fresh.defineCommand('testEcho', { numberOfKeys: 1, lua: "return redis.call('GET', KEYS[1]) .. ARGV[1]" });
        await admin.set('x', 'value');
        await admin.call('SCRIPT', 'FLUSH');
        const commands = new TurnPipeline(fresh);
        expect(await Promise.all([commands.call('testEcho', ['x', '-1']), commands.call('testEcho', ['x', '-2'])])).toEqual([
          'value-1',
          'value-2',
        ]);
      } finally {
        fresh.disconnect();
      }
    });

    it('never holds a turn’s commands behind an earlier turn still waiting for its replies', async () => {
      // ioredis's auto-pipelining keeps one pipeline in flight per connection; a stalled Redis would then make every
      // later command wait for the earlier ones to time out before its own timeout even starts.
      const commands = new TurnPipeline(client);
      const sent: string[] = [];
      const sendCommand = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
      jest.spyOn(client, 'sendCommand').mockImplementation((...args: unknown[]) => {
        sent.push(String((args[0] as { args: unknown[] }).args[0]));
        return sendCommand(...args) as never;
      });
      // DEBUG SLEEP on a connection that is already open, then a moment for the server to be surely asleep.
      const stalled = admin.call('DEBUG', 'SLEEP', '0.5');
      await new Promise((resolve) => setTimeout(resolve, 50));
      let firstSettled = false;
      const first = Promise.all([commands.call('get', ['first-1']), commands.call('get', ['first-2'])]).finally(() => {
        firstSettled = true;
      });
      await nextTurn();
      await nextTurn();
      const second = Promise.all([commands.call('get', ['second-1']), commands.call('get', ['second-2'])]);
      await nextTurn();
      await nextTurn();
      expect(sent).toEqual(['first-1', 'first-2', 'second-1', 'second-2']);
      expect(firstSettled).toBe(false);
      await Promise.all([first, second, stalled]);
    });

    it('fails every command within the fail-fast bound while Redis is down, and works again once it is back', async () => {
      const commands = new TurnPipeline(client);
      await expectEveryCallToFailWhileDown((key) => commands.call('set', [key, 'v']));
      expect(await Promise.all([commands.call('set', ['back', 'yes']), commands.call('get', ['back'])])).toEqual(['OK', 'yes']);
    });

    it('is how RedisStore talks to a single node: the operations of one turn share one socket write', async () => {
      const store = new RedisStore(client, { prefix: 'store:' });
      const writes = socketWrites(client);
      await Promise.all([store.set('a', '1', 60), store.compareAndSet('b', 'x', 'y'), store.addToSet('c', ['m'], 60), store.get('a')]);
      expect(writes()).toBe(1);
      expect(await admin.get('store:a')).toBe('1');
      expect(await admin.smembers('store:c')).toEqual(['m']);
    });
  });
});

describe('batching on the suite Redis (a Cluster in the cluster run)', () => {
  let client: RedisClient;
  const prefix = testPrefix('turn-batching');
  beforeAll(() => {
    client = testRedisClient();
  });
  afterAll(async () => {
    await deleteByPrefix(client, prefix);
    await client.quit();
  });

  it('gives every caller the value of its own key, whatever slots the keys hash to', async () => {
    const keys = Array.from({ length: 40 }, (_, index) => `${prefix}read-${index}`);
    for (const [index, key] of keys.entries()) if (index % 3 !== 0) await client.set(key, `value-${index}`);
    const reads = new BatchedGet(client);
    const values = await Promise.all(keys.map((key) => reads.get(key)));
    // On a Cluster an MGET across slots would fail with CROSSSLOT; BatchedGet reads with plain GETs there.
    expect(values).toEqual(keys.map((_, index) => (index % 3 === 0 ? null : `value-${index}`)));
  });
  it('gives every command its own reply, whatever slots its keys hash to', async () => {
    const keys = Array.from({ length: 30 }, (_, index) => `${prefix}command-${index}`);
    const commands = new TurnPipeline(client);
    await Promise.all(keys.map((key, index) => commands.call('set', [key, `value-${index}`])));
    // On a Cluster one pipeline cannot span nodes; TurnPipeline sends each command on its own there.
    expect(await Promise.all(keys.map((key) => commands.call('get', [key])))).toEqual(keys.map((_, index) => `value-${index}`));
  });
});
