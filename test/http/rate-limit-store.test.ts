import express from 'express';
import { rateLimit } from 'express-rate-limit';
import request from 'supertest';
import { errorHandler, KeyValueRateLimitStore, TooManyRequestsError } from '../../lib/http';
import { MemoryStore } from '../../lib/store';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';

let redis: Awaited<ReturnType<typeof testRedisStore>>;

beforeAll(async () => {
  redis = await testRedisStore('rate-limit');
});

afterAll(() => redis.cleanup());

function limitedApp(store: KeyValueRateLimitStore, limit: number) {
  const app = express();
  app.use(
    rateLimit({
      windowMs: 60_000,
      limit,
      store,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      handler: (_req, _res, next, used) => next(new TooManyRequestsError(used.windowMs / 1000)),
    }),
  );
  app.get('/', (_req, res) => {
    res.sendStatus(204);
  });
  app.use(errorHandler({ log: false }));
  return app;
}

describe('KeyValueRateLimitStore', () => {
  it('refuses a store that is not a KeyValueStore and a prefix with braces', () => {
    expect(() => new KeyValueRateLimitStore({ store: {} as never })).toThrow(/store must be a KeyValueStore/);
    expect(() => new KeyValueRateLimitStore({ store: redis.store, prefix: 'rl:{x}' })).toThrow(/prefix/);
  });

  it('limits with express-rate-limit and answers 429 with Retry-After once the limit is reached', async () => {
    const app = limitedApp(new KeyValueRateLimitStore({ store: redis.store, prefix: 'rl:a:' }), 2);
    expect((await request(app).get('/')).status).toBe(204);
    expect((await request(app).get('/')).status).toBe(204);
    const third = await request(app).get('/');
    expectProblem(third, 429, 'too_many_requests');
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('counts across instances sharing the store (two apps, one limit)', async () => {
    const first = limitedApp(new KeyValueRateLimitStore({ store: redis.store, prefix: 'rl:shared:' }), 3);
    const second = limitedApp(new KeyValueRateLimitStore({ store: redis.store, prefix: 'rl:shared:' }), 3);
    expect((await request(first).get('/')).status).toBe(204);
    expect((await request(second).get('/')).status).toBe(204);
    expect((await request(first).get('/')).status).toBe(204);
    expect((await request(second).get('/')).status).toBe(429);
  });

  it('keeps the counters of different prefixes apart', async () => {
    const store = new KeyValueRateLimitStore({ store: redis.store, prefix: 'rl:p1:' });
    const other = new KeyValueRateLimitStore({ store: redis.store, prefix: 'rl:p2:' });
    store.init({ windowMs: 60_000 } as never);
    other.init({ windowMs: 60_000 } as never);
    await store.increment('client');
    await store.increment('client');
    expect((await other.increment('client')).totalHits).toBe(1);
  });

  it('reports the window reset time, decrements and resets a key', async () => {
    const store = new KeyValueRateLimitStore({ store: redis.store, prefix: 'rl:ops:' });
    store.init({ windowMs: 30_000 } as never);
    const first = await store.increment('c');
    expect(first.totalHits).toBe(1);
    expect(first.resetTime!.getTime() - Date.now()).toBeGreaterThan(25_000);
    expect(first.resetTime!.getTime() - Date.now()).toBeLessThanOrEqual(30_000);
    await store.increment('c');
    await store.decrement('c');
    expect((await store.get('c'))!.totalHits).toBe(1);
    await store.resetKey('c');
    expect(await store.get('c')).toBeUndefined();
  });

  it('works over the MemoryStore too', async () => {
    const memory = new MemoryStore();
    const store = new KeyValueRateLimitStore({ store: memory });
    store.init({ windowMs: 1000 } as never);
    expect((await store.increment('k')).totalHits).toBe(1);
    expect((await store.increment('k')).totalHits).toBe(2);
    await memory.close();
  });
});
