/**
 * The Redis the demo's sites share. The sites are separate processes, so they need a real one: the given
 * `REDIS_URL` (which must answer), else the local Redis on 127.0.0.1:6379 when it answers, else a private
 * `redis-server` started for the run (no persistence, its directory a temporary one, so nothing lands in the
 * checkout), else, when no `redis-server` is installed, no Redis at all: the launcher then runs every site in its
 * own process on the in-memory store, and says so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisStore } from 'express-sso-kit';

/** Where the demo's data lives. */
export interface DemoRedis {
  /** `given`: REDIS_URL; `local`: the Redis on 127.0.0.1:6379; `embedded`: one started for this run; `memory`: none. */
  kind: 'given' | 'local' | 'embedded' | 'memory';
  /** The Redis URL; undefined for `memory`. */
  url: string | undefined;
  /** Stops the Redis this run started (and removes its directory); does nothing for the others. */
  stop(): Promise<void>;
}

/** Options of {@link provideRedis}. */
export interface ProvideRedisOptions {
  /** `REDIS_URL`: use this one; it must answer. */
  redisUrl?: string;
  /** `DEMO_REDIS`: `embedded` always starts a private redis-server, `memory` runs without Redis. */
  mode?: 'embedded' | 'memory';
  /** Where to look for a local Redis. Default `redis://127.0.0.1:6379`. */
  probeUrl?: string;
  /** The redis-server program. Default `redis-server` from the PATH. */
  redisServer?: string;
  log: (line: string) => void;
}

async function answers(url: string): Promise<boolean> {
  // A short disconnect timeout: a probe that finds nobody is dropped at once instead of lingering.
  const store = new RedisStore({ url, redisOptions: { disconnectTimeout: 10, maxRetriesPerRequest: 0 } });
  try {
    await store.ping();
    return true;
  } catch {
    return false;
  } finally {
    await store.close().catch(() => undefined);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
  });
}

/**
 * Starts a private redis-server on a free loopback port; resolves to undefined when the program is not installed.
 *
 * @example
 * const redis = await startEmbeddedRedis('redis-server');
 */
export async function startEmbeddedRedis(program = 'redis-server'): Promise<DemoRedis | undefined> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sso-demo-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const child: ChildProcess = spawn(program, args, { stdio: 'ignore' });
  const missing = await new Promise<boolean>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ENOENT'));
    child.once('spawn', () => resolve(false));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  if (missing) {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  const deadline = Date.now() + 5000;
  while (!(await pingOnce(port))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`${program} on port ${port} did not answer within 5 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { kind: 'embedded', url: `redis://127.0.0.1:${port}`, stop };
}

const none = async () => undefined;

/**
 * Finds or starts the Redis of this run, as the module comment describes.
 *
 * @example
 * const redis = await provideRedis({ redisUrl: process.env.REDIS_URL, log: console.log });
 */
export async function provideRedis(options: ProvideRedisOptions): Promise<DemoRedis> {
  if (options.redisUrl) {
    if (!(await answers(options.redisUrl))) throw new Error(`Redis at REDIS_URL (${options.redisUrl}) does not answer`);
    return { kind: 'given', url: options.redisUrl, stop: none };
  }
  if (options.mode === 'memory') return { kind: 'memory', url: undefined, stop: none };
  const probeUrl = options.probeUrl ?? 'redis://127.0.0.1:6379';
  if (options.mode !== 'embedded' && (await answers(probeUrl))) return { kind: 'local', url: probeUrl, stop: none };
  const embedded = await startEmbeddedRedis(options.redisServer);
  if (embedded) return embedded;
  if (options.mode === 'embedded') throw new Error('DEMO_REDIS=embedded, but no redis-server program is installed');
  options.log('No Redis answers and no redis-server is installed: every site runs in this one process on the in-memory');
  options.log('store. Sessions vanish when the demo stops. Install Redis (or set REDIS_URL) to run each site on its own.');
  return { kind: 'memory', url: undefined, stop: none };
}
