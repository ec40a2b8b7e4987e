import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { Router, type Express } from 'express';
import { errorHandler } from '../../lib/http';
import { ssoSession, type SsoSessionMiddleware } from '../../lib/session';
import {
  backchannelLogout,
  oidcCallback,
  oidcContext,
  oidcLogin,
  oidcLogout,
  oidcProvider,
  type OidcContextOptions,
  type OidcProvider,
  type OidcProviderOptions,
} from '../../lib/oidc';
import { testRedisStore } from './redis';

/** One app of the parent domain `example.test`, listening on 127.0.0.1. */
export interface SsoApp {
  app: Express;
  server: Server;
  port: number;
  /** `https://<host>.example.test:<port>` (reach it with `TestUserAgent`, which maps the name to loopback). */
  origin: string;
  sessions: SsoSessionMiddleware;
  /** Routes mounted after the session middleware; replace with {@link mount}. */
  mount(router: Router): void;
}

/** Two apps, `auth.example.test` (login, callback, logout routes) and `shop.example.test`, sharing one Redis store. */
export interface SsoApps {
  auth: SsoApp;
  shop: SsoApp;
  store: Awaited<ReturnType<typeof testRedisStore>>['store'];
  /** The redirect URI of provider `name` on the auth app. */
  redirectUri(name?: string): string;
  /** The back-channel logout URI of provider `name` (plain http on 127.0.0.1, how the provider reaches it). */
  backchannelUri(name?: string): string;
  /**
   * Configures the provider and mounts, on auth: `GET /login/<name>`, `GET /callback/<name>`,
   * `POST /logout/<name>`, `POST /backchannel-logout/<name>`; on both apps: `oidcContext`, `GET /me` (the user or
   * 401), `GET /token` (`req.oidc.accessToken()`) and `POST /refresh` (`req.oidc.refresh()`).
   */
  configure(
    options: Omit<OidcProviderOptions, 'store' | 'redirectUri'> & { redirectUri?: string },
    context?: OidcContextOptions,
  ): OidcProvider;
  close(): Promise<void>;
}

async function listen(app: Express): Promise<{ server: Server; port: number }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Starts the two apps; see {@link SsoApps}. */
export async function startSsoApps(label = 'oidc'): Promise<SsoApps> {
  const redis = await testRedisStore(label);
  const secret = randomBytes(32).toString('base64');
  const made: Array<{ app: Express; server: Server; port: number; routes: { current: Router } }> = [];
  for (let i = 0; i < 2; i += 1) {
    const app = express();
    const routes = { current: Router() };
    const { server, port } = await listen(app);
    made.push({ app, server, port, routes });
  }
  const [authParts, shopParts] = made as [(typeof made)[0], (typeof made)[0]];
  const ports = [authParts.port, shopParts.port];
  const build = (parts: (typeof made)[0], host: string): SsoApp => {
    const sessions = ssoSession({
      store: redis.store,
      cookieDomain: 'example.test',
      secret,
      loginUrl: `https://auth.example.test:${authParts.port}/login`,
      allowedRedirectPorts: ports,
    });
    parts.app.set('trust proxy', 'loopback');
    parts.app.use(sessions);
    parts.app.use((req, res, next) => parts.routes.current(req, res, next));
    parts.app.use(errorHandler({ html: true, log: false }));
    return {
      app: parts.app,
      server: parts.server,
      port: parts.port,
      origin: `https://${host}.example.test:${parts.port}`,
      sessions,
      mount: (router) => {
        parts.routes.current = router;
      },
    };
  };
  const auth = build(authParts, 'auth');
  const shop = build(shopParts, 'shop');
  const routers = { auth: Router(), shop: Router() };
  auth.mount(routers.auth);
  shop.mount(routers.shop);

  const apps: SsoApps = {
    auth,
    shop,
    store: redis.store,
    redirectUri: (name = 'corp') => `${auth.origin}/callback/${name}`,
    backchannelUri: (name = 'corp') => `http://127.0.0.1:${auth.port}/backchannel-logout/${name}`,
    configure(options, context) {
      const name = options.name ?? 'corp';
      const provider = oidcProvider({ redirectUri: apps.redirectUri(name), ...options, name, store: redis.store });
      routers.auth.get(`/login/${name}`, oidcLogin(provider));
      // A route-level error handler whose "back" link starts the login again.
      routers.auth.get(`/callback/${name}`, oidcCallback(provider), errorHandler({ html: true, homeUrl: `/login/${name}`, log: false }));
      routers.auth.post(`/logout/${name}`, oidcLogout(provider));
      routers.auth.post(`/backchannel-logout/${name}`, backchannelLogout(provider));
      for (const router of [routers.auth, routers.shop]) {
        router.use(oidcContext(provider, context));
        router.get('/me', (req, res) => {
          if (!req.user) res.status(401).json({ user: null });
          else res.json({ user: req.user });
        });
        router.get('/token', async (req, res, next) => {
          try {
            res.json({ accessToken: (await req.oidc?.accessToken()) ?? null });
          } catch (error) {
            next(error);
          }
        });
        router.post('/refresh', async (req, res, next) => {
          try {
            await req.oidc?.refresh();
            res.json({ accessToken: req.session.oidc?.accessToken ?? null, hasRefreshToken: Boolean(req.session.oidc?.refreshToken) });
          } catch (error) {
            next(error);
          }
        });
      }
      return provider;
    },
    async close() {
      for (const parts of made) {
        parts.server.closeAllConnections();
        await new Promise<void>((resolve) => parts.server.close(() => resolve()));
      }
      await redis.cleanup();
    },
  };
  return apps;
}
