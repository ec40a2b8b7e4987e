import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the fake answers: normally, or as a broken service would. */
export type RangeServerMode = 'normal' | 'error' | 'slow' | 'garbage' | 'empty' | 'huge';

/** A local stand-in for the Pwned Passwords range API, on 127.0.0.1:0. */
export interface BreachRangeServer {
  /** The range URL to give `rangeBreachCheck({ url })`. */
  url: string;
  /** Every request's path and headers, in order. */
  requests: Array<{ path: string; headers: IncomingHttpHeaders }>;
  mode: RangeServerMode;
  close(): Promise<void>;
}

/** The upper-case hex SHA-1 of a password (UTF-8), as the range API indexes it. */
export function sha1Hex(password: string): string {
  return createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
}

/**
 * Starts a fake range API that knows `breached` (password → count). It answers `GET /range/<5 hex>` with the suffixes
 * of the known hashes under that prefix, and, when the request asks for padding, with `padded` fake suffixes of
 * count 0 (the real service's padding), plus any suffixes in `paddingFor` listed with count 0.
 *
 * @example
 * const range = await startBreachRangeServer(new Map([['hunter2hunter2', 42]]));
 * const check = rangeBreachCheck({ url: range.url });
 */
export async function startBreachRangeServer(
  breached: ReadonlyMap<string, number>,
  options: { paddingFor?: readonly string[] } = {},
): Promise<BreachRangeServer> {
  const hashes = new Map([...breached].map(([password, count]) => [sha1Hex(password), count]));
  const padded = new Set((options.paddingFor ?? []).map(sha1Hex));
  const state: BreachRangeServer = { url: '', requests: [], mode: 'normal', close: async () => undefined };
  const server: Server = createServer((req, res) => {
    state.requests.push({ path: req.url ?? '', headers: req.headers });
    const prefix = /^\/range\/([0-9A-F]{5})$/.exec(req.url ?? '')?.[1];
    if (!prefix) return void res.writeHead(400).end('The hash prefix was not in a valid format');
    if (state.mode === 'error') return void res.writeHead(503).end('busy');
    if (state.mode === 'slow') return void setTimeout(() => res.end(), 5_000).unref();
    if (state.mode === 'garbage') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('<html>maintenance</html>');
    if (state.mode === 'empty') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('');
    if (state.mode === 'huge')
      return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`${'0'.repeat(35)}:1\r\n`.repeat(40_000));
    const lines: string[] = [];
    for (const [hash, count] of hashes) if (hash.startsWith(prefix)) lines.push(`${hash.slice(5)}:${count}`);
    for (const hash of padded) if (hash.startsWith(prefix)) lines.push(`${hash.slice(5)}:0`);
    if (req.headers['add-padding'] === 'true') {
      for (let index = 0; index < 300; index += 1)
        lines.push(`${createHash('sha1').update(`pad-${prefix}-${index}`).digest('hex').slice(5).toUpperCase()}:0`);
    } else if (lines.length === 0) {
      lines.push(`${'F'.repeat(35)}:3`);
    }
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end(lines.join('\r\n'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/range/`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
