import type { AddressInfo } from 'node:net';
import { Agent, type Server } from 'node:http';
import express from 'express';
import Redis, { type Cluster } from 'ioredis';
import { errorHandler, KeyValueRateLimitStore } from '../../lib/http';
import { QrLoginRequests } from '../../lib/qr';
import { establishLogin, requireSession, ssoSession, type SsoSessionMiddleware } from '../../lib/session';
import { RedisStore } from '../../lib/store';
import { RefreshTokens } from '../../lib/tokens';
import { testPrefix } from '../helpers/redis';
import { keySlot, openTestCluster, recordKeySlots, type TestCluster } from '../helpers/redis-cluster';
import { TEST_SOURCE, userId } from '../helpers/sso-apps';
import { plainRequest } from '../helpers/sso-load-apps';

/** Replaces the random parts of a key (ids, tokens, hashes) so the list shows key shapes, not instances. */
function shapeOf(key: string, prefix: string): string {
  return key
    .slice(key.startsWith(prefix) ? prefix.length : 0)
    .replace(/\{[^}]*\}/g, '{…}')
    .replace(/(sess:)[^:]+$/, '$1<id>')
    .replace(/:[A-Za-z0-9_-]{16,}/g, ':<random>');
}

describe('every store operation of the kit on a Redis Cluster', () => {
  let opened: TestCluster;
  let cluster: Cluster;
  let seeds: Array<{ host: string; port: number }>;
  const prefix = testPrefix('cluster');

  beforeAll(async () => {
    opened = await openTestCluster();
    cluster = opened.client;
    seeds = opened.seeds;
  }, 40_000);

  afterAll(() => opened?.stop(prefix));

  it('computes hash slots exactly as the cluster does (so the slot check can be trusted)', async () => {
    const samples = ['plain', 'qr:{abc}:state', 'qr:{abc}:code', 'user-sessions:{u-1}', '{}empty-tag', 'a{b}c{d}', `${prefix}sess:xyz`];
    const node = new Redis(seeds[0]!.port, seeds[0]!.host);
    try {
      const fromCluster = await Promise.all(samples.map((key) => node.call('CLUSTER', 'KEYSLOT', key) as Promise<number>));
      expect(samples.map(keySlot)).toEqual(fromCluster.map(Number));
    } finally {
      node.disconnect();
    }
  });

  it('sees a command that spans two slots, which the cluster refuses with CROSSSLOT', async () => {
    const recorder = recordKeySlots(cluster);
    try {
      await expect(cluster.call('MGET', `${prefix}one`, `${prefix}two`)).rejects.toThrow(/CROSSSLOT/);
    } finally {
      recorder.stop();
    }
    expect(recorder.crossSlot().map((command) => command.name)).toEqual(['mget']);
  });

  it('runs logins, shared-session reads, session listing and revocation, logout everywhere, QR login, refresh-token rotation and rate limiting without a cross-slot command', async () => {
    const store = new RedisStore(cluster, { prefix });
    const recorder = recordKeySlots(cluster);
    const agent = new Agent({ keepAlive: true });
    let server: Server | undefined;
    try {
      const sso: SsoSessionMiddleware = ssoSession({
        store,
        cookieDomain: 'example.test',
        secret: 'cluster-test-secret-0123456789abcdefghij',
        loginUrl: 'https://auth.example.test/login',
      });
      const app = express();
      app.set('trust proxy', 'loopback');
      app.use(sso);
      app.post('/login/:id', async (req, res, next) => {
        try {
          await establishLogin(
            req,
            { source: TEST_SOURCE, subject: String(req.params.id), name: 'Cluster user', roles: ['customer'], method: 'password' },
            { tags: [`sid:${String(req.params.id)}`] },
          );
          res.status(204).end();
        } catch (error) {
          next(error);
        }
      });
      app.get('/me', requireSession(), (req, res) => {
        res.json({ id: req.user!.id });
      });
      app.use(errorHandler({ log: false }));
      server = await new Promise<Server>((resolve) => {
        const created = app.listen(0, '127.0.0.1', () => resolve(created));
      });
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

      const users = Array.from({ length: 12 }, (_, index) => `cluster-user-${index % 6}`);
      const cookies: Array<{ id: string; cookie: string }> = [];
      for (const subject of users) {
        const res = await plainRequest(agent, 'POST', `${url}/login/${subject}`, 'auth.example.test');
        expect(res.status).toBe(204);
        cookies.push({ id: userId(subject), cookie: (res.headers['set-cookie'] ?? [])[0]!.split(';')[0]! });
      }
      for (const { id, cookie } of cookies) {
        const res = await plainRequest(agent, 'GET', `${url}/me`, 'shop.example.test', cookie);
        expect({ status: res.status, id: (JSON.parse(res.body) as { id?: string }).id }).toEqual({ status: 200, id });
      }
      const listed = await sso.manager.listSessions(userId('cluster-user-0'));
      expect(listed).toHaveLength(2);
      expect(await sso.manager.revokeSession(userId('cluster-user-0'), listed[0]!.id)).toBe(true);
      expect(await sso.manager.logoutEverywhere(userId('cluster-user-1'))).toBe(2);
      expect(await sso.manager.destroyByTag('sid:cluster-user-2')).toBe(2);

      const qr = new QrLoginRequests(store);
      const request = await qr.create({
        appid: 'shop',
        redirectUri: 'https://shop.example.test/callback',
        state: 'state-1',
        bindingHash: 'binding',
        requester: { ip: '127.0.0.1', userAgent: 'jest' },
        validitySeconds: 120,
      });
      const events: string[] = [];
      const unsubscribe = await qr.subscribe(request.authCode, (event) => events.push(event.status));
      expect((await qr.transition(request.authCode, 'scanned', 'cluster-user-3', 60)).ok).toBe(true);
      const confirmed = await qr.transition(request.authCode, 'confirmed', 'cluster-user-3', 60);
      expect(confirmed.ok).toBe(true);
      const record = confirmed.ok ? confirmed.record : undefined;
      expect(await qr.collect(record!)).toBe(true);
      expect((await qr.redeemCode(record!.code!, 'shop')).ok).toBe(true);
      expect((await qr.redeemCode(record!.code!, 'shop')).ok).toBe(false);
      await unsubscribe();

      const refresh = new RefreshTokens({ store });
      const issued = await refresh.issue({ clientId: 'shop', subject: 'cluster-user-4', grantId: 'cluster-grant-1' });
      const rotated = await refresh.rotate(issued.token, 'shop');
      await expect(refresh.rotate(issued.token, 'shop')).rejects.toThrow();
      await expect(refresh.rotate(rotated.token, 'shop')).rejects.toThrow();
      await refresh.revokeGrant('cluster-grant-1');
      expect(await refresh.isRevoked({ gid: 'cluster-grant-1' })).toBe(true);

      const limiter = new KeyValueRateLimitStore({ store, prefix: 'rl:' });
      limiter.init({ windowMs: 60_000 } as never);
      await limiter.increment('127.0.0.1');
      await limiter.increment('127.0.0.1');
      await limiter.decrement('127.0.0.1');
      await limiter.resetKey('127.0.0.1');
    } finally {
      recorder.stop();
      agent.destroy();
      if (server) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
      }
      await store.close();
    }

    expect(recorder.crossSlot()).toEqual([]);
    const multiKey = recorder.commands.filter((command) => command.keys.length > 1);
    const shapes = [...new Set(recorder.commands.flatMap((command) => command.keys.map((key) => shapeOf(key, prefix))))].sort();
    console.log(
      `cluster: ${recorder.commands.length} commands, ${multiKey.length} with more than one key, none across slots. Key shapes:\n  ${shapes.join('\n  ')}`,
    );
    // Every kit key that is not a plain session record carries a hash tag, so related keys can share a slot.
    expect(shapes.filter((shape) => !shape.includes('{…}') && !/^sess:<id>$/.test(shape))).toEqual([]);
  }, 60_000);
});
