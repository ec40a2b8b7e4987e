import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { RedisClient } from '../../lib/store';
import { errorHandler } from '../../lib/http';
import {
  establishLogin,
  logout,
  requireSession,
  ssoSession,
  type SsoSessionCacheOptions,
  type SsoSessionMiddleware,
} from '../../lib/session';
import { SESSION_CACHE_CONNECTION_NAME } from '../../lib/session/session-cache';
import type { RedisStore } from '../../lib/store';
import { TEST_SECRET, TEST_SOURCE } from './sso-apps';

/** One app of the parent domain ("one process"): its own store connection and, with `cache`, its own session cache. */
export interface CachedApp {
  url: string;
  host: string;
  sso: SsoSessionMiddleware;
  close(): Promise<void>;
}

/**
 * Starts an app with `POST /login/:id`, `POST /logout` and `GET /me` on `store`, with the session cache when `cache`
 * is given. `close()` also closes the session manager (and so the cache's connections) and the store.
 *
 * @example
 * const shop = await startCachedApp(new RedisStore(url, { prefix }), 'shop.example.test', { maxAgeSeconds: 600 });
 */
export async function startCachedApp(store: RedisStore, host: string, cache: SsoSessionCacheOptions | undefined): Promise<CachedApp> {
  const sso = ssoSession({
    store,
    cookieDomain: 'example.test',
    secret: TEST_SECRET,
    loginUrl: 'https://auth.example.test/login',
    ...(cache ? { cache } : {}),
  });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(sso);
  app.post('/login/:id', async (req, res, next) => {
    try {
      await establishLogin(req, { source: TEST_SOURCE, subject: String(req.params.id), name: 'U', roles: [], method: 'password' });
      res.status(204).end();
    } catch (error) {
      next(error);
    }
  });
  app.post('/logout', async (req, res, next) => {
    try {
      await logout(req, res);
      res.status(204).end();
    } catch (error) {
      next(error);
    }
  });
  app.get('/me', requireSession(), (req, res) => {
    res.json({ id: req.user!.id });
  });
  app.use(errorHandler({ log: false }));
  const server = await new Promise<Server>((resolve) => {
    const created = app.listen(0, '127.0.0.1', () => resolve(created));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    host,
    sso,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await sso.manager.close();
      await store.close();
    },
  };
}

/**
 * Polls `check` every 2 ms until it holds; resolves to the milliseconds it took, rejects after `timeoutMs`.
 *
 * @example
 * await until(() => app.sso.cache!.ready, 10_000, 'the cache tracking');
 */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/**
 * The ids of the session caches' invalidation connections on one Redis node.
 *
 * @example
 * for (const id of await invalidationClientIds(admin)) await admin.client('KILL', 'ID', id);
 */
export async function invalidationClientIds(node: RedisClient): Promise<string[]> {
  const list = String(await node.call('CLIENT', 'LIST'));
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${SESSION_CACHE_CONNECTION_NAME} `))
    .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1] ?? '')
    .filter(Boolean);
}
