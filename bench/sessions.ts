import { randomBytes } from 'node:crypto';
import express, { type Express, type Request, type Response } from 'express';
import session from 'express-session';
import { RedisStore as ConnectRedisStore } from 'connect-redis';
import Redis from 'ioredis';
import { BatchedGet } from '../lib/store/batched-get';
import { deleteByPrefix, preparedRequests, type AutocannonRequest, type BenchCase, type BenchSuite, type CaseApp } from './harness';
import { kitSessionCases } from './sessions-kit';

/** How many logged-in sessions the load generator rotates through. */
export const DISTINCT_SESSIONS = 100;

/** The suite's shared fixtures, sent to every case's server process: the Redis to use, a key prefix to clean up, the cookie secret. */
export interface SessionFixtures {
  redisUrl: string;
  prefix: string;
  secret: string;
}

/**
 * Logs `count` users in through `POST /login/:id` and returns one `Cookie` header value per user.
 *
 * @example
 * const cookies = await collectCookies(server.url, 100, '__Secure-sso.sid');
 */
export async function collectCookies(url: string, count: number, cookieName: string): Promise<string[]> {
  const cookies: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const response = await fetch(`${url}/login/user-${index}`, {
      method: 'POST',
      // Both apps trust the loopback proxy, so the Secure cookie is issued over plain HTTP as behind TLS offload.
      headers: { 'x-forwarded-proto': 'https', host: 'auth.example.test', origin: 'https://auth.example.test' },
      redirect: 'manual',
    });
    const setCookie = response.headers.getSetCookie().find((line) => line.startsWith(`${cookieName}=`));
    if (!setCookie) throw new Error(`login ${index} answered ${response.status} without a ${cookieName} cookie`);
    cookies.push(setCookie.split(';')[0]!);
  }
  return cookies;
}

/**
 * One autocannon request per cookie, as a browser on `host` behind a TLS proxy would send it.
 *
 * @example
 * const requests = cookieRequests(cookies); // GET /me on shop.example.test
 */
export function cookieRequests(cookies: string[], path = '/me', host = 'shop.example.test'): AutocannonRequest[] {
  return cookies.map((cookie) => ({
    method: 'GET',
    path,
    headers: { cookie, host, 'x-forwarded-proto': 'https' },
  }));
}

function expressSessionApp(client: Redis, prefix: string, secret: string): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(
    session({
      name: 'sid',
      secret,
      store: new ConnectRedisStore({ client, prefix: `${prefix}es:` }),
      resave: false,
      saveUninitialized: false,
      rolling: true,
      cookie: { httpOnly: true, secure: true, sameSite: 'lax', maxAge: 30 * 60 * 1000 },
    }),
  );
  app.post('/login/:id', (req: Request<{ id: string }>, res: Response, next) => {
    req.session.regenerate((error) => {
      if (error) return next(error);
      req.session.user = {
        id: `bench:users|${req.params.id}`,
        source: 'bench:users',
        subject: req.params.id,
        name: req.params.id,
        roles: ['customer'],
        method: 'password',
        authenticatedAt: Date.now(),
      };
      req.session.save((saveError) => (saveError ? next(saveError) : res.status(204).end()));
    });
  });
  app.get('/me', (req, res) => {
    if (!req.session.user) {
      res.status(401).end();
      return;
    }
    res.json({ id: req.session.user.id });
  });
  return app;
}

interface FloorUser {
  id: string;
  name: string;
}

const floorSessionId = (index: number): string => `floor-${String(index).padStart(27, '0')}`;

/** A session's stored JSON as the kit writes it after a password login (494 bytes for user-00). */
function storedSession(index: number): string {
  const subject = `user-${String(index).padStart(2, '0')}`;
  const now = Date.now();
  return JSON.stringify({
    cookie: { originalMaxAge: null, expires: null, secure: true, httpOnly: true, domain: 'example.test', path: '/', sameSite: 'lax' },
    user: {
      id: `test:users|${subject}`,
      source: 'test:users',
      subject,
      name: `User ${subject}`,
      roles: ['customer'],
      method: 'password',
      authenticatedAt: now,
      authentication: {
        acr: '1fa',
        amr: ['pwd'],
        authTime: Math.floor(now / 1000),
        factors: [{ method: 'pwd', at: Math.floor(now / 1000) }],
      },
    },
    meta: { createdAt: now, lastSeenAt: now, ip: '127.0.0.1' },
  });
}

/**
 * The floor of an uncached session check: the shape of `bare-same-answer` with one Redis read per request. The
 * cookie's value is the key; the stored sessions are written when the server starts.
 */
async function redisReadFloor(redisUrl: string, keyPrefix: string): Promise<CaseApp> {
  const client = new Redis(redisUrl);
  // The kit's own read primitive: the reads of one event-loop turn go out as one MGET (cheaper than ioredis's
  // auto-pipelining here), so this floor is the I/O of the kit's session read without its session logic.
  const reads = new BatchedGet(client);
  await Promise.all(
    Array.from({ length: DISTINCT_SESSIONS }, (_, index) =>
      client.set(`${keyPrefix}${floorSessionId(index)}`, storedSession(index), 'EX', 3600),
    ),
  );
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(function sessionLayer(req, res, next) {
    const cookie = req.headers.cookie;
    const id = cookie?.startsWith('sid=') ? cookie.slice(4) : undefined;
    if (id === undefined) {
      next();
      return;
    }
    reads.get(`${keyPrefix}${id}`).then((stored) => {
      if (stored !== null) res.locals.user = (JSON.parse(stored) as { user: FloorUser }).user;
      next();
    }, next);
  });
  app.get(
    '/me',
    function guardLayer(_req, res, next) {
      if (res.locals.user === undefined) res.status(401).end();
      else next();
    },
    (_req, res) => {
      const user = res.locals.user as FloorUser;
      res.set('Cache-Control', 'no-store');
      res.json({ id: user.id, name: user.name });
    },
  );
  return {
    app,
    close: async () => {
      await client.quit();
    },
  };
}

/**
 * The session suite's cases, in table order. Each `app` runs in the case's own server process with its own Redis
 * connection; `requests` runs in the runner and logs the users in through that server first.
 *
 * @example
 * const cases = sessionCases();
 */
export function sessionCases(): BenchCase<SessionFixtures>[] {
  return [
    {
      name: 'bare',
      description: 'bare Express, res.json of a constant',
      app: () => {
        const app = express();
        app.disable('x-powered-by');
        app.get('/me', (_req, res) => {
          res.json({ id: 'constant' });
        });
        return { app };
      },
      requests: () => cookieRequests(Array.from({ length: DISTINCT_SESSIONS }, () => 'sid=none')),
    },
    {
      name: 'bare-same-answer',
      description:
        "bare Express shaped like the kit's app, without the session check: trust proxy, two pass-through middlewares where ssoSession and requireSession sit, Cache-Control: no-store and the kit's answer ({ id, name } of the same length)",
      app: () => {
        const app = express();
        app.disable('x-powered-by');
        app.set('trust proxy', 'loopback');
        app.use(function sessionLayer(_req, _res, next) {
          next();
        });
        app.get(
          '/me',
          function guardLayer(_req, _res, next) {
            next();
          },
          (_req, res) => {
            res.set('Cache-Control', 'no-store');
            res.json({ id: 'test:users|user-00', name: 'User user-00' });
          },
        );
        return { app };
      },
      requests: () => cookieRequests(Array.from({ length: DISTINCT_SESSIONS }, () => 'sid=none')),
    },
    {
      name: 'bare-redis-read',
      description:
        "bare-same-answer plus the least a Redis-backed session check must do: one read of a session's JSON (the kit's 494 bytes) with the kit's batched read (one MGET per event-loop turn), and its JSON.parse; no signed cookie, no lifetime rules, no session object",
      app: ({ redisUrl, prefix }) => redisReadFloor(redisUrl, `${prefix}floor:`),
      requests: () => cookieRequests(Array.from({ length: DISTINCT_SESSIONS }, (_, index) => `sid=${floorSessionId(index)}`)),
    },
    {
      name: 'bare-prepared',
      description: 'bare Express with the one step the kit takes first (prepareForProperties), res.json of a constant',
      app: () => {
        const app = express();
        app.disable('x-powered-by');
        app.use(preparedRequests);
        app.get('/me', (_req, res) => {
          res.json({ id: 'constant' });
        });
        return { app };
      },
      requests: () => cookieRequests(Array.from({ length: DISTINCT_SESSIONS }, () => 'sid=none')),
    },
    ...kitSessionCases(),
    {
      name: 'express-session-rolling',
      description: 'express-session + connect-redis 8.1, rolling: true, resave: false',
      app: ({ redisUrl, prefix, secret }) => {
        const client = new Redis(redisUrl);
        return {
          app: expressSessionApp(client, prefix, secret),
          close: async () => {
            await client.quit();
          },
        };
      },
      requests: async (url) => cookieRequests(await collectCookies(url, DISTINCT_SESSIONS, 'sid')),
    },
  ];
}

/**
 * The session suite: the kit's `ssoSession` + `requireSession`, against express-session + connect-redis 8.1 with
 * `rolling: true` on the same Redis, and bare Express. Every case is fed the same number of logged-in cookies.
 * The runner keeps one Redis connection only to delete the suite's keys afterwards.
 *
 * @example
 * const suite = await sessionsSuite('redis://127.0.0.1:6379');
 */
export async function sessionsSuite(redisUrl: string): Promise<BenchSuite<SessionFixtures>> {
  const prefix = `ssobench:${randomBytes(4).toString('hex')}:`;
  const secret = randomBytes(32).toString('base64url');
  const client = new Redis(redisUrl);

  return {
    name: 'sessions',
    workload: `GET /me on a second host of the parent domain with one of ${DISTINCT_SESSIONS} logged-in session cookies rotating across requests; Redis on loopback`,
    fixtures: { redisUrl, prefix, secret },
    cases: sessionCases(),
    targets: [
      // Issue 30's targets, on Node 24 and 26.
      { numerator: 'kit-require-session', denominator: 'express-session-rolling', atLeast: 2 },
      { numerator: 'kit-require-session', denominator: 'bare', atLeast: 0.6 },
      { numerator: 'kit-require-session-cached', denominator: 'bare', atLeast: 0.85 },
      // What a session check that reads Redis at all can reach, and how far the kit's is from it.
      { numerator: 'bare-redis-read', denominator: 'bare', atLeast: 0.6, floor: true },
      { numerator: 'kit-require-session', denominator: 'bare-redis-read', atLeast: 0.6, floor: true },
    ],
    close: async () => {
      await deleteByPrefix(client, prefix);
      await client.quit();
    },
  };
}
