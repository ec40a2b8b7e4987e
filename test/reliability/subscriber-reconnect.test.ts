import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { RedisStore } from '../../lib/store';
import { recordUnhandledRejections, until } from '../helpers/fault-probes';
import { startPrivateRedis, type PrivateRedis } from '../helpers/redis';

/**
 * A TCP proxy in front of Redis that can play an outage arriving at the worst moment: with `cutOnResubscribe()`, the
 * first SUBSCRIBE a client sends is lost with the connection, and the proxy stops listening (connections are refused,
 * as when Redis is down) until `restore()`.
 */
class OutageProxy {
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private failNextSubscribe = false;
  cuts = 0;
  port = 0;

  constructor(private readonly target: number) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target, '127.0.0.1');
      this.sockets.add(client).add(upstream);
      const forget = (): void => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('close', forget).on('error', forget);
      upstream.on('close', forget).on('error', forget);
      upstream.on('data', (chunk: Buffer) => client.write(chunk));
      client.on('data', (chunk: Buffer) => {
        if (this.failNextSubscribe && /subscribe/i.test(chunk.toString('latin1'))) {
          this.failNextSubscribe = false;
          this.cuts += 1;
          this.stopListening();
          forget();
          return;
        }
        upstream.write(chunk);
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  /** Cuts every open connection, so clients reconnect; the next SUBSCRIBE sent is lost with Redis. */
  cutOnResubscribe(): void {
    this.failNextSubscribe = true;
    for (const socket of this.sockets) socket.destroy();
  }

  /** Listens again on the same port. */
  async restore(): Promise<void> {
    await this.start();
  }

  private stopListening(): void {
    this.server?.close();
    this.server = undefined;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('RedisStore subscriptions across a reconnection', () => {
  let redis: PrivateRedis;
  let proxy: OutageProxy;
  let subscribing: RedisStore;
  let publishing: RedisStore;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    proxy = new OutageProxy(redis.port);
    await proxy.start();
    subscribing = new RedisStore(`redis://127.0.0.1:${proxy.port}`, { prefix: 'resubscribe:' });
    publishing = new RedisStore(redis.url, { prefix: 'resubscribe:' });
  });

  afterAll(async () => {
    await subscribing?.close();
    await publishing?.close();
    await proxy?.stop();
    await redis?.stop();
  });

  it('survives Redis going away while it re-subscribes (no unhandled rejection), and delivers again once it is back', async () => {
    const received: string[] = [];
    await subscribing.subscribe('events', (message) => received.push(message));
    await publishing.publish('events', 'before');
    await until(() => received.includes('before'), 5000, 'the first message');

    const rejections = recordUnhandledRejections();
    try {
      proxy.cutOnResubscribe();
      await until(() => proxy.cuts === 1, 5000, 'the re-subscription to be cut');
      // Redis stays down through several refused reconnection attempts: past the kit's fail-fast
      // maxRetriesPerRequest (1), ioredis fails the commands it was still waiting on, the SUBSCRIBE among them.
      await new Promise((resolve) => setTimeout(resolve, 700));
      await proxy.restore();
      let sent = 0;
      await until(
        async () => {
          await publishing.publish('events', `after-${(sent += 1)}`);
          return received.some((message) => message.startsWith('after-'));
        },
        10_000,
        'a message after the reconnection',
      );
      expect(rejections.seen).toEqual([]);
    } finally {
      rejections.stop();
    }
  });
});
