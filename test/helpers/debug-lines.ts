import { format } from 'node:util';
import createDebug from 'debug';

/**
 * Collects what the kit says on its `debug` channels (`express-sso-kit:<area>`) while `run` runs, as the text a
 * developer would read with `DEBUG=express-sso-kit:*`.
 *
 * @example
 * const lines = await debugLines('session', () => request(app).get('/me').set('Cookie', cookie));
 */
export async function debugLines(area: string, run: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const previousNamespaces = createDebug.disable();
  const previousLog = createDebug.log;
  createDebug.log = (...args: unknown[]) => {
    lines.push(format(...args));
  };
  createDebug.enable(`express-sso-kit:${area}`);
  try {
    await run();
  } finally {
    createDebug.disable();
    createDebug.log = previousLog;
    if (previousNamespaces) createDebug.enable(previousNamespaces);
  }
  return lines;
}
