import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import {
  basicCredentials,
  createPolicy,
  errorHandler,
  fileUserDirectory,
  generateAppSecret,
  hashAppSecret,
  hashPassword,
  KeySet,
  loginPortal,
  logoutEverywhere,
  oidc,
  qrLoginProvider,
  qrTokenIssuer,
  requireBasic,
  requirePermission,
  requireSession,
  sessionsResource,
  ssoSession,
  TokenService,
  type KeyValueStore,
  type SsoSessionMiddleware,
} from '../../lib';
import { TEST_SECRET } from './sso-apps';

/**
 * The kit's state-changing endpoints wired as README.md and docs/ show them, on real servers, so the CSRF tests
 * attack what an app really runs. Every factory call of those tests is in this file: when an option is renamed,
 * this is the one place to change.
 */

/** Host names of the sites; requests reach them through a TLS proxy on loopback (`X-Forwarded-Proto: https`). */
export const HOSTS = { auth: 'auth.example.test', shop: 'shop.example.test', idp: 'idp.example.test', ops: 'ops.example.test' };
export type Site = keyof typeof HOSTS;
/** The password of the portal user `alice` (role `editor`), and of the Basic service account `deploy`. */
export const PASSWORD = 'correct horse battery staple';

export interface KitWirings {
  /** Each site as a supertest request builder: the site's Host and the proxy's `X-Forwarded-Proto: https`. */
  site(site: Site): {
    get(path: string): request.Test;
    post(path: string): request.Test;
    put(path: string): request.Test;
    patch(path: string): request.Test;
    delete(path: string): request.Test;
  };
  /** What the app handlers changed, in order (`profile:<user id>`, `report:<id>:<user id>`). */
  changes: string[];
  /** Logs alice in at the portal as her browser does; resolves to the session cookie pair. */
  login(): Promise<string>;
  /** Starts a QR login at the identity provider, as a relying app's browser does; resolves to its auth_code. */
  startQrLogin(): Promise<string>;
  close(): Promise<void>;
}

async function listen(app: Express): Promise<Server> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}

/** The shop: a handler reading `req.user` itself, `requirePermission` after `ssoSession`, and README's session routes. */
function shopApp(sessions: SsoSessionMiddleware, changes: string[]): Express {
  const policy = createPolicy({ roles: { editor: { permissions: ['write:reports:*'] } } });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(express.json());
  app.use(sessions);
  app.post('/profile', (req: Request, res: Response) => {
    if (!req.user) {
      res.status(401).end();
      return;
    }
    changes.push(`profile:${req.user.id}`);
    res.status(204).end();
  });
  app.put(
    '/reports/:id',
    requirePermission('write', (req) => `reports:${String(req.params.id)}`, { policy }),
    (req, res) => {
      changes.push(`report:${String(req.params.id)}:${req.user!.id}`);
      res.status(204).end();
    },
  );
  app.post('/logout/everywhere', requireSession(), async (req: Request, res: Response, next: NextFunction) => {
    try {
      await logoutEverywhere(req);
      res.status(204).end();
    } catch (err) {
      next(err);
    }
  });
  app.use('/account', requireSession(), sessionsResource());
  app.use(errorHandler({ log: false }));
  return app;
}

/** The central login page: the portal (login, logout, revocation) and an OpenID provider's routes (`oidc()`). */
async function authApp(sessions: SsoSessionMiddleware, store: KeyValueStore): Promise<Express> {
  const users = fileUserDirectory([
    { id: 'alice', username: 'alice', name: 'Alice', roles: ['editor'], passwordHash: await hashPassword(PASSWORD, { N: 1024 }) },
  ]);
  // Explicit endpoints: logout only redirects to the provider, which these tests never need to reach.
  const corp = oidc({
    name: 'corp',
    issuer: 'https://corp-idp.example.net',
    clientId: 'shop',
    clientSecret: 'corp-client-secret-0123456789abcdef',
    baseUrl: `https://${HOSTS.auth}`,
    store,
    endpoints: {
      authorization: 'https://corp-idp.example.net/authorize',
      token: 'https://corp-idp.example.net/token',
      jwks: 'https://corp-idp.example.net/jwks',
      endSession: 'https://corp-idp.example.net/session/end',
    },
  });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(sessions);
  app.use(loginPortal({ users, store }));
  app.use(corp); // GET /login/corp, GET /callback/corp, POST /logout/corp, POST /backchannel-logout/corp
  app.use(errorHandler({ log: false }));
  return app;
}

/** The identity provider's QR-login side, whose confirm/deny ride on the shared session of its users. */
function idpApp(sessions: SsoSessionMiddleware, store: KeyValueStore): Express {
  const tokenService = new TokenService({
    keys: KeySet.generate('ES256'),
    issuer: `https://${HOSTS.idp}`,
    store,
    accessTokenLifetimeSeconds: 7200,
  });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(sessions);
  app.use(
    qrLoginProvider({
      store,
      apps: [
        {
          appid: 'shop',
          secretHash: hashAppSecret(generateAppSecret()),
          name: 'Shop',
          redirectUris: [`https://${HOSTS.auth}/callback/qr`],
        },
      ],
      users: { findById: async (id: string) => (id === 'alice' ? { id: 'alice', name: 'Alice' } : null) },
      tokens: qrTokenIssuer(tokenService),
      publicUrl: `https://${HOSTS.idp}`,
      rateLimits: false,
    }),
  );
  app.use(errorHandler({ log: false }));
  return app;
}

/** Operations behind Basic, as docs/access-control.md shows it. */
async function opsApp(changes: string[]): Promise<Express> {
  const policy = createPolicy({ roles: { editor: { permissions: ['write:reports:*'] } } });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(
    '/ops',
    requireBasic({
      realm: 'Operations',
      verify: basicCredentials({ deploy: { passwordHash: await hashPassword(PASSWORD, { N: 1024 }), roles: ['editor'] } }),
    }),
  );
  app.put(
    '/ops/reports/:id',
    requirePermission('write', (req) => `reports:${String(req.params.id)}`, { policy }),
    (req, res) => {
      changes.push(`report:${String(req.params.id)}:${req.user!.id}`);
      res.status(204).end();
    },
  );
  app.use(errorHandler({ log: false }));
  return app;
}

/**
 * Starts the four sites over one store, sharing one `ssoSession` configuration as every app of a domain does.
 *
 * @example
 * const kit = await startKitWirings(store);
 * const cookie = await kit.login();
 */
export async function startKitWirings(store: KeyValueStore): Promise<KitWirings> {
  const sessions = () => ssoSession({ store, cookieDomain: 'example.test', secret: TEST_SECRET, loginUrl: `https://${HOSTS.auth}/login` });
  const changes: string[] = [];
  const servers: Record<Site, Server> = {
    shop: await listen(shopApp(sessions(), changes)),
    auth: await listen(await authApp(sessions(), store)),
    idp: await listen(idpApp(sessions(), store)),
    ops: await listen(await opsApp(changes)),
  };
  const site = (name: Site) => {
    const base = `http://127.0.0.1:${(servers[name].address() as AddressInfo).port}`;
    const wrap = (test: request.Test) => test.set('Host', HOSTS[name]).set('X-Forwarded-Proto', 'https');
    return {
      get: (path: string) => wrap(request(base).get(path)),
      post: (path: string) => wrap(request(base).post(path)),
      put: (path: string) => wrap(request(base).put(path)),
      patch: (path: string) => wrap(request(base).patch(path)),
      delete: (path: string) => wrap(request(base).delete(path)),
    };
  };
  return {
    site,
    changes,
    async login() {
      const res = await site('auth')
        .post('/login')
        .set('Origin', `https://${HOSTS.auth}`)
        .type('form')
        .send({ username: 'alice', password: PASSWORD });
      const pair = ((res.headers['set-cookie'] ?? []) as string[]).find((line) => line.startsWith('__Secure-sso.sid='))?.split(';')[0];
      if (res.status !== 302 || !pair) throw new Error(`portal login answered ${res.status}`);
      return pair;
    },
    async startQrLogin() {
      const query = new URLSearchParams({
        appid: 'shop',
        redirect_uri: `https://${HOSTS.auth}/callback/qr`,
        response_type: 'code',
        scope: 'snsapi_login',
        state: 'csrf-test',
        format: 'json',
      });
      const res = await site('idp').get(`/sns/oauth2/qrconnect?${query.toString()}`);
      const authCode = /\/sns\/qr-logins\/([^/]+)\/confirmation$/.exec(String(res.body?.qr_url))?.[1];
      if (res.status !== 201 || !authCode) throw new Error(`qrconnect answered ${res.status}`);
      return authCode;
    },
    async close() {
      for (const server of Object.values(servers)) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}
