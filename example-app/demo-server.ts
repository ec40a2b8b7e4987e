import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import express, { type Application, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { errorHandler, ForbiddenError, notFound, securityHeaders, toHttpError } from '../lib/http';
import { backchannelLogout, oidcCallback, oidcLogin, oidcProvider } from '../lib/oidc';
import { fileUserDirectory, LoginThrottle, loginPortal, type UserDirectory } from '../lib/portal';
import { generateAppSecret, hashAppSecret, qrLogin, qrLoginProvider, qrTokenIssuer } from '../lib/qr';
import { createPolicy, requirePermission } from '../lib/rbac';
import { corsPreflight } from '../lib/cors';
import { csrfGuard, logout, requireSession, ssoSession, type SsoSessionOptions } from '../lib/session';
import { validateCookieDomain } from '../lib/session/cookie-domain';
import { MemoryStore, RedisStore, type KeyValueStore } from '../lib/store';
import { KeySet, requireBearer, TokenService, type SigningKey } from '../lib/tokens';
import { renderAppPage, renderForbiddenPage, type DemoLinks } from './app-pages';
import { DEMO_DIRECTORY_SOURCE, demoUserRecords } from './demo-users';
import { hostRouter } from './host-router';
import { createDemoIdentityProvider } from './identity-provider';
import { resolveToLoopback } from './loopback-dns';
import { notesApi } from './notes-api';

/** The demo's sites, each served on `<site>.<domain>`. */
export type DemoSite = 'auth' | 'shop' | 'admin' | 'api' | 'idp';

/** Options of {@link startDemo}. */
export interface DemoOptions {
  /** Port to listen on; 0 picks a free one. Default 8080. */
  port?: number;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Parent domain of the sites; must be a valid cookie domain. Default `sso.localhost`. */
  domain?: string;
  /** Redis to keep sessions and state in. Ignored when `store` is given. */
  redisUrl?: string;
  /** A kit store to use as it is (not closed by `close()`); tests pass one with a private prefix. */
  store?: KeyValueStore;
  /** Serve https URLs and Secure cookies (a TLS proxy in front). Default false: plain http for a laptop. */
  secure?: boolean;
  /**
   * Serve https directly with this certificate (for `*.<domain>`); implies `secure`. The relying parties then call
   * the identity provider by its public https name, resolved to loopback inside this process. Needed for QR login,
   * whose module accepts plain http only on loopback hosts.
   */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** Port browsers use, when a proxy listens elsewhere. Default: the port listened on. */
  publicPort?: number;
  /** Where the start-up banner and warnings go. Default console.log. */
  log?: (line: string) => void;
}

/** A running demo. */
export interface RunningDemo {
  port: number;
  domain: string;
  store: KeyValueStore;
  /** `http://<site>.<domain>:<port><path>` */
  url(site: DemoSite, path?: string): string;
  /** What the api site accepts as Bearer tokens: RS256 by this key, with this issuer and audience. */
  apiTokens: { issuer: string; audience: string; signingKey: SigningKey };
  close(): Promise<void>;
}

const SITES: readonly DemoSite[] = ['auth', 'shop', 'admin', 'api', 'idp'];

/** Options of {@link chooseDemoStore}. */
export interface DemoStoreChoice {
  /** An explicit Redis (REDIS_URL): it must answer, or the demo stops. */
  redisUrl?: string;
  /** Where to look for a Redis when none is given. Default `redis://127.0.0.1:6379`. */
  probeUrl?: string;
  log: (line: string) => void;
}

/**
 * The demo's store: the given Redis (which must answer), else the local Redis when it answers, else the in-memory
 * store with a banner saying what that means.
 *
 * @example
 * const store = await chooseDemoStore({ redisUrl: process.env.REDIS_URL, log: console.log });
 */
export async function chooseDemoStore(choice: DemoStoreChoice): Promise<KeyValueStore> {
  const url = choice.redisUrl ?? choice.probeUrl ?? 'redis://127.0.0.1:6379';
  // A short disconnect timeout: a probe that finds nobody is dropped at once instead of lingering for 2 s.
  const candidate = new RedisStore({ url, redisOptions: { disconnectTimeout: 10 } }, { prefix: 'sso-demo:' });
  try {
    await candidate.ping();
    return candidate;
  } catch (error) {
    await candidate.close().catch(() => undefined);
    if (choice.redisUrl) throw new Error(`startDemo: Redis at REDIS_URL does not answer (${(error as Error).message})`, { cause: error });
    const log = choice.log;
    log('');
    log('  ┌──────────────────────────────────────────────────────────────────────┐');
    log(`  │ No Redis at ${url.padEnd(57)}│`);
    log('  │ Using the in-memory store: sessions vanish on restart and are not    │');
    log('  │ shared with other processes. Set REDIS_URL for the real thing.       │');
    log('  └──────────────────────────────────────────────────────────────────────┘');
    return new MemoryStore();
  }
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * Starts the whole demo in this process, on one port, routed by Host: the identity provider (`idp.<domain>`:
 * OpenID Connect and QR login), the login portal (`auth.<domain>`), two apps (`shop.`, `admin.`) and a REST api
 * (`api.<domain>/notes`). Tests call it with `{ port: 0 }`.
 *
 * @example
 * const demo = await startDemo({ port: 0, domain: 'sso.test', store });
 * await fetch(demo.url('shop', '/me'));
 * await demo.close();
 */
export async function startDemo(options: DemoOptions = {}): Promise<RunningDemo> {
  const log = options.log ?? ((line: string) => console.log(line));
  const domain = validateCookieDomain(options.domain ?? 'sso.localhost', 'startDemo: domain');
  const secure = options.tls !== undefined || (options.secure ?? false);
  const host = options.host ?? '127.0.0.1';
  const owned = options.store === undefined;
  const store = options.store ?? (await chooseDemoStore({ ...(options.redisUrl ? { redisUrl: options.redisUrl } : {}), log }));

  let handler: RequestHandler = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const dispatch = (req: unknown, res: unknown) => handler(req as Request, res as Response, () => undefined);
  const server: Server = options.tls
    ? (createTlsServer({ key: options.tls.key, cert: options.tls.cert }, dispatch) as unknown as Server)
    : createServer(dispatch);
  let port: number;
  try {
    port = await listen(server, options.port ?? 8080, host);
  } catch (error) {
    if (owned) await store.close();
    throw error;
  }
  const publicPort = options.publicPort ?? port;
  const defaultPort = secure ? 443 : 80;
  const portSuffix = publicPort === defaultPort ? '' : `:${publicPort}`;
  const scheme = secure ? 'https' : 'http';
  const origin = (site: DemoSite) => `${scheme}://${site}.${domain}${portSuffix}`;
  const siblings = `${scheme}://*.${domain}${portSuffix}`;
  // Unless a TLS proxy stands in front, this process serves the public names itself, so the relying parties can
  // call the identity provider by its public name, as a real deployment would (names resolved to loopback in this
  // process only; Node does not resolve *.localhost on its own). QR login needs that. The OpenID Connect client
  // takes the loopback back channel on plain http, since the kit accepts http only on loopback addresses.
  const undoDns = options.tls !== undefined || !secure ? resolveToLoopback(domain) : () => undefined;
  const backChannel = options.tls ? origin('idp') : `http://127.0.0.1:${port}`;

  try {
    // One directory, one source: the portal logs its users in as this source and the QR provider accepts only it.
    const users: UserDirectory = { ...fileUserDirectory(await demoUserRecords()), source: DEMO_DIRECTORY_SOURCE };
    const demoIdpSource = `oidc:${origin('idp')}`;
    const sessionOptions: SsoSessionOptions = {
      store,
      cookieDomain: domain,
      secret: randomBytes(48).toString('base64url'),
      loginUrl: `${origin('auth')}/login`,
      ...(secure ? {} : { allowInsecureLocalDevelopment: true }),
      allowedRedirectPorts: portSuffix ? [publicPort] : [],
      defaultRedirectUrl: `${origin('shop')}/`,
      // The one explicit place where two identity sources become one account: the demo identity provider signs in
      // the directory's own accounts (its sub is a directory id), so its logins are those accounts, with the
      // directory's name and roles. A sub the directory does not know is refused; every other source stays itself.
      linkAccount: async (login) => {
        if (login.source !== demoIdpSource) return undefined;
        const account = await users.findById(login.subject);
        if (!account) return null;
        return { source: DEMO_DIRECTORY_SOURCE, subject: account.id, name: account.name, roles: [...account.roles] };
      },
    };
    const sessions = ssoSession(sessionOptions);
    const trustProxy = 'loopback, linklocal, uniquelocal';

    const tokenKeys = KeySet.generate('RS256', 'demo-api-1');
    const tokenService = new TokenService({ keys: tokenKeys, issuer: origin('idp'), store, accessTokenLifetimeSeconds: 7200 });
    const links: DemoLinks = {
      shop: `${origin('shop')}/`,
      admin: `${origin('admin')}/`,
      portal: `${origin('auth')}/login`,
      sessions: `${origin('auth')}/sessions`,
      notesApi: `${origin('api')}/notes`,
    };

    // --- identity provider: OpenID Connect and QR login ---
    const oidcClientSecret = randomBytes(32).toString('base64url');
    const qrSecret = generateAppSecret();
    const demoIdp = await createDemoIdentityProvider({
      issuer: origin('idp'),
      users,
      throttle: new LoginThrottle(store, { namespace: 'idp-login-throttle' }),
      clients: [
        {
          clientId: 'sso-portal',
          clientSecret: oidcClientSecret,
          redirectUris: [`${origin('auth')}/callback/demo-idp`],
          backchannelLogoutUri: `${origin('auth')}/backchannel-logout/demo-idp`,
        },
      ],
      formActionSources: [siblings],
      behindProxy: true,
    });
    const idp = express();
    idp.set('trust proxy', trustProxy);
    idp.use(sessions);
    idp.get('/login', function idpLogin(req: Request, res: Response) {
      // The provider has no password page of its own: the phone signs in at the portal and comes back here.
      const back =
        typeof req.query.return_to === 'string' && req.query.return_to.startsWith('/') && !req.query.return_to.startsWith('//')
          ? `${origin('idp')}${req.query.return_to}`
          : `${origin('idp')}/`;
      res.redirect(303, `${links.portal}?return_to=${encodeURIComponent(back)}`);
    });
    // QR login needs https, or http on a loopback name (`*.localhost`, the default domain); otherwise the demo runs
    // without it and says so.
    let qr: ReturnType<typeof qrLogin> | undefined;
    try {
      idp.use(
        qrLoginProvider({
          store,
          apps: [
            {
              appid: 'sso-portal',
              secretHash: hashAppSecret(qrSecret),
              name: 'the demo login portal',
              redirectUris: [`${origin('auth')}/callback/qr`],
            },
          ],
          users,
          tokens: qrTokenIssuer(tokenService),
          publicUrl: origin('idp'),
          loginUrl: '/login',
        }),
      );
      qr = qrLogin({ providerUrl: origin('idp'), appid: 'sso-portal', secret: qrSecret, redirectUri: `${origin('auth')}/callback/qr` });
    } catch (error) {
      if (!(error instanceof TypeError)) throw error;
      log(`QR login is off in this demo: ${error.message}`);
    }
    idp.use(demoIdp.router);
    idp.use(errorHandler({ html: true, homeUrl: links.portal }));

    // --- the login portal ---
    const oidc = oidcProvider({
      name: 'demo-idp',
      issuer: origin('idp'),
      // The browser goes to the provider's public name; the portal's own calls (token, keys) take the back channel,
      // which the kit accepts over plain http because it is a loopback address.
      endpoints: {
        authorization: `${origin('idp')}/auth`,
        token: `${backChannel}/token`,
        jwks: `${backChannel}/jwks`,
        endSession: `${origin('idp')}/session/end`,
      },
      clientId: 'sso-portal',
      clientSecret: oidcClientSecret,
      redirectUri: `${origin('auth')}/callback/demo-idp`,
      scopes: ['openid', 'profile'],
      allowInsecureLocalDevelopment: !secure,
      store,
    });
    const auth = express();
    auth.set('trust proxy', trustProxy);
    auth.use(securityHeaders());
    auth.use(sessions);
    if (qr) {
      auth.get('/login/qr', qr.login);
      auth.get('/callback/qr', qr.callback);
    }
    auth.get('/login/demo-idp', oidcLogin(oidc));
    auth.get('/callback/demo-idp', oidcCallback(oidc));
    auth.post('/backchannel-logout/demo-idp', backchannelLogout(oidc, { sessions: sessions.manager }));
    auth.use(
      loginPortal({
        users,
        store,
        ...(qr ? { qrLogin: { href: '/login/qr', label: 'Scan a QR code' } } : {}),
        providers: [{ href: '/login/demo-idp', label: 'Sign in with the Demo IdP' }],
      }),
    );
    auth.get('/', function portalHome(req: Request, res: Response) {
      res.redirect(303, req.user ? '/sessions' : '/login');
    });
    auth.use(notFound());
    auth.use(errorHandler({ html: true, homeUrl: '/login' }));

    // --- shop and admin ---
    const pageHeaders = securityHeaders({
      // The sign-out form posts to the page's own origin, which checks Origin; under no-referrer browsers would
      // send "Origin: null" and the check would refuse it.
      referrerPolicy: { policy: 'same-origin' },
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'", 'data:'],
          // The page's script reads the notes from the api site.
          connectSrc: ["'self'", origin('api')],
          // Sign-out posts here and is answered with a redirect to the portal, which form-action also governs.
          formAction: ["'self'", origin('auth')],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
          objectSrc: ["'none'"],
        },
      },
    });
    const publicDir = join(__dirname, 'public');
    const me = function currentUser(req: Request, res: Response) {
      const user = req.user!;
      res.set('Cache-Control', 'no-store').json({ id: user.id, name: user.name, roles: user.roles, method: user.method });
    };
    const signOut = function signOutEverywhere(req: Request, res: Response, next: NextFunction) {
      logout(req, res).then(() => res.redirect(303, links.portal), next);
    };
    const buildApp = (home: RequestHandler[]): Application => {
      const app = express();
      app.set('trust proxy', trustProxy);
      app.use(pageHeaders);
      app.use('/assets', express.static(publicDir, { maxAge: '1h', index: false }));
      app.use(sessions);
      app.get('/', requireSession(), ...home);
      app.get('/me', requireSession(), me);
      app.post('/logout', csrfGuard(), signOut);
      app.use(notFound());
      return app;
    };
    const shop = buildApp([
      function shopPage(req: Request, res: Response) {
        res
          .set('Cache-Control', 'no-store')
          .type('html')
          .send(renderAppPage('Shop', req.user!, links));
      },
    ]);
    shop.use(errorHandler({ html: true, homeUrl: links.shop }));

    const policy = createPolicy({ roles: { admin: { permissions: ['read:reports', 'write:reports'] } } });
    const admin = buildApp([
      requirePermission('read', 'reports', { policy }),
      function adminPage(req: Request, res: Response) {
        const reports =
          '<section aria-labelledby="reports-heading"><h2 id="reports-heading">Reports</h2><p id="reports">3 orders today, all shipped.</p></section>';
        res
          .set('Cache-Control', 'no-store')
          .type('html')
          .send(renderAppPage('Admin', req.user!, links, reports));
      },
    ]);
    admin.use(function friendlyForbidden(error: unknown, req: Request, res: Response, next: NextFunction) {
      // A browser that may not see the admin pages gets a page that says why, not a bare problem document.
      const problem = toHttpError(error);
      if (problem instanceof ForbiddenError && req.method === 'GET' && req.accepts(['application/json', 'text/html']) === 'text/html') {
        res.status(403).set('Cache-Control', 'no-store').type('html').send(renderForbiddenPage(req.user, links));
        return;
      }
      next(error);
    });
    admin.use(errorHandler({ html: true, homeUrl: links.admin }));

    // --- api: the notes collection, for the apps' pages (cookie) and for API clients (Bearer) ---
    const bearer = requireBearer({ keys: tokenKeys, algorithms: ['RS256'], issuer: origin('idp'), audience: origin('api') });
    // The api alone takes state-changing calls from its sibling apps' pages, so only its session lists them.
    const apiSessions = ssoSession({ ...sessionOptions, csrf: { allowedOrigins: [origin('shop'), origin('admin'), origin('auth')] } });
    const sessionForApi = requireSession();
    const api = express();
    api.set('trust proxy', trustProxy);
    api.use(securityHeaders());
    api.use(corsPreflight({ origins: [siblings], credentials: true, maxAgeSeconds: 600 }));
    api.use(apiSessions);
    api.use(
      notesApi({
        authenticate: function authenticateApi(req: Request, res: Response, next: NextFunction) {
          if (req.headers.authorization !== undefined) bearer(req, res, next);
          else sessionForApi(req, res, next);
        },
      }),
    );
    api.use(notFound());
    api.use(errorHandler());

    const sites: Record<DemoSite, Application> = { auth, shop, admin, api, idp };
    const root = express();
    root.disable('x-powered-by');
    root.get('/healthz', async function health(_req: Request, res: Response) {
      try {
        await store.ping();
        res.set('Cache-Control', 'no-store').json({ status: 'ok', store: store.kind });
      } catch {
        res.status(503).set('Retry-After', '5').json({ status: 'unavailable', store: store.kind });
      }
    });
    root.use(hostRouter({ domain, sites, loopback: idp }));
    root.use(errorHandler());
    for (const app of Object.values(sites)) app.disable('x-powered-by');
    handler = root as unknown as RequestHandler;

    return {
      port,
      domain,
      store,
      url: (site: DemoSite, path = '/') => `${origin(site)}${path}`,
      apiTokens: { issuer: origin('idp'), audience: origin('api'), signingKey: tokenKeys.signingKey },
      async close() {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        undoDns();
        await sessions.manager.close();
        if (owned) await store.close();
      },
    };
  } catch (error) {
    server.close();
    undoDns();
    if (owned) await store.close();
    throw error;
  }
}

export { SITES as DEMO_SITES };
