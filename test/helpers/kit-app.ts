import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type RequestHandler } from 'express';
import { basicCredentials, requireBasic } from '../../lib/basic';
import { corsPreflight } from '../../lib/cors';
import {
  BadRequestError,
  errorHandler,
  UnauthorizedError,
  methodNotAllowed,
  notFound,
  securityHeaders,
  UnprocessableEntityError,
} from '../../lib/http';
import { oidc } from '../../lib/oidc';
import { KeyValueCredentialStore } from '../../lib/credentials';
import { fileUserDirectory, hashPassword, loginPortal } from '../../lib/portal';
import { generateAppSecret, hashAppSecret, qrLogin, qrLoginProvider, qrTokenIssuer } from '../../lib/qr';
import { createPolicy, requirePermission } from '../../lib/rbac';
import { logoutEverywhere, requireSession, sessionsResource, ssoSession } from '../../lib/session';
import type { KeyValueStore } from '../../lib/store';
import type { SecurityEvents } from '../../lib/events';
import { jwksHandler, KeySet, RefreshTokenError, requireBearer, TokenService } from '../../lib/tokens';
import type { FuzzRoute } from './fuzz';
import { loadJose } from './jose-tokens';
import { startTestIdp, type TestIdp } from './oidc-provider';

/**
 * Every middleware and router the kit exports, wired as README.md shows, on real servers: the portal host
 * `auth.example.test` (sessions, password/OIDC/QR login, the API with Bearer/RBAC/CORS, Basic, JWKS, errors) and the
 * QR identity provider on loopback, with an in-process OpenID provider. Tests that need "the whole kit" (bad-input
 * fuzzing, logs without secrets) use it. Adding a route is one `on(...)` line: it mounts the route and lists it
 * for the fuzzer. Options follow the factories' current names; adjust them here when a factory's options change.
 */
export interface KitApp {
  auth: { server: Server; port: number; origin: string; routes: FuzzRoute[] };
  qrIdp: { server: Server; port: number; url: string; routes: FuzzRoute[] };
  oidcIdp: TestIdp;
  /** Every secret configured or handed out, so a test can grep logs for them. */
  secrets: KitSecrets;
  /** An access token for the API (`aud` api, issued by the portal), minted with jose. */
  apiToken(subject: string, roles: string[]): Promise<string>;
  /** A token of the QR provider's phone app, for `PATCH /sns/qr-logins/:authCode`. */
  phoneToken(userId: string): Promise<string>;
  /** A refresh token of the API client, as the portal's token endpoint would have issued at login. */
  issueRefreshToken(subject: string): Promise<string>;
  close(): Promise<void>;
}

export interface KitSecrets {
  sessionSecret: string;
  /** Portal passwords by username (alice, bob). */
  passwords: Record<string, string>;
  oidcClientSecret: string;
  qrAppSecret: string;
  basicPassword: string;
  hookSecret: string;
  phoneSecret: string;
}

const HOST = 'auth.example.test';
const API_ISSUER = 'https://auth.example.test';
const PHONE_ISSUER = 'https://idp.example.test';
// Fast scrypt for tests; production hashes use hashPassword's defaults.
const FAST_SCRYPT = { N: 1024, r: 8, p: 1 };

function secret(label: string): string {
  return `${label}-${randomBytes(18).toString('base64url')}`;
}

async function listen(app: Express): Promise<{ server: Server; port: number }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return { server, port: (server.address() as AddressInfo).port };
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Mounts a route and lists it for the fuzzer. */
function router(app: Express, routes: FuzzRoute[]) {
  return (method: Method, path: string, ...handlers: RequestHandler[]) => {
    app[method](path, ...handlers);
    routes.push({ method: method.toUpperCase(), path });
  };
}

/**
 * Starts the wired kit on `store` (the caller owns it: a test Redis, or a private one it stops for an outage). With
 * `events`, every factory that records security events records them there, as docs/security-events.md wires them.
 */
export async function startKitApp(store: KeyValueStore, events?: SecurityEvents): Promise<KitApp> {
  const withEvents = events === undefined ? {} : { events };
  const secrets: KitSecrets = {
    sessionSecret: secret('session-secret'),
    passwords: { alice: secret('alice-pw'), bob: secret('bob-pw') },
    oidcClientSecret: secret('oidc-client-secret'),
    qrAppSecret: generateAppSecret(),
    basicPassword: secret('basic-pw'),
    hookSecret: secret('hook-secret-of-at-least-32-bytes'),
    phoneSecret: secret('phone-app-secret-of-at-least-32-bytes'),
  };
  const users = fileUserDirectory([
    {
      id: 'alice',
      username: 'alice',
      name: 'Alice',
      roles: ['editor'],
      passwordHash: await hashPassword(secrets.passwords.alice!, FAST_SCRYPT),
    },
    { id: 'bob', username: 'bob', name: 'Bob', roles: [], passwordHash: await hashPassword(secrets.passwords.bob!, FAST_SCRYPT) },
  ]);
  const authApp = express();
  const idpApp = express();
  const [authListening, idpListening] = [await listen(authApp), await listen(idpApp)];
  const origin = `https://${HOST}:${authListening.port}`;
  const qrIdpUrl = `http://127.0.0.1:${idpListening.port}`;
  const oidcIdp = await startTestIdp({
    clients: [
      {
        clientId: 'portal',
        clientSecret: secrets.oidcClientSecret,
        redirectUris: [`${origin}/callback/corp`],
        postLogoutRedirectUris: [`${origin}/login`],
        backchannelLogoutUri: `http://127.0.0.1:${authListening.port}/backchannel-logout/corp`,
      },
    ],
  });

  // --- the QR identity provider ---
  const idpRoutes: FuzzRoute[] = [];
  const idpTokens = new TokenService({
    keys: KeySet.generate('ES256'),
    issuer: qrIdpUrl,
    store,
    accessTokenLifetimeSeconds: 7200,
    ...withEvents,
  });
  idpApp.use(
    qrLoginProvider({
      store,
      users,
      tokens: qrTokenIssuer(idpTokens),
      publicUrl: qrIdpUrl,
      apps: [{ appid: 'portal', secretHash: hashAppSecret(secrets.qrAppSecret), name: 'Portal', redirectUris: [`${origin}/callback/qr`] }],
      authenticateApp: requireBearer({
        secret: secrets.phoneSecret,
        algorithms: ['HS256'],
        issuer: PHONE_ISSUER,
        audience: 'phone-app',
        ...withEvents,
      }),
      appTokenIssuer: PHONE_ISSUER,
      ...withEvents,
    }),
  );
  for (const line of [
    'GET /sns/oauth2/qrconnect',
    'GET /sns/qr-login/qr-login.js',
    'GET /sns/qr-logins/:authCode/status',
    'GET /sns/qr-logins/:authCode/events',
    'GET /sns/qr-logins/:authCode/redirection',
    'GET|PATCH /sns/qr-logins/:authCode',
    'GET|POST /sns/qr-logins/:authCode/confirmation',
    'GET|POST /sns/oauth2/access_token',
    'GET|POST /sns/oauth2/refresh_token',
    'GET /sns/userinfo',
  ]) {
    const [methods = '', path = ''] = line.split(' ');
    idpRoutes.push({ method: methods.split('|'), path });
  }
  idpApp.use(notFound());
  idpApp.use(errorHandler());

  // --- the portal host: sessions, logins, API ---
  const routes: FuzzRoute[] = [];
  const on = router(authApp, routes);
  const mounted = (prefix: string, lines: string[]) => {
    for (const line of lines) {
      const [methods = '', path = ''] = line.split(' ');
      routes.push({ method: methods.split('|'), path: `${prefix}${path}` });
    }
  };
  const apiKeys = KeySet.generate('ES256', 'api-1');
  const apiTokens = new TokenService({ keys: apiKeys, issuer: API_ISSUER, store, ...withEvents });
  const policy = createPolicy({
    roles: { viewer: { permissions: ['read:reports:*'] }, editor: { permissions: ['write:reports:*'], inherits: ['viewer'] } },
  });
  const sessions = ssoSession({
    store,
    cookieDomain: 'example.test',
    secret: secrets.sessionSecret,
    loginUrl: `${origin}/login`,
    allowedRedirectPorts: [authListening.port],
    ...withEvents,
  });
  const corp = oidc({
    name: 'corp',
    issuer: oidcIdp.issuer,
    clientId: 'portal',
    clientSecret: secrets.oidcClientSecret,
    baseUrl: origin,
    postLogoutRedirectUri: `${origin}/login`,
    rolesClaim: 'roles',
    store,
    allowInsecureLocalDevelopment: true,
  });
  const qr = qrLogin({ providerUrl: qrIdpUrl, appid: 'portal', secret: secrets.qrAppSecret, redirectUri: `${origin}/callback/qr` });
  const bearer = requireBearer({ keys: apiKeys, algorithms: ['ES256'], issuer: API_ISSUER, audience: 'api', ...withEvents });
  const reportId = (req: express.Request) => `reports:${String(req.params.id)}`;

  authApp.set('trust proxy', 'loopback');
  authApp.use(securityHeaders());
  authApp.use('/api', corsPreflight({ origins: [`https://shop.example.test:${authListening.port}`], credentials: true }));
  authApp.use(express.json());
  authApp.use(express.urlencoded({ extended: false }));
  authApp.use(sessions);
  authApp.use(
    loginPortal({
      users,
      store,
      qrLogin: { href: '/login/qr', label: 'Scan a QR code' },
      providers: [{ href: '/login/corp', label: 'Corp' }],
      passkeys: { credentials: new KeyValueCredentialStore(store) },
    }),
  );
  mounted('', [
    'GET|POST /login',
    'POST /logout',
    'GET /sessions',
    'GET /activity',
    'POST /sessions/revocations',
    'GET /portal-assets/portal.css',
    'GET /portal-assets/portal.js',
    'GET /portal-assets/passkeys.js',
    'GET /passkeys',
    'POST /passkeys/registration/options',
    'POST /passkeys/registration',
    'POST /passkeys/rename',
    'POST /passkeys/remove',
    'POST /passkeys/sign-in/options',
    'POST /passkeys/sign-in',
    'POST /passkeys/step-up/options',
  ]);
  authApp.use(corp);
  mounted('', ['GET /login/corp', 'GET /callback/corp', 'POST /logout/corp', 'POST /backchannel-logout/corp']);
  on('post', '/oidc/refresh', requireSession(), (req, res, next) => {
    if (!req.oidc)
      next(new UnauthorizedError({ code: 'oidc_login_required', detail: 'This session did not log in through OpenID Connect.' }));
    else req.oidc.refresh().then(() => res.status(204).end(), next);
  });
  on('get', '/login/qr', qr.login);
  on('get', '/callback/qr', qr.callback);
  on('post', '/qr/refresh', requireSession(), (req, res, next) => {
    qr.refresh(req).then(() => res.status(204).end(), next);
  });
  on('get', '/me', requireSession(), (req, res) => {
    res.json({ id: req.user!.id, name: req.user!.name, method: req.user!.method });
  });
  on('post', '/logout/everywhere', requireSession(), (req, res, next) => {
    logoutEverywhere(req).then(() => res.status(204).end(), next);
  });
  authApp.use('/account', requireSession(), sessionsResource());
  mounted('/account', ['GET /sessions', 'DELETE /sessions/:id']);
  on('get', '/api/reports', bearer, (req, res) => {
    res.json({ caller: req.auth!.payload.sub });
  });
  on('get', '/api/reports/:id', bearer, requirePermission('read', reportId, { policy }), (req, res) => {
    res.json({ id: req.params.id });
  });
  on('put', '/api/reports/:id', requireSession(), requirePermission('write', reportId, { policy }), (req, res) => {
    res.json({ id: req.params.id, by: req.user!.id });
  });
  on(
    'post',
    '/hooks',
    requireBearer({ secret: secrets.hookSecret, algorithms: ['HS256'], issuer: 'ci', audience: 'hooks', ...withEvents }),
    (_req, res) => {
      res.status(204).end();
    },
  );
  on('get', '/.well-known/jwks.json', jwksHandler(apiKeys));
  on('post', '/oauth/token', (req, res, next) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (body.grant_type !== 'refresh_token' || typeof body.refresh_token !== 'string') {
      next(new BadRequestError({ code: 'invalid_request', detail: 'Send grant_type=refresh_token and a refresh_token.' }));
      return;
    }
    apiTokens.refreshTokens!.rotate(body.refresh_token, 'api-client', {}, req).then(
      (rotated) => {
        const access = apiTokens.issueAccessToken({ subject: rotated.record.subject, audience: 'api', clientId: 'api-client' });
        res.set('Cache-Control', 'no-store').json({ access_token: access.token, token_type: 'Bearer', refresh_token: rotated.token });
      },
      (error: unknown) => next(error instanceof RefreshTokenError ? new BadRequestError({ code: 'invalid_grant' }) : error),
    );
  });
  authApp.use(
    '/ops',
    requireBasic({ realm: 'Operations', verify: basicCredentials({ deploy: { password: secrets.basicPassword, roles: ['editor'] } }) }),
  );
  on('get', '/ops/status', (_req, res) => {
    res.json({ ok: true });
  });
  on('put', '/ops/reports/:id', requirePermission('write', reportId, { policy }), (req, res) => {
    res.json({ id: req.params.id });
  });
  authApp
    .route('/notes/:id')
    .get((req, res) => {
      res.json({ id: req.params.id });
    })
    .delete((_req, res) => {
      res.status(204).end();
    })
    .all(methodNotAllowed(['GET', 'DELETE']));
  routes.push({ method: ['GET', 'DELETE'], path: '/notes/:id' });
  on('post', '/notes', (req, res, next) => {
    const title = (req.body as { title?: unknown } | undefined)?.title;
    if (typeof title !== 'string' || title === '') next(new UnprocessableEntityError([{ field: 'title', message: 'is required' }]));
    else res.status(201).json({ title });
  });
  authApp.use(notFound());
  authApp.use(errorHandler({ html: true }));

  const jose = await loadJose();
  return {
    auth: { server: authListening.server, port: authListening.port, origin, routes },
    qrIdp: { server: idpListening.server, port: idpListening.port, url: qrIdpUrl, routes: idpRoutes },
    oidcIdp,
    secrets,
    apiToken: (subject, roles) =>
      new jose.SignJWT({ roles })
        .setProtectedHeader({ alg: 'ES256', kid: apiKeys.signingKey.kid, typ: 'at+jwt' })
        .setIssuer(API_ISSUER)
        .setAudience('api')
        .setSubject(subject)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(apiKeys.signingKey.key),
    phoneToken: (userId) =>
      new jose.SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
        .setIssuer(PHONE_ISSUER)
        .setAudience('phone-app')
        .setSubject(userId)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(Buffer.from(secrets.phoneSecret)),
    issueRefreshToken: async (subject) => (await apiTokens.refreshTokens!.issue({ clientId: 'api-client', subject })).token,
    async close() {
      for (const server of [authListening.server, idpListening.server]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await oidcIdp.close();
      await sessions.manager.close();
    },
  };
}
