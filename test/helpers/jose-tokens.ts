import { createHmac, createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as JoseModule from 'jose' with { 'resolution-mode': 'import' };

/** jose is ESM-only; under our Jest setup a dynamic import loads it. */
export type Jose = typeof JoseModule;
let josePromise: Promise<Jose> | undefined;
export function loadJose(): Promise<Jose> {
  josePromise ??= import('jose');
  return josePromise;
}

export const b64url = (text: string | Buffer): string => Buffer.from(text).toString('base64url');

/** Signs header and payload given as raw JSON text (so tests can repeat members), with Node's crypto. */
export function signRaw(headerJson: string, payloadJson: string, alg: 'HS256' | 'RS256', key: KeyObject | Buffer | string): string {
  const input = `${b64url(headerJson)}.${b64url(payloadJson)}`;
  const signature =
    alg === 'HS256'
      ? createHmac('sha256', key as Buffer)
          .update(input)
          .digest('base64url')
      : createSign('RSA-SHA256')
          .update(input)
          .sign(key as KeyObject)
          .toString('base64url');
  return `${input}.${signature}`;
}

/** Fresh key pairs, exported both as KeyObjects and as JWKs. */
export function rsaPair(bits = 2048) {
  return generateKeyPairSync('rsa', { modulusLength: bits });
}
export function ecPair() {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** A tiny HTTP server on 127.0.0.1:0 with a replaceable handler and a hit counter. */
export interface TestHttpServer {
  url: string;
  hits: number;
  handle(handler: (req: IncomingMessage, res: ServerResponse) => void): void;
  close(): Promise<void>;
}

export async function startHttpServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end(),
): Promise<TestHttpServer> {
  let current = handler;
  const server: Server = createServer((req, res) => {
    state.hits++;
    current(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const state: TestHttpServer = {
    url: `http://127.0.0.1:${port}`,
    hits: 0,
    handle(next) {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return state;
}

/** A JWKS endpoint serving whatever key set the test puts in `jwks`, optionally slow or failing. */
export interface JwksServer extends TestHttpServer {
  jwksUri: string;
  jwks: { keys: object[] };
  cacheControl: string | undefined;
  delayMs: number;
  status: number;
}

export async function startJwksServer(keys: object[] = []): Promise<JwksServer> {
  const base = await startHttpServer();
  const jwksServer = base as JwksServer;
  jwksServer.jwksUri = `${base.url}/.well-known/jwks.json`;
  jwksServer.jwks = { keys };
  jwksServer.cacheControl = undefined;
  jwksServer.delayMs = 0;
  jwksServer.status = 200;
  const timers = new Set<NodeJS.Timeout>();
  base.handle((_req, res) => {
    const reply = () => {
      res.statusCode = jwksServer.status;
      res.setHeader('content-type', 'application/json');
      if (jwksServer.cacheControl) res.setHeader('cache-control', jwksServer.cacheControl);
      res.end(JSON.stringify(jwksServer.jwks));
    };
    if (jwksServer.delayMs > 0) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        reply();
      }, jwksServer.delayMs);
      timers.add(timer);
    } else reply();
  });
  const close = base.close;
  jwksServer.close = async () => {
    for (const timer of timers) clearTimeout(timer);
    await close();
  };
  return jwksServer;
}
