import { testRedisStore } from '../helpers/redis';
import { until } from '../helpers/fault-probes';
import { userId } from '../helpers/sso-apps';
import { startSsoApps, type SsoApps } from '../helpers/sso-load-apps';

// Found by the soak (bench/soak.ts): the per-user index `user-sessions:{id}` kept the ids of sessions that expired
// through their Redis TTL, and every login renewed the set's TTL, so the set of a user who keeps logging in grew.
describe('the per-user session index over expiring sessions', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let apps: SsoApps;

  beforeAll(async () => {
    redis = await testRedisStore('index-growth');
    apps = await startSsoApps({ store: redis.store, session: { idleTimeoutSeconds: 1, touchAfterSeconds: 0 } });
  });

  afterAll(async () => {
    await apps?.close();
    await redis?.cleanup();
  });

  it('does not keep the ids of sessions that expired', async () => {
    const indexKey = `${redis.prefix}user-sessions:{${userId('index-user')}}`;
    const first = await Promise.all(Array.from({ length: 20 }, () => apps.login('index-user')));
    const sessionIdOf = (cookie: string) => decodeURIComponent(cookie.split('=')[1]!).slice(2).split('.')[0]!;
    const firstIds = first.map(sessionIdOf);
    expect(await redis.client.smembers(indexKey)).toEqual(expect.arrayContaining(firstIds));
    // Wait for the sessions themselves to be gone from Redis (1 s idle timeout), not for a guessed time.
    await until(
      async () => (await Promise.all(firstIds.map((id) => redis.client.exists(`${redis.prefix}sess:${id}`)))).every((n) => n === 0),
      5000,
      'the first sessions to expire',
    );
    const latest = await apps.login('index-user');
    const members = await redis.client.smembers(indexKey);
    expect(members.filter((id) => firstIds.includes(id))).toEqual([]);
    expect(members).toContain(sessionIdOf(latest));
  });
});
