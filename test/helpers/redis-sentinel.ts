import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { freePort } from './redis';

/** One redis-server process of the harness that a test can kill and start again on the same port. */
export interface SentinelNode {
  port: number;
  start(): Promise<void>;
  /** Kills the process with SIGKILL: a crash, not a clean shutdown. */
  stop(): Promise<void>;
}

/** A master, one replica and three sentinels on loopback, in a temporary directory. */
export interface RedisSentinelHarness {
  /** The monitored master's name, for `createRedisConnection({ sentinel: { name, sentinels } })`. */
  name: string;
  sentinels: Array<{ host: string; port: number }>;
  /** The data nodes as started: `nodes[0]` is the first master, `nodes[1]` its replica. Roles change on failover. */
  nodes: [SentinelNode, SentinelNode];
  /** The port of the node the sentinels currently call master. */
  currentMasterPort(): Promise<number>;
  /** The data node that is master right now, according to the sentinels. */
  currentMaster(): Promise<SentinelNode>;
  /** Resolves once the sentinels name a master other than `previousPort` and it accepts writes. */
  waitForFailover(previousPort: number, timeoutMs?: number): Promise<number>;
  /** Stops every process and deletes the temporary directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** Options of {@link startRedisSentinel}. */
export interface RedisSentinelOptions {
  /** Master name the sentinels monitor. Default `ssomaster`. */
  name?: string;
  /** How long a master must be silent before a sentinel calls it down. Default 1000 ms. */
  downAfterMs?: number;
  /** Sentinel failover-timeout. Default 3000 ms. */
  failoverTimeoutMs?: number;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`redis sentinel: ${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function ask(port: number, ...command: string[]): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    commandTimeout: 1000,
  });
  client.on('error', () => undefined);
  // A client that never connected holds nothing; calling disconnect() on it would start a 2 s ioredis timer that
  // outlives the test. One that did connect is closed with QUIT, which ends the socket at once.
  await client.connect();
  try {
    return await client.call(command[0]!, ...command.slice(1));
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}

/** Turns SENTINEL MASTER's flat [key, value, key, value…] reply into a record. */
function pairs(reply: unknown): Record<string, string> {
  const list = Array.isArray(reply) ? (reply as unknown[]).map(String) : [];
  const record: Record<string, string> = {};
  for (let index = 0; index + 1 < list.length; index += 2) record[list[index]!] = list[index + 1]!;
  return record;
}

function processNode(port: number, args: () => string[]): SentinelNode {
  let child: ChildProcess | undefined;
  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  };
  return {
    port,
    async start() {
      if (child) return;
      child = spawn('redis-server', args(), { stdio: 'ignore' });
      await waitFor(async () => (await ask(port, 'PING')) === 'PONG', 5000, `port ${port} answering PING`);
    },
    stop,
  };
}

/**
 * Starts a Redis master, one replica and three sentinels (quorum 2) with generated configuration files, and waits
 * until every sentinel knows the replica and the other sentinels, so a failover can actually happen.
 *
 * @example
 * const sentinel = await startRedisSentinel();
 * const client = createRedisConnection({ sentinel: { name: sentinel.name, sentinels: sentinel.sentinels } });
 * await (await sentinel.currentMaster()).stop();
 * await sentinel.waitForFailover(sentinel.nodes[0].port);
 */
export async function startRedisSentinel(options: RedisSentinelOptions = {}): Promise<RedisSentinelHarness> {
  const name = options.name ?? 'ssomaster';
  const downAfterMs = options.downAfterMs ?? 1000;
  const failoverTimeoutMs = options.failoverTimeoutMs ?? 3000;
  const dir = await mkdtemp(join(tmpdir(), 'sso-redis-sentinel-'));
  const processes: SentinelNode[] = [];
  let stopped = false;

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await Promise.all(processes.map((node) => node.stop()));
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const masterPort = await freePort();
    let replicaPort = await freePort();
    while (replicaPort === masterPort) replicaPort = await freePort();
    const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
    // A (re)started data node joins as a replica of whoever is master now. The sentinels would reconfigure it
    // anyway, but starting it as a replica avoids a window in which two nodes accept writes.
    let knownMasterPort = masterPort;
    const dataNodeArgs = (port: number) => (): string[] => [
      '--port',
      String(port),
      ...common,
      ...(port === knownMasterPort ? [] : ['--replicaof', '127.0.0.1', String(knownMasterPort)]),
    ];
    const master = processNode(masterPort, dataNodeArgs(masterPort));
    const replica = processNode(replicaPort, dataNodeArgs(replicaPort));
    processes.push(master, replica);
    await master.start();
    await replica.start();
    await waitFor(
      async () => String(await ask(replicaPort, 'INFO', 'replication')).includes('master_link_status:up'),
      10_000,
      'replica link up',
    );

    const sentinelPorts: number[] = [];
    for (let index = 0; index < 3; index += 1) {
      let port = await freePort();
      while ([masterPort, replicaPort, ...sentinelPorts].includes(port)) port = await freePort();
      sentinelPorts.push(port);
      const file = join(dir, `sentinel-${port}.conf`);
      await writeFile(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
          `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const sentinel = processNode(port, () => [file, '--sentinel']);
      processes.push(sentinel);
      await sentinel.start();
    }
    for (const port of sentinelPorts) {
      await waitFor(
        async () => {
          const info = pairs(await ask(port, 'SENTINEL', 'MASTER', name));
          return info['num-slaves'] === '1' && info['num-other-sentinels'] === '2';
        },
        15_000,
        `sentinel ${port} discovering the replica and the other sentinels`,
      );
    }

    const dataNodes = [master, replica] as const;
    const currentMasterPort = async (): Promise<number> => {
      for (const port of sentinelPorts) {
        try {
          const reply = await ask(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name);
          if (Array.isArray(reply) && reply[1] !== undefined) return Number(reply[1]);
        } catch {
          // This sentinel is not answering; ask the next one.
        }
      }
      throw new Error('redis sentinel: no sentinel answered GET-MASTER-ADDR-BY-NAME');
    };
    const currentMaster = async (): Promise<SentinelNode> => {
      const port = await currentMasterPort();
      const node = dataNodes.find((candidate) => candidate.port === port);
      if (!node) throw new Error(`redis sentinel: master port ${port} is not one of the harness nodes`);
      return node;
    };
    const waitForFailover = async (previousPort: number, timeoutMs = 20_000): Promise<number> => {
      let promoted = previousPort;
      await waitFor(
        async () => {
          promoted = await currentMasterPort();
          if (promoted === previousPort) return false;
          return String(await ask(promoted, 'INFO', 'replication')).includes('role:master');
        },
        timeoutMs,
        `failover away from port ${previousPort}`,
      );
      knownMasterPort = promoted;
      return promoted;
    };

    return {
      name,
      sentinels: sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
      nodes: [master, replica],
      currentMasterPort,
      currentMaster,
      waitForFailover,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
