import Redis from 'ioredis';
import { RedisStore } from '../lib/store';
import { sessionApp } from '../test/helpers/sso-load-apps';
import type { BenchCase } from './harness';
import { collectCookies, cookieRequests, DISTINCT_SESSIONS, type SessionFixtures } from './sessions';

/**
 * The kit's session case: `ssoSession` over a `RedisStore` on the suite's Redis, `requireSession` on `GET /me`,
 * users logged in through `establishLogin`. The idle timer is refreshed lazily, so a steady request costs one GET.
 *
 * @example
 * const cases = kitSessionCases();
 */
export function kitSessionCases(): BenchCase<SessionFixtures>[] {
  return [
    {
      name: 'kit-require-session',
      description: 'ssoSession + requireSession (lazy idle refresh), RedisStore',
      app: ({ redisUrl, prefix, secret }) => {
        const client = new Redis(redisUrl);
        const store = new RedisStore(client, { prefix: `${prefix}kit:` });
        return {
          app: sessionApp(store, secret, true),
          close: async () => {
            await store.close();
            await client.quit();
          },
        };
      },
      requests: async (url) => cookieRequests(await collectCookies(url, DISTINCT_SESSIONS, '__Secure-sso.sid')),
    },
    {
      name: 'kit-require-session-cached',
      description: 'the same with ssoSession({ cache: {} }): sessions served from the per-process cache, evicted by Redis invalidations',
      app: ({ redisUrl, prefix, secret }) => {
        const client = new Redis(redisUrl);
        const store = new RedisStore(client, { prefix: `${prefix}kit:` });
        return {
          // The cache's invalidation connection closes when the process exits.
          app: sessionApp(store, secret, true, { cache: {} }),
          close: async () => {
            await store.close();
            await client.quit();
          },
        };
      },
      requests: async (url) => cookieRequests(await collectCookies(url, DISTINCT_SESSIONS, '__Secure-sso.sid')),
    },
  ];
}
