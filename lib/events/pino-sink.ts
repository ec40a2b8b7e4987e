import pino, { type DestinationStream, type Logger } from 'pino';
import { checkOptions, within, type OptionSchema } from '../util/options';
import type { SecurityEvent } from './security-event';
import type { SecurityEventSink, SinkReporter } from './sink-queue';

/** Options of {@link pinoSink}. */
export interface PinoSinkOptions {
  /**
   * Where the JSON lines go: a file descriptor (default 2, stderr) written without blocking through pino's
   * buffered destination, or any writable stream (a file, a pino transport, `process.stdout`).
   */
  destination?: number | NodeJS.WritableStream | DestinationStream;
  /** pino's `name`, on every line (e.g. the site, so several apps can share one stderr). Default none. */
  name?: string;
  /**
   * Bytes buffered for a file descriptor that cannot keep up (a stalled pipe); lines beyond are dropped and
   * counted, so a stuck log reader never grows memory or stalls requests. Default 4 MiB.
   */
  bufferBytes?: number;
  /** Names the sink in metrics. Default `stderr` (or `log` for another destination). */
  sinkName?: string;
}

const SCHEMA: OptionSchema = {
  destination: { type: ['integer', 'object'], expected: 'a file descriptor or a writable stream' },
  name: { type: 'string' },
  bufferBytes: { type: 'integer', expected: 'a number of bytes from 65536 to 1073741824', check: within(65_536, 1_073_741_824) },
  sinkName: { type: 'string', check: (name: string) => (/^[a-z0-9_-]{1,40}$/.test(name) ? undefined : 'must be a short lower-case name') },
};

/** pino levels: a success is `info` (30), a refusal `warn` (40), an internal error `error` (50). */
function levelOf(event: SecurityEvent): 'info' | 'warn' | 'error' {
  if (event.type === 'error.internal' || event.type === 'store.unavailable') return 'error';
  return event.outcome === 'success' ? 'info' : 'warn';
}

/**
 * Security events as JSON lines through pino, one line per event, readable by pino's tools (`pino-pretty`) and
 * the usual log shippers: pino's numeric `level`, `pid`, `hostname` (and `name`), the event's own fields with its
 * ISO-8601 `time`, and `msg` as `<type> <reason>`. By default the lines go to stderr without blocking; a reader that
 * falls behind loses lines beyond `bufferBytes`, counted as dropped.
 *
 * @example
 * const events = securityEvents({ app: 'shop', sinks: [pinoSink({ name: 'shop' })] });
 */
export function pinoSink(options: PinoSinkOptions = {}): SecurityEventSink {
  checkOptions('pinoSink', options, SCHEMA);
  let reporter: SinkReporter | undefined;
  const target = options.destination ?? 2;
  let destination: DestinationStream;
  if (typeof target === 'number') {
    const buffered = pino.destination({ dest: target, sync: false, maxLength: options.bufferBytes ?? 4 * 1024 * 1024 });
    buffered.on('drop', () => reporter?.dropped(1, 'overflow'));
    destination = buffered;
  } else {
    destination = target as DestinationStream;
  }
  const logger: Logger = pino(
    {
      // The event carries its own time (when it happened, not when it was written).
      timestamp: false,
      ...(options.name === undefined ? {} : { name: options.name }),
    },
    destination,
  );
  return {
    name: options.sinkName ?? (typeof target === 'number' ? (target === 2 ? 'stderr' : `fd-${target}`) : 'log'),
    bind(queueReporter) {
      reporter = queueReporter;
    },
    write(batch) {
      for (const event of batch) logger[levelOf(event)](event, `${event.type} ${event.reason}`);
    },
    close() {
      return new Promise<void>((resolve) => logger.flush(() => resolve()));
    },
  };
}
