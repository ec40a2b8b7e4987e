/**
 * Stopping one of the launcher's child processes (a site, the docs site) the same way for each.
 */
import type { ChildProcess } from 'node:child_process';

/**
 * Asks `child` to stop (SIGTERM) and kills it if it has not stopped after `graceMs`; resolves once it has exited.
 * Does nothing for a process that has exited already.
 *
 * @example
 * async stop() { await stopChild(child, exited); }
 */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  child.kill('SIGTERM');
  await exited;
  clearTimeout(timer);
}
