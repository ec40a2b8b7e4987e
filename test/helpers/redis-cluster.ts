import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createRedisConnection, hashSlot } from '../../lib/store';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Redis, { type Cluster } from 'ioredis';
import { deleteByPrefix, freePort, isPortFree } from './redis';

const run = promisify(execFile);

/** A throw-away Redis Cluster of masters without replicas, on loopback ports chosen at start. */
export interface RedisClusterHarness {
  /** The masters' addresses, usable as ioredis Cluster seed nodes. */
  nodes: Array<{ host: string; port: number }>;
  /** The same list as `host:port,host:port`, the format `SSO_TEST_REDIS_CLUSTER` expects. */
  seeds: string;
  /** Stops every node and deletes the temporary directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** How many masters; Redis needs at least 3. Default 3. */
  masters?: number;
  /** How long to wait for `cluster_state:ok`, in milliseconds. Default 20000. */
  readyTimeoutMs?: number;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function ask(port: number, ...command: string[]): Promise<string> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  client.on('error', () => undefined);
  // A client that never connected holds nothing; calling disconnect() on it would start a 2 s ioredis timer that
  // outlives the test. One that did connect is closed with QUIT, which ends the socket at once.
  await client.connect();
  try {
    return String(await client.call(command[0]!, ...command.slice(1)));
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/**
 * Starts a Redis Cluster from the `redis-server` binary in a temporary directory and waits until every node
 * reports `cluster_state:ok`. Nothing is persisted; `stop()` removes every trace.
 *
 * @example
 * const cluster = await startRedisCluster();
 * const client = createRedisConnection({ cluster: { nodes: cluster.nodes } });
 * // …
 * await client.quit();
 * await cluster.stop();
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterHarness> {
  const masters = options.masters ?? 3;
  if (!Number.isInteger(masters) || masters < 3) {
    throw new TypeError(`startRedisCluster: masters must be an integer of at least 3 (Redis Cluster needs 3), got ${masters}`);
  }
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const dir = await mkdtemp(join(tmpdir(), 'sso-redis-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  let stopped = false;

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await Promise.all(children.map(stopProcess));
    await rm(dir, { recursive: true, force: true });
  };

  try {
    for (let index = 0; index < masters; index += 1) {
      // Ports are picked one by one right before use; a node's cluster bus listens on port + 10000.
      let port = await freePort();
      while (ports.includes(port) || !(await isPortFree(port + 10_000))) port = await freePort();
      ports.push(port);
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '2000',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        { stdio: 'ignore' },
      );
      children.push(child);
    }
    for (const port of ports) {
      await waitFor(async () => (await ask(port, 'PING')) === 'PONG', 5000, `node ${port} answering PING`);
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    for (const port of ports) {
      await waitFor(
        async () => (await ask(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'),
        readyTimeoutMs,
        `cluster_state:ok on node ${port}`,
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }

  const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  return { nodes, seeds: nodes.map(({ host, port }) => `${host}:${port}`).join(','), stop };
}

/**
 * The Redis Cluster hash slot of a key: the kit's own `hashSlot`, re-exported for the cluster tests, which check it
 * against the server's `CLUSTER KEYSLOT`.
 *
 * @example
 * keySlot('qr:{abc}:state') === keySlot('qr:{abc}:code'); // true
 */
export const keySlot = hashSlot;

/** One command seen by {@link recordKeySlots}: its name, the keys it touched and their hash slots. */
export interface RecordedCommand {
  name: string;
  keys: string[];
  slots: number[];
}

/**
 * Records every command a Cluster client sends, with the hash slot of each key, so a test can assert that no
 * command touches keys of two slots (which a Cluster answers with CROSSSLOT) and list the key shapes in use.
 *
 * @example
 * const recorder = recordKeySlots(cluster);
 * await runFlows();
 * expect(recorder.crossSlot()).toEqual([]);
 * recorder.stop();
 */
export function recordKeySlots(client: Cluster): { commands: RecordedCommand[]; crossSlot(): RecordedCommand[]; stop(): void } {
  const commands: RecordedCommand[] = [];
  // The Cluster client re-enters sendCommand for one command (e.g. once its slot map is ready); count it once.
  const seen = new WeakSet<object>();
  const original = client.sendCommand;
  const patched: typeof original = function sendCommandRecorded(this: Cluster, command, ...rest) {
    if (seen.has(command)) return original.call(this, command, ...rest);
    seen.add(command);
    const keys = command.getKeys().map(String);
    commands.push({ name: command.name.toLowerCase(), keys, slots: keys.map((key) => keySlot(key)) });
    return original.call(this, command, ...rest);
  };
  client.sendCommand = patched;
  return {
    commands,
    crossSlot: () => commands.filter((command) => new Set(command.slots).size > 1),
    stop: () => {
      client.sendCommand = original;
    },
  };
}

/** A Cluster client for one test file, and what ends it. */
export interface TestCluster {
  client: Cluster;
  /** The seed nodes the client started from. */
  seeds: Array<{ host: string; port: number }>;
  /** Deletes every key under `prefix`, closes the client and stops the cluster this file started, if any. */
  stop(prefix: string): Promise<void>;
}

/**
 * A Cluster client: on the cluster scripts/test-cluster.sh gives (SSO_TEST_REDIS_CLUSTER), or on one this file
 * starts and stops.
 *
 * @example
 * const cluster = await openTestCluster();
 * afterAll(() => cluster.stop(prefix));
 */
export async function openTestCluster(): Promise<TestCluster> {
  const given = process.env.SSO_TEST_REDIS_CLUSTER;
  const harness = given ? undefined : await startRedisCluster();
  const seeds = given
    ? given.split(',').map((address) => ({ host: address.split(':')[0] ?? '127.0.0.1', port: Number(address.split(':')[1]) }))
    : harness!.nodes;
  const client = createRedisConnection({ cluster: { nodes: seeds } }) as Cluster;
  return {
    client,
    seeds,
    async stop(prefix: string) {
      await deleteByPrefix(client, prefix);
      await client.quit().catch(() => client.disconnect());
      await harness?.stop();
    },
  };
}
