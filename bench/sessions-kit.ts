import Redis from 'ioredis';
import { RedisStore } from '../lib/store';
import { sessionApp } from '../test/helpers/sso-load-apps';
import { listen, type BenchCase, type RunningCase } from './harness';
import { collectCookies, cookieRequests, DISTINCT_SESSIONS, type SessionFixtures } from './sessions';

/**
 * The kit's session case: `ssoSession` over a `RedisStore` on the suite's Redis, `requireSession` on `GET /me`,
 * users logged in through `establishLogin`. The idle timer is refreshed lazily, so a steady request costs one GET.
 *
 * @example
 * const { cases } = await kitSessionCases({ redisUrl, prefix, secret });
 */
export async function kitSessionCases(fixtures: SessionFixtures): Promise<{ cases: BenchCase[]; close(): Promise<void> }> {
  const client = new Redis(fixtures.redisUrl);
  const store = new RedisStore(client, { prefix: `${fixtures.prefix}kit:` });
  const cases: BenchCase[] = [
    {
      name: 'kit-require-session',
      description: 'ssoSession + requireSession (lazy idle refresh), RedisStore',
      start: async (): Promise<RunningCase> => {
        const server = await listen(sessionApp(store, fixtures.secret, true));
        const cookies = await collectCookies(server.url, DISTINCT_SESSIONS, 'sso.sid');
        return { url: server.url, requests: cookieRequests(cookies), close: server.close };
      },
    },
  ];
  return {
    cases,
    close: async () => {
      await store.close();
      await client.quit();
    },
  };
}
