import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import { errorHandler, type ErrorLogEntry } from '../../lib/http';
import { establishLogin, logout, requireSession, ssoSession, type SsoSessionOptions } from '../../lib/session';
import type { KeyValueStore } from '../../lib/store';
import { SESSION_COOKIE, TEST_SOURCE } from './sso-apps';

/** The parent domain the test apps share their cookie on. */
export const TEST_PARENT_DOMAIN = 'example.test';

/** A plain HTTP answer: status, headers and the body as text. */
export interface PlainResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Options of {@link startSsoApps}. */
export interface SsoAppsOptions {
  /** The kit store both apps' `ssoSession` use (a RedisStore on the Redis under test, or a MemoryStore). */
  store: KeyValueStore;
  /** Cookie-signing secret shared by both apps. Default: 32 random bytes. */
  secret?: string;
  /** Further `ssoSession` options (idle timeout, …) for both apps. */
  session?: Partial<SsoSessionOptions>;
}

/** Two apps of one parent domain sharing the session: `auth` logs users in, `shop` only reads the session. */
export interface SsoApps {
  authUrl: string;
  shopUrl: string;
  /**
   * Logs the user of `subject` in at the auth app (source `TEST_SOURCE`, so the user id is `userId(subject)`)
   * and returns the `Cookie` header value to send.
   */
  login(subject: string): Promise<string>;
  /** POST /logout on the auth app with a cookie; resolves to the answer, whatever its status. */
  logout(cookie: string): Promise<PlainResponse>;
  /** GET `path` on one app with a cookie, as a browser on that app's host would. */
  get(app: 'auth' | 'shop', path: string, cookie?: string): Promise<PlainResponse>;
  /** What `errorHandler` logged (every 5xx), instead of printing it. */
  serverErrors: ErrorLogEntry[];
  /** Closes both servers and the client agent. */
  close(): Promise<void>;
}

/**
 * An app of the parent domain: `POST /login/:id` and `POST /logout` (only with `withLogin`) log the user of
 * subject `:id` (source `TEST_SOURCE`) in directly through `establishLogin` and out through `logout`, `GET /me`
 * answers the user behind `requireSession`, errors go through `errorHandler`.
 *
 * @example
 * const app = sessionApp(store, secret, true);
 */
export function sessionApp(
  store: KeyValueStore,
  secret: string,
  withLogin: boolean,
  session: Partial<SsoSessionOptions> = {},
  serverErrors?: ErrorLogEntry[],
): Express {
  const app = express();
  app.disable('x-powered-by');
  // The test client speaks plain HTTP on loopback and says X-Forwarded-Proto: https, as a TLS proxy would.
  app.set('trust proxy', 'loopback');
  app.use(
    ssoSession({ ...session, store, cookieDomain: TEST_PARENT_DOMAIN, secret, loginUrl: `https://auth.${TEST_PARENT_DOMAIN}/login` }),
  );
  if (withLogin) {
    app.post('/login/:id', async (req, res, next) => {
      try {
        const id = String(req.params.id);
        await establishLogin(req, { source: TEST_SOURCE, subject: id, name: `User ${id}`, roles: ['customer'], method: 'password' });
        res.status(204).end();
      } catch (error) {
        next(error);
      }
    });
  }
  app.get('/me', requireSession(), (req, res) => {
    res.json({ id: req.user!.id, name: req.user!.name });
  });
  if (withLogin) {
    // After GET /me, so the benchmark's requests match their route as before.
    app.post('/logout', async (req, res, next) => {
      try {
        await logout(req, res);
        res.status(204).end();
      } catch (error) {
        next(error);
      }
    });
  }
  app.use(errorHandler(serverErrors ? { log: (entry) => serverErrors.push(entry) } : {}));
  return app;
}

function listen(app: Express): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}` });
    });
    // The client's keep-alive agent may reuse an idle socket at the moment the server's 5-second idle timeout closes
    // it (a pause for a forced GC between outage cycles is long enough), and the request then fails with ECONNRESET
    // before the app saw it. The tests observe the app, not that race: idle sockets stay open while a test runs.
    server.keepAliveTimeout = 120_000;
  });
}

/**
 * A request over a keep-alive agent with an explicit Host header (the apps are told apart by host, as behind
 * a reverse proxy) and `X-Forwarded-Proto: https`. Resolves for every status; rejects only on a socket error.
 *
 * @example
 * const res = await plainRequest(agent, 'GET', 'http://127.0.0.1:4000/me', 'shop.example.test', cookie);
 */
export function plainRequest(
  agent: Agent,
  method: string,
  url: string,
  host: string,
  cookie?: string,
  timeoutMs = 40_000,
): Promise<PlainResponse> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = httpRequest(
      {
        agent,
        method,
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        headers: {
          host,
          'x-forwarded-proto': 'https',
          accept: 'application/json',
          origin: `https://${host}`,
          ...(cookie ? { cookie } : {}),
        },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} took longer than ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Starts the auth and shop apps on loopback ports over one store, as two subdomains of `example.test`.
 *
 * @example
 * const apps = await startSsoApps({ store });
 * const cookie = await apps.login('user-1');
 * expect(JSON.parse((await apps.get('shop', '/me', cookie)).body).id).toBe(userId('user-1'));
 * await apps.close();
 */
export async function startSsoApps(options: SsoAppsOptions): Promise<SsoApps> {
  const secret = options.secret ?? randomBytes(32).toString('base64url');
  const serverErrors: ErrorLogEntry[] = [];
  const auth = await listen(sessionApp(options.store, secret, true, options.session, serverErrors));
  const shop = await listen(sessionApp(options.store, secret, false, options.session, serverErrors));
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const hosts = { auth: `auth.${TEST_PARENT_DOMAIN}`, shop: `shop.${TEST_PARENT_DOMAIN}` };
  const urls = { auth: auth.url, shop: shop.url };

  return {
    authUrl: auth.url,
    shopUrl: shop.url,
    serverErrors,
    async login(subject: string) {
      const res = await plainRequest(agent, 'POST', `${auth.url}/login/${encodeURIComponent(subject)}`, hosts.auth);
      const setCookie = (res.headers['set-cookie'] ?? []).find((line) => line.startsWith(`${SESSION_COOKIE}=`));
      if (res.status !== 204 || !setCookie) throw new Error(`login of ${subject} answered ${res.status}: ${res.body}`);
      return setCookie.split(';')[0]!;
    },
    logout(cookie) {
      return plainRequest(agent, 'POST', `${auth.url}/logout`, hosts.auth, cookie);
    },
    get(app, path, cookie) {
      return plainRequest(agent, 'GET', `${urls[app]}${path}`, hosts[app], cookie);
    },
    async close() {
      agent.destroy();
      for (const { server } of [auth, shop]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}
