import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { Router, type Express, type Request, type Response, type NextFunction } from 'express';
import { errorHandler } from '../../lib/http';
import { oidc, type OidcRouter } from '../../lib/oidc';
import { fileUserDirectory, hashPassword, loginPortal, type UserDirectory } from '../../lib/portal';
import { hashAppSecret, qrLoginProvider, qrTokenIssuer } from '../../lib/qr';
import { createPolicy, requirePermission } from '../../lib/rbac';
import { logoutEverywhere, requireSession, sessionsResource, ssoSession } from '../../lib/session';
import type { LinkAccount } from '../../lib/session/types';
import { KeySet, TokenService } from '../../lib/tokens';
import { startTestIdp, type TestIdp } from './oidc-provider';
import { testRedisStore } from './redis';

/**
 * The whole kit wired as README.md and docs/ show it, on one parent domain (`example.test`), for attacks across
 * identity sources:
 * - `auth` — the central login page (`loginPortal` over a password directory with `alice` and `bob`), two OpenID
 *   providers through `oidc()` (`corp`, trusted for roles; `partner`, not), "your sessions" (`sessionsResource` at
 *   `/account`), logout everywhere and a permission-guarded `/reports`;
 * - `link` — the same, but its `ssoSession` maps logins with `linkAccount` (corp's subs onto the directory's
 *   accounts; partner logins refused);
 * - `shop` — another app of the domain (`/me`);
 * - `idp` — the QR-login provider (`qrLoginProvider` over the same directory), as docs/qr-login.md shows.
 * Two in-process `oidc-provider`s issue the same `sub` ("alice") to two different people.
 * The wiring lives here alone so it can follow option renames in one place.
 */
export interface IdentityApps {
  auth: Host;
  link: Host;
  shop: Host;
  idp: Host;
  corp: TestIdp;
  partner: TestIdp;
  directory: UserDirectory;
  /** The QR-login app registered at `idp`: its appid and redirect URI. */
  qrApp: { appid: string; redirectUri: string };
  /** The back-channel logout URI of provider `corp` or `partner` on `auth` (how the provider reaches it). */
  backchannelUri(name: 'corp' | 'partner'): string;
  close(): Promise<void>;
}

/** One app of the domain on 127.0.0.1, reached as `https://<name>.example.test:<port>` through `TestUserAgent`. */
export interface Host {
  app: Express;
  server: Server;
  port: number;
  origin: string;
}

const SECRET = randomBytes(32).toString('base64');
const CLIENT_SECRET = 'identity-client-secret-0123456789abcdef';
const FAST_SCRYPT = { N: 1024, r: 8, p: 1 };

async function host(name: string): Promise<Host> {
  const app = express();
  app.set('trust proxy', 'loopback');
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return { app, server, port, origin: `https://${name}.example.test:${port}` };
}

function me(req: Request, res: Response): void {
  if (req.user) res.json({ user: req.user });
  else res.status(401).json({ user: null });
}

/** Starts everything; see {@link IdentityApps}. */
export async function startIdentityApps(): Promise<IdentityApps> {
  const redis = await testRedisStore('identity');
  const store = redis.store;
  const [auth, link, shop, idp] = await Promise.all([host('auth'), host('link'), host('shop'), host('idp')]);
  const directory = fileUserDirectory([
    {
      id: 'alice',
      username: 'alice',
      name: 'Alice Directory',
      roles: ['admin'],
      passwordHash: await hashPassword('alice-password', FAST_SCRYPT),
    },
    { id: 'bob', username: 'bob', name: 'Bob Directory', roles: [], passwordHash: await hashPassword('bob-password', FAST_SCRYPT) },
  ]);

  // Two providers, two people, one sub: corp's alice and partner's alice. Both assert the admin role.
  const client = (name: string) => ({
    clientId: 'portal',
    clientSecret: CLIENT_SECRET,
    redirectUris: [`${auth.origin}/callback/${name}`, `${link.origin}/callback/${name}`],
    backchannelLogoutUri: `http://127.0.0.1:${auth.port}/backchannel-logout/${name}`,
  });
  const corp = await startTestIdp({
    clients: [client('corp')],
    accounts: { alice: { name: 'Alice of Corp', roles: ['admin'] }, carol: { name: 'Carol of Corp', roles: [] } },
  });
  const partner = await startTestIdp({
    clients: [client('partner')],
    accounts: { alice: { name: 'Alice of Partner', roles: ['admin'] } },
  });

  const providers = (baseUrl: string): OidcRouter[] => [
    oidc({
      name: 'corp',
      issuer: corp.issuer,
      clientId: 'portal',
      clientSecret: CLIENT_SECRET,
      baseUrl,
      rolesClaim: 'roles',
      store,
      allowInsecureLocalDevelopment: true,
    }),
    oidc({
      name: 'partner',
      issuer: partner.issuer,
      clientId: 'portal',
      clientSecret: CLIENT_SECRET,
      baseUrl,
      store,
      allowInsecureLocalDevelopment: true,
    }),
  ];
  const sessionOptions = {
    store,
    cookieDomain: 'example.test',
    secret: SECRET,
    loginUrl: `${auth.origin}/login`,
    allowedRedirectPorts: [auth.port, link.port, shop.port, idp.port],
  };
  const policy = createPolicy({ roles: { admin: { permissions: ['*:*'] } } });

  const accountRoutes = (): Router => {
    const routes = Router();
    routes.get('/me', me);
    routes.use('/account', requireSession(), sessionsResource());
    routes.post('/logout/everywhere', requireSession(), async (req: Request, res: Response, next: NextFunction) => {
      try {
        await logoutEverywhere(req);
        res.status(204).end();
      } catch (error) {
        next(error);
      }
    });
    routes.get('/reports', requireSession(), requirePermission('read', 'reports', { policy }), (_req, res) => {
      res.json({ reports: [] });
    });
    return routes;
  };

  // auth: without linkAccount, every (source, subject) is its own user.
  auth.app.use(ssoSession(sessionOptions));
  for (const router of providers(auth.origin)) auth.app.use(router);
  auth.app.use(
    loginPortal({
      users: directory,
      store,
      providers: [
        { href: '/login/corp', label: 'Corp' },
        { href: '/login/partner', label: 'Partner' },
      ],
    }),
  );
  auth.app.use(accountRoutes());
  auth.app.use(errorHandler({ log: false }));

  // link: corp's users are the directory's accounts of the same id; partner logins are refused.
  const linkAccount: LinkAccount = async (login) => {
    if (login.source === `oidc:${corp.issuer}`) {
      const account = await directory.findById(login.subject);
      return account ? { source: 'directory:local', subject: account.id, name: account.name, roles: [...account.roles] } : null;
    }
    if (login.source === `oidc:${partner.issuer}`) return null;
    return undefined;
  };
  link.app.use(ssoSession({ ...sessionOptions, linkAccount }));
  for (const router of providers(link.origin)) link.app.use(router);
  link.app.use(accountRoutes());
  link.app.use(errorHandler({ log: false }));

  shop.app.use(ssoSession(sessionOptions));
  shop.app.get('/me', me);
  shop.app.use(errorHandler({ log: false }));

  // idp: the QR-login provider of the directory's users (docs/qr-login.md).
  const qrSecret = randomBytes(16).toString('hex');
  const qrApp = { appid: 'portal', redirectUri: `${auth.origin}/callback/qr` };
  const tokens = new TokenService({ keys: KeySet.generate('ES256'), issuer: idp.origin, store, accessTokenLifetimeSeconds: 7200 });
  idp.app.use(ssoSession(sessionOptions));
  idp.app.use(
    qrLoginProvider({
      store,
      apps: [{ appid: qrApp.appid, secretHash: hashAppSecret(qrSecret), name: 'The portal', redirectUris: [qrApp.redirectUri] }],
      users: directory,
      tokens: qrTokenIssuer(tokens),
      publicUrl: idp.origin,
      rateLimits: false,
    }),
  );
  idp.app.use(errorHandler({ log: false }));

  return {
    auth,
    link,
    shop,
    idp,
    corp,
    partner,
    directory,
    qrApp,
    backchannelUri: (name) => `http://127.0.0.1:${auth.port}/backchannel-logout/${name}`,
    async close() {
      await Promise.all([corp.close(), partner.close()]);
      for (const { server } of [auth, link, shop, idp]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await redis.cleanup();
    },
  };
}
