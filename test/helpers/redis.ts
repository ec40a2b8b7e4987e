import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import Redis, { Cluster } from 'ioredis';
import { createRedisConnection, RedisStore, type RedisClient } from '../../lib/store';

/**
 * The Redis the integration suite runs against. By default the machine's Redis on 127.0.0.1:6379; with
 * SSO_TEST_REDIS_CLUSTER="host:port,host:port" the same suite runs against a Redis Cluster.
 * Every store gets a fresh random prefix, so a run never depends on (or disturbs) what the instance holds.
 */
export function testRedisClient(): RedisClient {
  const cluster = process.env.SSO_TEST_REDIS_CLUSTER;
  if (cluster) {
    const nodes = cluster.split(',').map((address) => {
      const [host = '127.0.0.1', port = '6379'] = address.split(':');
      return { host, port: Number(port) };
    });
    return createRedisConnection({ cluster: { nodes } });
  }
  return createRedisConnection(process.env.SSO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
}

/** A unique key prefix for one test file or case. */
export function testPrefix(label = 'test'): string {
  return `ssotest:${label}:${randomBytes(6).toString('hex')}:`;
}

/** A RedisStore over a fresh connection and a fresh prefix; `cleanup()` deletes its keys and closes it. */
export async function testRedisStore(
  label?: string,
): Promise<{ store: RedisStore; client: RedisClient; prefix: string; cleanup: () => Promise<void> }> {
  const client = testRedisClient();
  const prefix = testPrefix(label);
  const store = new RedisStore(client, { prefix });
  await store.ping();
  return {
    store,
    client,
    prefix,
    cleanup: async () => {
      await deleteByPrefix(client, prefix);
      await store.close();
      await client.quit().catch(() => client.disconnect());
    },
  };
}

/** Escapes the glob characters of SCAN MATCH (`*`, `?`, `[`, `]` and backslash), so a prefix matches only itself. */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
}

/**
 * Every key that starts with `prefix`, sorted, read with SCAN from every master of a Cluster (KEYS or a single
 * SCAN on a Cluster client reads one node only, so it would miss keys of the other masters).
 *
 * @example
 * const keys = await keysByPrefix(redis.client, `${redis.prefix}privacy:`);
 */
export async function keysByPrefix(client: RedisClient, prefix: string): Promise<string[]> {
  let nodes: Redis[] = [client as Redis];
  if (client instanceof Cluster) {
    // The node list is empty until the client has loaded the slot map; a command waits for that.
    if (client.status !== 'ready') await client.ping();
    nodes = client.nodes('master');
    if (nodes.length === 0) throw new Error('keysByPrefix: the Cluster client knows no master node');
  }
  const keys = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', `${globLiteral(prefix)}*`, 'COUNT', 500);
      cursor = next;
      // SCAN may return a key twice; the set keeps one.
      for (const key of batch) keys.add(key);
    } while (cursor !== '0');
  }
  return [...keys].sort();
}

/** Deletes every key under a prefix (on every master of a Cluster), one DEL per key so no command spans slots. */
export async function deleteByPrefix(client: RedisClient, prefix: string): Promise<void> {
  for (const key of await keysByPrefix(client, prefix)) await client.del(key);
}

/** True when nothing listens on `port` of the loopback address right now. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

// Test servers take random ports below the kernel's ephemeral range (32768 and up on Linux), with their Cluster bus
// ports (+10000) below it too. A port from `listen(0)` is ephemeral: the kernel hands recently released ones out
// again, so a node that a test stops and restarts on its port could find another test's server there.
const TEST_PORTS_FROM = 10_000;
const TEST_PORTS_COUNT = 10_000;

/** A random port in the tests' range that nobody listens on right now. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = TEST_PORTS_FROM + randomInt(TEST_PORTS_COUNT);
    if (await isPortFree(port)) return port;
  }
  throw new Error(`no free port found in ${TEST_PORTS_FROM}-${TEST_PORTS_FROM + TEST_PORTS_COUNT - 1} after 200 tries`);
}

/** A private redis-server the test starts, stops and restarts (on the same port) to simulate outages. */
export interface PrivateRedis {
  port: number;
  url: string;
  /** Starts the server again after `stop()`; does nothing while it is still running. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Pauses the server for `seconds` with DEBUG SLEEP, simulating a Redis that answers slowly. */
  sleep(seconds: number): Promise<void>;
}

/** Whether a Redis on this port answers PING within `millis` (a raw socket, so no client library timers linger). */
function answersWithin(port: number, millis: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(millis, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
  });
}

/** Whether a Redis on this port answers PING within half a second. */
function pingOnce(port: number): Promise<boolean> {
  return answersWithin(port, 500);
}

async function waitForPing(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pingOnce(port))) {
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Starts a redis-server on a free loopback port, without persistence. DEBUG is allowed from loopback
 * (`--enable-debug-command local`, which Redis 7 requires for `sleep()`) unless `extraArgs` sets it otherwise.
 *
 * @example
 * const redis = await startPrivateRedis();
 * await redis.stop(); // an outage
 * await redis.start(); // back, empty
 */
export async function startPrivateRedis(extraArgs: string[] = []): Promise<PrivateRedis> {
  const port = await freePort();
  const debugArgs = extraArgs.includes('--enable-debug-command') ? [] : ['--enable-debug-command', 'local'];
  // No persistence, and a working directory outside the checkout, so no run leaves a dump file behind.
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    tmpdir(),
    ...debugArgs,
    ...extraArgs,
  ];
  let child: ChildProcess | undefined;
  const isRunning = (server: ChildProcess | undefined): server is ChildProcess =>
    server !== undefined && server.exitCode === null && server.signalCode === null;
  const redis: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      // A second process could not bind the port and would exit, leaving the first one running but forgotten,
      // so stop() would no longer end it.
      if (isRunning(child)) return;
      child = spawn('redis-server', args, { stdio: 'ignore' });
      // One that does not answer in time is stopped before the error goes up: whoever started it gets no handle
      // (startPrivateRedis throws), and the process would outlive the test run.
      await waitForPing(port, 5000).catch(async (error: unknown) => {
        await redis.stop();
        throw error;
      });
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!isRunning(running)) return;
      await new Promise<void>((resolve) => {
        running.once('exit', () => resolve());
        running.kill('SIGKILL');
      });
    },
    async sleep(seconds: number) {
      const admin = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
      admin.on('error', () => undefined);
      // DEBUG SLEEP blocks the server; do not await its reply.
      void admin
        .call('DEBUG', 'SLEEP', String(seconds))
        .catch(() => undefined)
        .finally(() => admin.disconnect());
      // On a loaded machine the command may reach the server late: return only once the server stopped answering.
      const deadline = Date.now() + 2000;
      while (Date.now() < deadline && (await answersWithin(port, 100))) await new Promise((resolve) => setTimeout(resolve, 10));
    },
  };
  await redis.start();
  return redis;
}
