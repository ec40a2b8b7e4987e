/**
 * The demo's front door: one port for the browser, routing each request by its Host to the site's own process,
 * the way the Caddy proxy of docker-compose.yml does. It keeps the Host header and sets X-Forwarded-For and
 * X-Forwarded-Proto (replacing what a client sent), which the sites trust from loopback (`trust proxy`).
 */
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

/** Options of {@link startFrontDoor}. */
export interface FrontDoorOptions {
  port: number;
  host: string;
  /** Parent domain: `shop.<domain>` goes to the site named `shop`. */
  domain: string;
  /** Serve https with this certificate (for `*.<domain>`); the sites then see X-Forwarded-Proto: https. */
  tls?: { key: Buffer; cert: Buffer };
}

/** A listening front door. */
export interface FrontDoor {
  port: number;
  /** Sends `<site>.<domain>` to the site's process listening on 127.0.0.1:`port`. */
  route(site: string, port: number): void;
  /** Sends a host outside the parent domain (the partner's own domain) to the process listening on `port`. */
  routeHost(hostname: string, port: number): void;
  close(): Promise<void>;
}

// Hop-by-hop headers belong to one connection, not to the message (RFC 9110, section 7.6.1).
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

function refuse(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' });
  res.end(`${text}\n`);
}

/**
 * Starts the front door. Requests for a host that is no site answer 404; a site that does not answer, 502.
 *
 * @example
 * const door = await startFrontDoor({ port: 8080, host: '127.0.0.1', domain: 'sso.localhost' });
 * door.route('shop', 41873);
 */
export async function startFrontDoor(options: FrontDoorOptions): Promise<FrontDoor> {
  const suffix = `.${options.domain.toLowerCase()}`;
  const routes = new Map<string, number>();
  const hostRoutes = new Map<string, number>();
  const agent = new Agent({ keepAlive: true });
  const scheme = options.tls ? 'https' : 'http';

  function forward(req: IncomingMessage, res: ServerResponse): void {
    const host = (req.headers.host ?? '').toLowerCase();
    const hostname = host.replace(/:\d+$/, '');
    const site = hostname.endsWith(suffix) ? hostname.slice(0, -suffix.length) : '';
    const port = hostRoutes.get(hostname) ?? routes.get(site);
    if (port === undefined) {
      refuse(res, 404, 'No demo site answers for this host.');
      return;
    }
    const headers = { ...req.headers };
    for (const name of HOP_BY_HOP) delete headers[name];
    headers['x-forwarded-for'] = req.socket.remoteAddress ?? '';
    headers['x-forwarded-proto'] = scheme;
    delete headers['x-forwarded-host'];
    const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent }, (answer) => {
      const answerHeaders = { ...answer.headers };
      for (const name of HOP_BY_HOP) delete answerHeaders[name];
      res.writeHead(answer.statusCode ?? 502, answerHeaders);
      // Server-Sent Events (the QR page's status) must reach the browser as they come.
      res.flushHeaders();
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) refuse(res, 502, `The ${site} site is not answering.`);
      else res.destroy();
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  }

  const server: Server = options.tls
    ? (createTlsServer({ key: options.tls.key, cert: options.tls.cert }, forward) as unknown as Server)
    : createServer(forward);
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    route: (site, port) => routes.set(site.toLowerCase(), port),
    routeHost: (hostname, port) => hostRoutes.set(hostname.toLowerCase(), port),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
