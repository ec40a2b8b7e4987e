/**
 * Each site of the demo as its own Node process (`node --import tsx example-app/<site>/<site>.ts`), as it would
 * run in production: its output prefixed with its name, its port read from its "listening on" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import type { SiteName } from '../common/config';
import { stopChild } from './stop-child';

/** A site's running process. */
export interface SiteProcess {
  site: SiteName;
  pid: number;
  /** Resolves to the port once the site listens; rejects if it exits first. */
  ready: Promise<number>;
  /** Resolves with the exit code (or signal name) when the process ends, for whatever reason. */
  exited: Promise<number | string>;
  /** Asks the process to stop (SIGTERM), and kills it if it has not stopped after 5 s. */
  stop(): Promise<void>;
}

const TSX = pathToFileURL(require.resolve('tsx')).href;
const WIDTH = 5;

/**
 * Starts one site's process with the demo's environment; its lines go to `log` as `[shop ] …`.
 *
 * @example
 * const shop = spawnSite('shop', { DEMO_SECRET, REDIS_URL, PORT: '0' }, console.log);
 * const port = await shop.ready;
 */
export function spawnSite(site: SiteName, env: Record<string, string>, log: (line: string) => void): SiteProcess {
  const file = join(__dirname, '..', site, `${site}.ts`);
  // The IPC channel lets the site notice when the launcher is gone, however it ended, and stop too.
  const child: ChildProcess = spawn(process.execPath, ['--import', TSX, file], {
    cwd: join(__dirname, '..', '..'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const prefix = `[${site.padEnd(WIDTH)}]`;
  let resolveReady: (port: number) => void = () => undefined;
  let rejectReady: (error: Error) => void = () => undefined;
  const ready = new Promise<number>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  // Awaited by the launcher; this keeps an early exit during shutdown from being an unhandled rejection.
  ready.catch(() => undefined);
  const listening = new RegExp(`^${site} listening on .*:(\\d+)$`);
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream! }).on('line', (line) => {
      const match = listening.exec(line);
      if (match) resolveReady(Number(match[1]));
      log(`${prefix} ${line}`);
    });
  }
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      rejectReady(new Error(`the ${site} site exited (${code ?? signal}) before it listened`));
      resolve(code ?? signal ?? 'unknown');
    });
  });
  return {
    site,
    pid: child.pid ?? -1,
    ready,
    exited,
    stop: () => stopChild(child, exited),
  };
}
