/**
 * The front door's forward-auth, as Caddy's `forward_auth` does it for the compose demo: before proxying a request to
 * a site that is not Node (the docs site), it asks the portal's `/authz/forward-auth` about it from loopback (a
 * trusted proxy address), with the original method, scheme, host and URI in `X-Forwarded-*` and the client's own
 * headers (its cookie). A 2xx lets the request through with the portal's `Remote-*` identity headers; anything else
 * (the login redirect, 401, 403, 503) is the answer the browser gets.
 */
import { request, type Agent, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';

// Hop-by-hop headers belong to one connection, not to the message (RFC 9110, section 7.6.1).
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

/** A copy of `headers` without the hop-by-hop ones. */
export function withoutHopByHop<T extends object>(headers: T): T {
  const copy = { ...headers } as Record<string, unknown>;
  for (const name of HOP_BY_HOP) delete copy[name];
  return copy as T;
}

/** Identity headers the portal answers with; a client's own are removed before the upstream sees the request. */
export const IDENTITY_HEADERS = ['remote-user', 'remote-name', 'remote-email', 'remote-groups'];

/** The portal's verdict: let through (with identity headers), or the portal's own answer for the browser. */
export type ForwardAuthVerdict =
  { allowed: true; identity: Record<string, string> } | { allowed: false; answer: IncomingMessage } | { allowed: false; answer: undefined };

/**
 * Removes client-sent identity headers (any spelling: `Remote-User`, `Remote_User`, `remote-user`), which Node keeps
 * under their lower-cased names, `_` included. Mutates `headers`.
 *
 * @example
 * stripIdentity(headers); // headers['remote-user'] is now undefined
 */
export function stripIdentity(headers: OutgoingHttpHeaders): void {
  for (const name of Object.keys(headers)) if (IDENTITY_HEADERS.includes(name.replace(/_/g, '-'))) delete headers[name];
}

/**
 * Asks the portal listening on 127.0.0.1:`portalPort` about `req` (seen by the browser as `scheme://host`).
 * `headers` are the request's headers as the upstream would get them (hop-by-hop and identity headers removed).
 *
 * @example
 * const verdict = await askPortal(req, headers, { portalPort, scheme: 'http', agent });
 */
export function askPortal(
  req: IncomingMessage,
  headers: OutgoingHttpHeaders,
  options: { portalPort: number; scheme: string; agent: Agent },
): Promise<ForwardAuthVerdict> {
  const subHeaders: OutgoingHttpHeaders = {
    ...headers,
    'x-forwarded-method': req.method ?? 'GET',
    'x-forwarded-proto': options.scheme,
    'x-forwarded-host': req.headers.host ?? '',
    'x-forwarded-uri': req.url ?? '/',
    'content-length': '0',
  };
  delete subHeaders['transfer-encoding'];
  return new Promise((resolve) => {
    const sub = request(
      {
        host: '127.0.0.1',
        port: options.portalPort,
        method: 'GET',
        path: '/authz/forward-auth',
        headers: subHeaders,
        agent: options.agent,
      },
      (answer) => {
        const status = answer.statusCode ?? 502;
        if (status < 200 || status > 299) {
          resolve({ allowed: false, answer });
          return;
        }
        const identity: Record<string, string> = {};
        for (const name of IDENTITY_HEADERS) {
          const value = answer.headers[name];
          if (typeof value === 'string') identity[name] = value;
        }
        answer.resume();
        resolve({ allowed: true, identity });
      },
    );
    sub.on('error', () => resolve({ allowed: false, answer: undefined }));
    sub.end();
  });
}

/**
 * The front door's step for a guarded host: strips client-sent identity headers from `headers`, asks the portal, and
 * either adds the portal's identity headers (true: proxy on) or answers the browser with the portal's answer, or
 * `down()` when the portal does not answer (false: done).
 *
 * @example
 * if (!(await passForwardAuth(req, res, headers, { portalPort, scheme, agent, down }))) return;
 */
export async function passForwardAuth(
  req: IncomingMessage,
  res: ServerResponse,
  headers: OutgoingHttpHeaders,
  options: { portalPort: number; scheme: string; agent: Agent; down: () => void },
): Promise<boolean> {
  stripIdentity(headers);
  const verdict = await askPortal(req, headers, options);
  if (verdict.allowed) {
    Object.assign(headers, verdict.identity);
    return true;
  }
  if (!verdict.answer) options.down();
  else {
    res.writeHead(verdict.answer.statusCode ?? 502, withoutHopByHop(verdict.answer.headers));
    verdict.answer.pipe(res);
  }
  return false;
}
