// The partner app's own process (run with tsx): express-openid-connect needs require(esm) of openid-client v6,
// which plain Node has and Jest's module runtime has not. It talks to its parent in JSON lines: it prints
// {"port"} once listening, reads {"issuer", "clientId", "clientSecret", "redisUrl", "redisPrefix"} from stdin, then
// prints {"ready": true}, and {"backchannel": <status>} after each logout token it handled.
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { RedisStore as ConnectRedisStore } from 'connect-redis';
import express, { type Request, type RequestHandler } from 'express';
import Redis from 'ioredis';

// Loaded untyped on purpose: its declarations put another `req.oidc` on Express's Request, clashing with the kit's.
interface ExpressOpenidConnect {
  auth(config: Record<string, unknown>): RequestHandler;
  requiresAuth(): RequestHandler;
}
interface PartnerOidcContext {
  isAuthenticated(): boolean;
  user?: { sub?: string };
  accessToken?: { access_token: string; refresh(): Promise<{ access_token: string }> };
}
interface Connection {
  issuer: string;
  clientId: string;
  clientSecret: string;
  redisUrl: string;
  redisPrefix: string;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { auth } = require('express-openid-connect') as ExpressOpenidConnect;
const host = process.env.PARTNER_HOST ?? 'partner.localhost';

type LookupCallback = (error: Error | null, address: string | { address: string; family: number }[], family?: number) => void;

/**
 * fetch for the app's server-side calls to the provider: its host name resolves to loopback, as DNS would make it
 * (fetch itself can neither resolve `*.localhost` here nor keep a Host header of our choosing).
 */
function loopbackFetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      String(url),
      {
        method: init.method ?? 'GET',
        headers: Object.fromEntries(new Headers(init.headers).entries()),
        lookup: (_host: string, options: { all?: boolean }, callback: LookupCallback) =>
          options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
          }
          const status = response.statusCode ?? 500;
          resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers }));
        });
      },
    );
    request.on('error', reject);
    if (init.body !== undefined && init.body !== null) request.write(String(init.body));
    request.end();
  });
}

function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function partnerUser(req: Request): string {
  const context = (req as unknown as { oidc: PartnerOidcContext }).oidc;
  return context.isAuthenticated() ? String(context.user?.sub) : '';
}

const app = express();
app.use('/backchannel-logout', (_req, res, next) => {
  res.on('finish', () => say({ backchannel: res.statusCode }));
  next();
});
const server = app.listen(0, '127.0.0.1', () => say({ port: (server.address() as AddressInfo).port }));

createInterface({ input: process.stdin }).once('line', (line) => {
  const connection = JSON.parse(line) as Connection;
  const origin = `http://${host}:${(server.address() as AddressInfo).port}`;
  const redis = new Redis(connection.redisUrl);
  app.use(
    auth({
      issuerBaseURL: connection.issuer,
      baseURL: origin,
      clientID: connection.clientId,
      clientSecret: connection.clientSecret,
      secret: randomBytes(32).toString('hex'),
      authRequired: false,
      idpLogout: true,
      authorizationParams: { response_type: 'code', scope: 'openid profile email' },
      idTokenSigningAlg: 'ES256',
      backchannelLogout: { store: new ConnectRedisStore({ client: redis, prefix: connection.redisPrefix }) },
      customFetch: loopbackFetch,
    }),
  );
  app.get('/', (req, res) => {
    const sub = partnerUser(req);
    res.type('html').send(`<!doctype html><title>Partner</title><p id="who" data-sub="${sub}">${sub || 'anonymous'}</p>`);
  });
  // Refreshes the access token at the provider (with the refresh token it holds) and says whether it changed.
  app.get('/refresh', async (req, res, next) => {
    try {
      const context = (req as unknown as { oidc: PartnerOidcContext }).oidc;
      const before = context.accessToken?.access_token;
      const after = await context.accessToken?.refresh();
      res
        .type('html')
        .send(
          `<!doctype html><title>Partner</title><p id="refreshed" data-changed="${Boolean(after && after.access_token !== before)}">refreshed</p>`,
        );
    } catch (error) {
      next(error);
    }
  });
  process.stdin.on('end', () => {
    redis.disconnect();
    server.close();
  });
  say({ ready: true });
});
