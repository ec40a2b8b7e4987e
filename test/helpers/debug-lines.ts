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

/**
 * Like {@link debugLines}, for what the kit says after the request has been answered (work it finishes in the
 * background): runs `run`, then keeps collecting until a line matches `until`, or `timeoutMs` has passed.
 *
 * @example
 * const lines = await debugLinesUntil('oidc', /back-channel logout/, () => agent.post('/logout'));
 */
export async function debugLinesUntil(area: string, until: RegExp, run: () => Promise<unknown>, timeoutMs = 20_000): Promise<string[]> {
  let matched: () => void = () => undefined;
  const seen = new Promise<void>((resolve) => (matched = resolve));
  const lines: string[] = [];
  const previousNamespaces = createDebug.disable();
  const previousLog = createDebug.log;
  createDebug.log = (...args: unknown[]) => {
    const line = format(...args);
    lines.push(line);
    if (until.test(line)) matched();
  };
  createDebug.enable(`express-sso-kit:${area}`);
  let timer: NodeJS.Timeout | undefined;
  try {
    await run();
    await Promise.race([seen, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  } finally {
    clearTimeout(timer);
    createDebug.disable();
    createDebug.log = previousLog;
    if (previousNamespaces) createDebug.enable(previousNamespaces);
  }
  return lines;
}
