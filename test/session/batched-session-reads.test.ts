import Redis from 'ioredis';
import { RedisStore } from '../../lib/store';
import { startPrivateRedis, testPrefix, type PrivateRedis } from '../helpers/redis';
import { userId } from '../helpers/sso-apps';
import { startSsoApps, type SsoApps } from '../helpers/sso-load-apps';

// Session reads of one event-loop turn travel as one MGET; each request must still get its own user's session.
describe('session reads batched into one MGET', () => {
  let redis: PrivateRedis;
  let admin: Redis;
  let store: RedisStore;
  let apps: SsoApps;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    admin = new Redis(redis.url);
    store = new RedisStore(redis.url, { prefix: testPrefix('batched-reads') });
    apps = await startSsoApps({ store });
  });
  afterAll(async () => {
    await apps?.close();
    await store?.close();
    admin?.disconnect();
    await redis?.stop();
  });

  it('answers 60 concurrent requests of 30 users each with its own user, using MGET', async () => {
    const users = await Promise.all(
      Array.from({ length: 30 }, async (_, index) => ({
        id: userId(`batch-user-${index}`),
        cookie: await apps.login(`batch-user-${index}`),
      })),
    );
    await admin.config('RESETSTAT');
    const requests = [...users, ...users].map(async (user, index) => {
      const res = await apps.get(index % 2 === 0 ? 'shop' : 'auth', '/me', user.cookie);
      return { expected: user.id, status: res.status, id: (JSON.parse(res.body) as { id?: string }).id };
    });
    const answers = await Promise.all(requests);
    expect(answers.filter((answer) => answer.status !== 200 || answer.id !== answer.expected)).toEqual([]);
    const stats = await admin.info('commandstats');
    // At least one turn carried several reads; the exact split depends on how the requests arrived.
    expect(Number(/cmdstat_mget:calls=(\d+)/.exec(stats)?.[1] ?? 0)).toBeGreaterThan(0);
  });
});
