import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

/** An answer read off the wire. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends one request written by hand, byte for byte, for what an HTTP client library would tidy away: back slashes,
 * dot segments, absolute-form targets, HTTP/1.0 without Host. The connection is closed after the answer.
 *
 * @example
 * const answer = await rawHttp(server, 'GET /assets\\..\\audit HTTP/1.1', { Host: 'admin.example.test' });
 */
export async function rawHttp(server: Server, requestLine: string, headers: Record<string, string>): Promise<RawAnswer> {
  const fields = Object.entries({ Connection: 'close', ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () =>
      socket.write(`${requestLine}\r\n${fields.join('')}\r\n`),
    );
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('end', () => resolve(received));
    socket.on('error', reject);
  });
  const split = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = (split === -1 ? text : text.slice(0, split)).split('\r\n');
  const answerHeaders: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) answerHeaders[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers: answerHeaders, body: split === -1 ? '' : text.slice(split + 4) };
}

/**
 * Listens on a free loopback port, for {@link rawHttp}.
 *
 * @example
 * const server = await listening(app);
 */
export function listening(app: { listen(port: number, host: string, callback: () => void): Server }): Promise<Server> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}
