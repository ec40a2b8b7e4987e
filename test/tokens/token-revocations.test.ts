import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import Redis from 'ioredis';
import request from 'supertest';
import { errorHandler } from '../../lib/http';
import { RedisStore, type RedisClient } from '../../lib/store';
import { KeySet, requireBearer, TokenRevocations, TokenService } from '../../lib/tokens';
import { expectProblem } from '../helpers/problem';
import { startPrivateRedis, type PrivateRedis } from '../helpers/redis';

const issuer = 'https://auth.example.test';

/**
 * The commands a Redis server receives for keys under `prefix`, seen through MONITOR on its own connection.
 * `stop()` first sends a marker command and waits for MONITOR to report it: MONITOR reports in execution order, so
 * every command run before the marker has been seen by then. The server is a private one: MONITOR on a server other
 * test files share would also stream their traffic.
 */
async function watchCommands(url: string, prefix: string, client: RedisClient): Promise<{ commands: string[][]; stop(): Promise<void> }> {
  const connection = new Redis(url, { lazyConnect: true });
  const monitor = await connection.monitor();
  const marker = `${prefix}monitor-marker:${randomBytes(6).toString('hex')}`;
  const commands: string[][] = [];
  let markerSeen: () => void = () => undefined;
  const seen = new Promise<void>((resolve) => {
    markerSeen = resolve;
  });
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.includes(marker)) markerSeen();
    else if (args.some((arg) => arg.startsWith(prefix))) commands.push(args);
  });
  return {
    commands,
    stop: async () => {
      await client.get(marker);
      await seen;
      monitor.disconnect();
      connection.disconnect();
    },
  };
}

/** The reads among watched commands: what the checks read is what these tests are about. */
function reads(commands: string[][]): string[][] {
  return commands.filter((args) => /^(get|mget)$/i.test(args[0] ?? ''));
}

async function listen(app: express.Express): Promise<Server> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return server;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

describe('revocation reads on the hot path', () => {
  const prefix = 'revocation-reads:';
  let privateRedis: PrivateRedis;
  let client: Redis;
  let store: RedisStore;
  let service: TokenService;
  let server: Server;

  beforeAll(async () => {
    privateRedis = await startPrivateRedis();
    client = new Redis(privateRedis.url);
    // Connected before any test starts MONITOR: a client still connecting sends INFO (ioredis's ready check), and
    // MONITOR can report that INFO in the same packet as its own +OK, before ioredis has switched the monitoring
    // connection to monitor mode ("Command queue state error").
    await client.ping();
    store = new RedisStore(client, { prefix });
    service = new TokenService({ keys: KeySet.generate('ES256', 'k1'), issuer, store });
    const app = express();
    app.get('/api', requireBearer({ tokenService: service, audience: 'api' }), (_req, res) => {
      res.end();
    });
    app.use(errorHandler({ log: false }));
    server = await listen(app);
  });
  afterAll(async () => {
    await close(server);
    await store.close();
    client.disconnect();
    await privateRedis.stop();
  });

  it('reads the marks of concurrent checks in one MGET', async () => {
    const revocations = new TokenRevocations(store);
    const watch = await watchCommands(privateRedis.url, prefix, client);
    try {
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => revocations.isRevoked({ gid: `g-${i}`, jti: `j-${i}` })));
      expect(results).toEqual(Array(40).fill(false));
    } finally {
      await watch.stop();
    }
    expect(reads(watch.commands).map((args) => `${args[0]?.toLowerCase()} ${args.length - 1}`)).toEqual(['mget 80']);
  });

  it('reads the store on every request for a token of a grant, cached or not, and never for one without', async () => {
    const { accessToken } = await service.issueTokens({ subject: 'alice', audience: 'api', clientId: 'shop' });
    const standalone = service.issueAccessToken({ subject: 'bob', audience: 'api', clientId: 'shop' });
    const watch = await watchCommands(privateRedis.url, prefix, client);
    try {
      for (let i = 0; i < 3; i += 1) await request(server).get('/api').set('Authorization', `Bearer ${accessToken.token}`).expect(200);
      for (let i = 0; i < 3; i += 1) await request(server).get('/api').set('Authorization', `Bearer ${standalone.token}`).expect(200);
    } finally {
      await watch.stop();
    }
    // Each request for the grant's token: its grant mark and its jti mark, in one command.
    expect(reads(watch.commands).map((args) => args[0]?.toLowerCase())).toEqual(['mget', 'mget', 'mget']);
  });
});

describe('revocation reads during a Redis outage', () => {
  let redis: PrivateRedis;
  let store: RedisStore;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    store = new RedisStore(redis.url, { prefix: 'revocation-outage:' });
  });
  afterAll(async () => {
    await store.close();
    await redis.stop();
  });

  it('answers 503 store_unavailable, never "not revoked", with or without the kit error handler', async () => {
    const service = new TokenService({ keys: KeySet.generate('ES256', 'k1'), issuer, store });
    const { accessToken } = await service.issueTokens({ subject: 'alice', audience: 'api', clientId: 'shop' });
    const withHandler = express();
    withHandler.get('/api', requireBearer({ tokenService: service, audience: 'api' }), (_req, res) => {
      res.end();
    });
    withHandler.use(errorHandler({ log: false }));
    const plain = express();
    plain.get('/api', requireBearer({ tokenService: service, audience: 'api' }), (_req, res) => {
      res.end();
    });
    await request(withHandler).get('/api').set('Authorization', `Bearer ${accessToken.token}`).expect(200);
    await redis.stop();
    try {
      const res = await request(withHandler).get('/api').set('Authorization', `Bearer ${accessToken.token}`);
      expectProblem(res, 503, 'store_unavailable');
      expect(res.headers['retry-after']).toBeDefined();
      const bare = await request(plain).get('/api').set('Authorization', `Bearer ${accessToken.token}`);
      expect(bare.status).toBe(503);
    } finally {
      await redis.start();
    }
  });
});
