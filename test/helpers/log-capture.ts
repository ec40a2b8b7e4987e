import { format } from 'node:util';
import createDebug from 'debug';

/** Where a captured line was written. */
export type LogSource = 'console.log' | 'console.info' | 'console.warn' | 'console.error' | 'console.debug' | 'stdout' | 'stderr' | 'debug';

/** One captured line. */
export interface CapturedLine {
  source: LogSource;
  text: string;
}

/** What {@link captureLogs} returns. */
export interface LogCapture {
  /** Every line captured so far, in order. */
  readonly lines: readonly CapturedLine[];
  /** The lines written to `debug` channels (`express-sso-kit:<area> …`). */
  debugLines(area?: string): string[];
  /** Lines (of any source) that contain `needle`. */
  containing(needle: string): CapturedLine[];
  /** Forgets what was captured so far; capturing goes on. */
  clear(): void;
  /** Restores console, stdout, stderr and the debug settings as they were. */
  stop(): void;
}

export interface LogCaptureOptions {
  /** Debug namespaces to enable while capturing. Default `express-sso-kit:*`; `false` leaves debug as it is. */
  debug?: string | false;
  /** Also write what is captured to where it was going. Default false (the test output stays quiet). */
  passThrough?: boolean;
}

const CONSOLE_METHODS = ['log', 'info', 'warn', 'error', 'debug'] as const;

/**
 * Captures everything the process logs while a test runs: `console.*`, raw writes to `process.stdout` and
 * `process.stderr`, and the `debug` package's output with `DEBUG=express-sso-kit:*` switched on (the kit's
 * channels say why a request was refused). Meant for asserting what logs do and do not contain.
 *
 * @example
 * const logs = captureLogs();
 * try { await runJourney(); } finally { logs.stop(); }
 * expect(logs.containing(password)).toEqual([]);
 */
export function captureLogs(options: LogCaptureOptions = {}): LogCapture {
  const lines: CapturedLine[] = [];
  const record = (source: LogSource, text: string) => {
    for (const line of text.split('\n')) if (line !== '') lines.push({ source, text: line });
  };

  const consoleOriginals = CONSOLE_METHODS.map((method) => [method, console[method]] as const);
  for (const method of CONSOLE_METHODS) {
    const original = console[method];
    console[method] = (...args: unknown[]) => {
      record(`console.${method}`, format(...args));
      if (options.passThrough) original.apply(console, args);
    };
  }

  const streams = [
    ['stdout', process.stdout],
    ['stderr', process.stderr],
  ] as const;
  const streamOriginals = streams.map(([, stream]) => stream.write);
  for (const [source, stream] of streams) {
    const original = stream.write;
    stream.write = function captureWrite(chunk: unknown, ...rest: unknown[]): boolean {
      record(source, Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk));
      if (options.passThrough) return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    } as typeof stream.write;
  }

  const debugLog = createDebug.log;
  let previousNamespaces: string | undefined;
  if (options.debug !== false) {
    previousNamespaces = createDebug.disable();
    createDebug.enable([previousNamespaces, options.debug ?? 'express-sso-kit:*'].filter(Boolean).join(','));
    createDebug.log = (...args: unknown[]) => {
      record('debug', format(...args));
      if (options.passThrough) (debugLog as (...a: unknown[]) => void)(...args);
    };
  }

  return {
    lines,
    debugLines(area?: string) {
      const namespace = area === undefined ? 'express-sso-kit:' : `express-sso-kit:${area} `;
      return lines.filter((line) => line.source === 'debug' && line.text.includes(namespace)).map((line) => line.text);
    },
    containing(needle: string) {
      return lines.filter((line) => line.text.includes(needle));
    },
    clear() {
      lines.length = 0;
    },
    stop() {
      for (const [method, original] of consoleOriginals) console[method] = original;
      streams.forEach(([, stream], index) => {
        stream.write = streamOriginals[index] as typeof stream.write;
      });
      if (options.debug !== false) {
        createDebug.log = debugLog;
        createDebug.disable();
        if (previousNamespaces) createDebug.enable(previousNamespaces);
      }
    },
  };
}
