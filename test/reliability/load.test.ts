import { Cluster } from 'ioredis';
import { testRedisStore } from '../helpers/redis';
import { userId } from '../helpers/sso-apps';
import { startSsoApps, type SsoApps } from '../helpers/sso-load-apps';

const USERS = 1000;

/** The session id inside a signed `__Secure-sso.sid=s:<id>.<signature>` cookie. */
function sessionIdOf(cookie: string): string {
  const value = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1));
  return value.slice(2, value.lastIndexOf('.'));
}

describe('1,000 users logging in at once and browsing two apps of the parent domain', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let apps: SsoApps;
  const cookies = new Map<string, string>();

  beforeAll(async () => {
    redis = await testRedisStore('load');
    apps = await startSsoApps({ store: redis.store });
    const ids = Array.from({ length: USERS }, (_, index) => `load-user-${index}`);
    const logged = await Promise.all(ids.map(async (id) => [id, await apps.login(id)] as const));
    for (const [id, cookie] of logged) cookies.set(id, cookie);
  }, 60_000);

  afterAll(async () => {
    await apps?.close();
    await redis?.cleanup();
  });

  it('gives every login its own session', () => {
    expect(new Set([...cookies.values()].map(sessionIdOf)).size).toBe(USERS);
  });

  it('answers every user with their own identity on both apps, with no 5xx', async () => {
    const answers = await Promise.all(
      [...cookies].flatMap(([id, cookie]) =>
        (['shop', 'auth'] as const).map(async (app) => {
          const res = await apps.get(app, '/me', cookie);
          return {
            id: userId(id),
            app,
            status: res.status,
            answered: res.status === 200 ? (JSON.parse(res.body) as { id: string }).id : undefined,
          };
        }),
      ),
    );
    expect(answers.filter((answer) => answer.status >= 500)).toEqual([]);
    expect(answers.filter((answer) => answer.status !== 200 || answer.answered !== answer.id)).toEqual([]);
    expect(answers).toHaveLength(2 * USERS);
    // Correctness under a burst, not speed: a loaded machine may take long, and only a wrong answer fails.
  }, 120_000);

  it('stores a session in at most 1 KB of Redis memory on average', async () => {
    const keys = [...cookies.values()].map((cookie) => `${redis.prefix}sess:${sessionIdOf(cookie)}`);
    const sizes = await Promise.all(keys.map((key) => redis.client.call('MEMORY', 'USAGE', key) as Promise<number | null>));
    expect(sizes.filter((size) => size === null)).toEqual([]);
    const average = sizes.reduce<number>((sum, size) => sum + (size ?? 0), 0) / sizes.length;
    const indexSizes = await Promise.all(
      [...cookies.keys()]
        .slice(0, 100)
        .map((id) => redis.client.call('MEMORY', 'USAGE', `${redis.prefix}user-sessions:{${userId(id)}}`) as Promise<number | null>),
    );
    const indexAverage = indexSizes.reduce<number>((sum, size) => sum + (size ?? 0), 0) / indexSizes.length;
    console.log(
      `load: ${USERS} sessions on ${redis.client instanceof Cluster ? 'a Redis Cluster' : 'Redis'}; MEMORY USAGE per session key ` +
        `${average.toFixed(0)} B (min ${Math.min(...(sizes as number[]))}, max ${Math.max(...(sizes as number[]))}), ` +
        `per user index set ${indexAverage.toFixed(0)} B`,
    );
    expect(average).toBeLessThanOrEqual(1024);
  });
});
