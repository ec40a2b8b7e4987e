/**
 * The demo's front door: one port for the browser, routing each request by its Host to the site's own process,
 * the way the Caddy proxy of docker-compose.yml does. It keeps the Host header and sets X-Forwarded-For and
 * X-Forwarded-Proto (replacing what a client sent), which the sites trust from loopback (`trust proxy`).
 */
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { passForwardAuth, withoutHopByHop } from './front-door-auth';

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
  /**
   * Sends a host (the partner's own domain, the docs site) to the process listening on `port`; with `forwardAuthPort`,
   * only after the portal listening there allows each request (see front-door-auth.ts).
   */
  routeHost(hostname: string, port: number, guard?: { forwardAuthPort: number }): void;
  close(): Promise<void>;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** True when the client prefers HTML (a browser navigation): `text/html` listed before any JSON or plain text. */
function wantsHtml(req: IncomingMessage): boolean {
  const accept = (req.headers.accept ?? '').toLowerCase();
  const html = accept.indexOf('text/html');
  return html !== -1 && [accept.indexOf('application/json'), accept.indexOf('text/plain')].every((other) => other === -1 || other > html);
}

/**
 * The front door's own answers (no site for this host, a site down): plain text for programs, and for a browser a
 * small page in the language and shape every other page of the demo has (`lang`, a title, one heading, a landmark),
 * with a link to the portal. No style or script, and a CSP that allows none.
 */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, title: string, text: string, home: string): void {
  const headers = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' };
  if (!wantsHtml(req)) {
    res.writeHead(status, { ...headers, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(`${text}\n`);
    return;
  }
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    'Referrer-Policy': 'no-referrer',
  });
  res.end(
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
      `<title>${escapeHtml(title)} · express-sso-kit demo</title></head><body><main><h1>${escapeHtml(title)}</h1>` +
      `<p>${escapeHtml(text)}</p><p><a href="${escapeHtml(home)}">Go to the login portal</a></p></main></body></html>\n`,
  );
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
  const guarded = new Map<string, number>();
  const agent = new Agent({ keepAlive: true });
  const scheme = options.tls ? 'https' : 'http';

  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const host = (req.headers.host ?? '').toLowerCase();
    const hostname = host.replace(/:\d+$/, '');
    const site = hostname.endsWith(suffix) ? hostname.slice(0, -suffix.length) : '';
    const port = hostRoutes.get(hostname) ?? routes.get(site);
    // The portal on the port the browser used (the front door's, as far as it can tell from the Host).
    const home = `${scheme}://auth.${options.domain}${/:\d+$/.exec(host)?.[0] ?? ''}/login`;
    if (port === undefined) {
      refuse(req, res, 404, 'No demo site here', 'No demo site answers for this host.', home);
      return;
    }
    const headers = withoutHopByHop(req.headers);
    headers['x-forwarded-for'] = req.socket.remoteAddress ?? '';
    headers['x-forwarded-proto'] = scheme;
    delete headers['x-forwarded-host'];
    const portalPort = guarded.get(hostname);
    const down = () => refuse(req, res, 503, 'Portal not answering', 'The login portal is not answering.', home);
    if (portalPort !== undefined && !(await passForwardAuth(req, res, headers, { portalPort, scheme, agent, down }))) return;
    // A kept-alive socket the site closed just as this request went out on it: a request without a body is sent
    // again, once, on a fresh socket (Node's documented remedy), rather than shown to the user as a 502.
    const bodiless = (req.method === 'GET' || req.method === 'HEAD') && !req.headers['content-length'] && !req.headers['transfer-encoding'];
    const send = (mayRetry: boolean): void => {
      const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
        // Server-Sent Events (the QR page's status) must reach the browser as they come.
        res.flushHeaders();
        answer.pipe(res);
      });
      upstream.on('error', (error: NodeJS.ErrnoException) => {
        if (mayRetry && upstream.reusedSocket && error.code === 'ECONNRESET' && !res.headersSent) return send(false);
        if (!res.headersSent) refuse(req, res, 502, 'Site not answering', `The ${site} site is not answering.`, home);
        else res.destroy();
      });
      res.once('close', () => upstream.destroy());
      if (bodiless) upstream.end();
      else req.pipe(upstream);
    };
    send(bodiless);
  }

  const server: Server = options.tls
    ? (createTlsServer({ key: options.tls.key, cert: options.tls.cert }, (req, res) => void forward(req, res)) as unknown as Server)
    : createServer((req, res) => void forward(req, res));
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
    routeHost: (hostname, port, guard) => {
      hostRoutes.set(hostname.toLowerCase(), port);
      if (guard) guarded.set(hostname.toLowerCase(), guard.forwardAuthPort);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
