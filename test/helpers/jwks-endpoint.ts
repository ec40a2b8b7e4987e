import { startHttpServer, type TestHttpServer } from './jose-tokens';

/**
 * A JWKS endpoint on 127.0.0.1:0 whose key set, Cache-Control and availability a test changes, and that tells the
 * test when a fetch arrives, so tests wait for the event instead of sleeping.
 */
export interface JwksEndpoint {
  jwksUri: string;
  /** The keys served; replace to publish or withdraw a key. */
  keys: object[];
  cacheControl: string | undefined;
  /** `down` destroys the socket of every request, as when the process is gone. */
  mode: 'up' | 'down';
  /** How many fetches arrived so far. */
  readonly fetches: number;
  /** When each fetch arrived (epoch ms). */
  readonly fetchedAt: number[];
  /** Resolves when the next fetch arrives (after `fetches` counted it). */
  nextFetch(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a JWKS endpoint serving `keys`.
 *
 * @example
 * const endpoint = await startJwksEndpoint([jwk]);
 * endpoint.cacheControl = 'max-age=2';
 * await endpoint.nextFetch(); // a background refresh arrived
 */
export async function startJwksEndpoint(keys: object[]): Promise<JwksEndpoint> {
  const waiters: (() => void)[] = [];
  const started: { server?: TestHttpServer } = {};
  const endpoint: JwksEndpoint = {
    jwksUri: '',
    keys,
    cacheControl: undefined,
    mode: 'up',
    get fetches() {
      return started.server?.hits ?? 0;
    },
    fetchedAt: [],
    nextFetch: () => new Promise<void>((resolve) => waiters.push(resolve)),
    close: () => started.server?.close() ?? Promise.resolve(),
  };
  started.server = await startHttpServer((req, res) => {
    endpoint.fetchedAt.push(Date.now());
    for (const resolve of waiters.splice(0)) resolve();
    if (endpoint.mode === 'down') {
      req.socket.destroy();
      return;
    }
    res.setHeader('content-type', 'application/jwk-set+json');
    if (endpoint.cacheControl) res.setHeader('cache-control', endpoint.cacheControl);
    res.end(JSON.stringify({ keys: endpoint.keys }));
  });
  endpoint.jwksUri = `${started.server.url}/.well-known/jwks.json`;
  return endpoint;
}
