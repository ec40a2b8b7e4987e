import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type Express } from 'express';
import request, { type Response, type Test } from 'supertest';
import {
  errorHandler,
  establishLogin,
  logout,
  logoutEverywhere,
  requireSession,
  sessionsResource,
  type RequireSessionOptions,
  type SsoSessionMiddleware,
  type SsoSessionOptions,
} from '../../lib';
import { guarded } from '../../lib/http/handlers';

/** A secret long enough for `ssoSession`; tests that need a second one build it from this. */
export const TEST_SECRET = 'test-secret-0123456789-abcdefghijklmnopqrstuvwxyz';
export const PARENT_DOMAIN = 'example.test';
export const LOGIN_URL = 'https://auth.example.test/login';
/** The session cookie's default name for a Secure cookie (`sso.sid` only with allowInsecureLocalDevelopment). */
export const SESSION_COOKIE = '__Secure-sso.sid';
/** The identity source the test apps' `/login` logs users in from, unless a test names another. */
export const TEST_SOURCE = 'test:users';

/**
 * The user id a test login of `subject` gets.
 *
 * @example
 * expect(res.body.user).toBe(userId('u1'));
 */
export function userId(subject: string, source = TEST_SOURCE): string {
  return `${source}|${subject}`;
}

/** `ssoSession` options for the test domain, over the given store options. */
export function ssoOptions(overrides: Partial<SsoSessionOptions>): SsoSessionOptions {
  return { cookieDomain: PARENT_DOMAIN, secret: TEST_SECRET, loginUrl: LOGIN_URL, ...overrides } as SsoSessionOptions;
}

/**
 * A small app of the parent domain, as a real server on a free port: `POST /login` (JSON body = the user, its
 * `id` the subject and `source` by default {@link TEST_SOURCE}, plus `tags`), `GET /me` and `POST /orders` behind `requireSession`, `POST /logout`, `POST /logout-everywhere`,
 * `/account/sessions` (the REST resource), the test's own `routes` and the kit's error handler.
 */
export async function startSsoApp(
  sso: SsoSessionMiddleware,
  options: { require?: RequireSessionOptions; routes?: (app: Express) => void } = {},
): Promise<{ app: Express; server: Server; close: () => Promise<void> }> {
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(express.json());
  app.use(sso);
  // Through `guarded`, as an Express 4 app must: a rejected login (the store is down) reaches the error handler.
  app.post(
    '/login',
    guarded(async (req, res) => {
      const {
        tags,
        id,
        source = TEST_SOURCE,
        ...user
      } = req.body as {
        id: string;
        source?: string;
        name: string;
        roles: string[];
        method: string;
        tags?: string[];
      };
      await establishLogin(req, { ...user, source, subject: id }, { tags });
      res.status(204).end();
    }),
  );
  app.get('/public', (req, res) => {
    res.json({ user: req.user?.id ?? null });
  });
  app.get('/me', requireSession(options.require), (req, res) => {
    res.json({ id: req.user!.id, name: req.user!.name });
  });
  app.post('/orders', requireSession(options.require), (req, res) => {
    res.status(201).json({ by: req.user!.id });
  });
  app.post(
    '/logout',
    guarded(async (req, res) => {
      await logout(req, res);
      res.status(204).end();
    }),
  );
  app.post(
    '/logout-everywhere',
    requireSession(),
    guarded(async (req, res) => {
      const ended = await logoutEverywhere(req);
      res.json({ ended });
    }),
  );
  app.use('/account', sessionsResource());
  options.routes?.(app);
  app.use(errorHandler({ log: false }));
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  return {
    app,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The base URL of a listening server. */
export function baseUrl(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * A request to `server` as if it came through the TLS proxy of `host`, with an optional cookie. A state-changing
 * request carries `Origin: https://<host>`, as a browser sends for a page's own POST (the session layer refuses
 * cookie-authenticated ones without it); a test of another origin sets its own, or `.unset('Origin')`.
 */
export function via(
  server: Server,
  host: string,
  method: 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options',
  path: string,
  cookie?: string,
): Test {
  const test = request(server)[method](path).set('Host', host).set('X-Forwarded-Proto', 'https');
  if (method !== 'get' && method !== 'head' && method !== 'options') test.set('Origin', `https://${host}`);
  return cookie ? test.set('Cookie', cookie) : test;
}

/** The `name=value` pair of the session cookie set by a response, or undefined. */
export function sessionCookieOf(res: Response, name = SESSION_COOKIE): string | undefined {
  const header = res.headers['set-cookie'] as unknown as string[] | undefined;
  const line = header?.find((value) => value.startsWith(`${name}=`));
  return line?.split(';')[0];
}

/** The full Set-Cookie line of the session cookie. */
export function sessionSetCookieLine(res: Response, name = SESSION_COOKIE): string | undefined {
  const header = res.headers['set-cookie'] as unknown as string[] | undefined;
  return header?.find((value) => value.startsWith(`${name}=`));
}

/** The raw session id inside a signed `name=s%3A<id>.<sig>` cookie pair. */
export function sessionIdOf(cookiePair: string): string {
  const value = decodeURIComponent(cookiePair.slice(cookiePair.indexOf('=') + 1));
  return value.slice(2, value.lastIndexOf('.'));
}

/**
 * Logs a user in through `POST /login` of `server` (on `host`) and returns the session cookie pair. `id` is the
 * subject; the source is {@link TEST_SOURCE} unless given.
 */
export async function loginAs(
  server: Server,
  host: string,
  user: { id: string; source?: string; name?: string; roles?: string[]; tags?: string[] },
  cookie?: string,
): Promise<string> {
  const res = await via(server, host, 'post', '/login', cookie)
    .set('Origin', `https://${host}`)
    .set('User-Agent', 'sso-test-browser/1.0')
    .send({ name: user.id, roles: [], method: 'password', ...user });
  if (res.status !== 204) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  const pair = sessionCookieOf(res);
  if (!pair) throw new Error('login set no session cookie');
  return pair;
}
