/**
 * The docs site of `npm run demo`: a site that is not Node (`python3 example-app/launcher/docs_site.py`) serving the
 * static files of example-app/docs-site on a private loopback port, as Caddy does in the compose demo. Its lines are
 * prefixed `[docs ]`; it exits when the launcher stops it or when the launcher is gone (its stdin closes).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stopChild } from './stop-child';

/** The docs site's running process. */
export interface DocsProcess {
  pid: number;
  port: number;
  /** Resolves with the exit code (or signal name) when the process ends, for whatever reason. */
  exited: Promise<number | string>;
  /** Asks the process to stop (SIGTERM), and kills it if it has not stopped after 5 s. */
  stop(): Promise<void>;
}

/**
 * Starts the docs site; resolves to undefined (after one line saying so) when `python3` is not there.
 *
 * @example
 * const docs = await startDocsSite(console.log);
 * if (docs) frontDoor.routeHost(`docs.${domain}`, docs.port, { forwardAuthPort: authPort });
 */
export async function startDocsSite(
  log: (line: string) => void,
  python = process.env.DEMO_PYTHON || 'python3',
): Promise<DocsProcess | undefined> {
  const root = join(__dirname, '..', 'docs-site');
  const child = spawn(python, [join(__dirname, 'docs_site.py'), root], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
    child.once('error', () => resolve('error'));
  });
  const port = await new Promise<number | undefined>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      log(`[demo ] no ${python} (${error.code ?? error.message}): the docs site is skipped`);
      resolve(undefined);
    });
    void exited.then((code) => {
      if (code !== 'error') log(`[demo ] the docs site exited (${code}) before it listened: skipped`);
      resolve(undefined);
    });
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        const match = /^docs listening on .*:(\d+)$/.exec(line);
        if (match) resolve(Number(match[1]));
        log(`[docs ] ${line}`);
      });
    }
  });
  if (port === undefined) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) child.kill('SIGKILL');
    return undefined;
  }
  return {
    pid: child.pid ?? -1,
    port,
    exited,
    stop: () => stopChild(child, exited),
  };
}
