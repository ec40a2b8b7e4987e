import { Agent } from 'node:http';
import Redis, { type Cluster } from 'ioredis';
import { createRedisConnection, RedisStore } from '../../lib/store';
import { invalidationClientIds, startCachedApp, until, type CachedApp } from '../helpers/cached-session-apps';
import { deleteByPrefix, testPrefix } from '../helpers/redis';
import { keySlot, startRedisCluster, type RedisClusterHarness } from '../helpers/redis-cluster';
import { SESSION_COOKIE, userId } from '../helpers/sso-apps';
import { plainRequest } from '../helpers/sso-load-apps';

describe('the session cache on a Redis Cluster', () => {
  let harness: RedisClusterHarness | undefined;
  let seeds: Array<{ host: string; port: number }>;
  let admin: Cluster;
  const prefix = testPrefix('cluster-cache');
  const agent = new Agent({ keepAlive: true });
  let auth: CachedApp;
  let shop: CachedApp;

  const store = () => new RedisStore(createRedisConnection({ cluster: { nodes: seeds } }), { prefix });
  const request = (app: CachedApp, method: string, path: string, cookie?: string) =>
    plainRequest(agent, method, `${app.url}${path}`, app.host, cookie);

  beforeAll(async () => {
    const given = process.env.SSO_TEST_REDIS_CLUSTER;
    if (given) {
      seeds = given.split(',').map((address) => ({ host: address.split(':')[0] ?? '127.0.0.1', port: Number(address.split(':')[1]) }));
    } else {
      harness = await startRedisCluster();
      seeds = harness.nodes;
    }
    admin = createRedisConnection({ cluster: { nodes: seeds } }) as Cluster;
    auth = await startCachedApp(store(), 'auth.example.test', { maxAgeSeconds: 600 });
    shop = await startCachedApp(store(), 'shop.example.test', { maxAgeSeconds: 600 });
    await until(() => auth.sso.cache!.ready && shop.sso.cache!.ready, 20_000, 'the caches tracking every master');
  }, 60_000);

  afterAll(async () => {
    agent.destroy();
    await auth?.close();
    await shop?.close();
    if (admin) {
      await deleteByPrefix(admin, prefix);
      await admin.quit().catch(() => admin.disconnect());
    }
    await harness?.stop();
  });

  it('keeps one invalidation connection per master for each process', async () => {
    for (const { host, port } of seeds) {
      const node = new Redis(port, host);
      try {
        const role = String(await node.call('ROLE'));
        if (role.startsWith('master')) expect((await invalidationClientIds(node)).length).toBeGreaterThanOrEqual(2);
      } finally {
        node.disconnect();
      }
    }
  });

  it('refuses on one app sessions on every master once they are logged out or revoked on another', async () => {
    const cookies: string[] = [];
    for (let index = 0; index < 12; index += 1) {
      const res = await request(auth, 'POST', `/login/cluster-cached-${index}`);
      expect(res.status).toBe(204);
      cookies.push((res.headers['set-cookie'] ?? []).find((line) => line.startsWith(`${SESSION_COOKIE}=`))!.split(';')[0]!);
    }
    // Twelve random session ids land on more than one master (3 masters share the 16384 slots).
    const slots = cookies.map((cookie) => keySlot(`${prefix}sess:${decodeURIComponent(cookie.split('=')[1]!).slice(2).split('.')[0]}`));
    expect(new Set(slots.map((slot) => Math.floor(slot / 5462))).size).toBeGreaterThan(1);
    for (const cookie of cookies) {
      expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
      expect((await request(shop, 'GET', '/me', cookie)).status).toBe(200);
    }
    expect(shop.sso.cache!.size).toBe(12);

    for (let index = 0; index < 12; index += 1) {
      if (index % 2 === 0) expect((await request(auth, 'POST', '/logout', cookies[index])).status).toBe(204);
      else expect(await auth.sso.manager.logoutEverywhere(userId(`cluster-cached-${index}`))).toBe(1);
    }
    for (const cookie of cookies) {
      await until(async () => (await request(shop, 'GET', '/me', cookie)).status === 401, 5_000, 'the shop refusing');
    }
  });
});
