/**
 * The auth site: the central login page of the domain. Users sign in here once, with a password, through the
 * corporate identity provider (OpenID Connect), or by scanning a QR code with a phone that is already signed in
 * (this site is also the QR provider), or with a passkey added at /passkeys; every other site of the domain then
 * sees the login in the shared session. Apps on other domains sign in through this site as an OpenID Provider, with
 * the same session.
 */
import express, { type Express, type Request, type Response } from 'express';
import {
  errorHandler,
  hashAppSecret,
  KeySet,
  KeyValueCredentialStore,
  loginPortal,
  notFound,
  oidc,
  qrLogin,
  qrLoginProvider,
  qrTokenIssuer,
  securityHeaders,
  ssoSession,
  TokenService,
  type KeyValueStore,
  type SecurityEvents,
  type LoginPortalOptions,
} from 'express-sso-kit';
import { demoDirectory } from '../common/accounts';
import { origin, PORTAL_QR_APPID, portalOidcClient, secretFor, sessionOptions, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { portalProvider } from './portal-provider';
import { demoPortalAccounts } from './portal-accounts';
import { demoAccessPolicy } from '../common/access';
import { mountForwardAuth } from './forward-auth-mount';

/**
 * QR login on this site, both sides: the provider (the QR page, the phone's confirmation page, the token API)
 * and the relying app that starts a login and finishes it at `/callback/qr`. Returns the portal's link to it.
 */
function mountQrLogin(
  app: Express,
  config: DemoConfig,
  store: KeyValueStore,
  keys: KeySet,
  events?: SecurityEvents,
): LoginPortalOptions['qrLogin'] {
  const auth = origin(config, 'auth');
  const secret = secretFor(config, 'qr-app');
  const redirectUri = `${auth}/callback/qr`;
  // The phone app's tokens; QR access tokens live 7200 s (WeChat's expires_in), so revocations must too.
  const tokens = new TokenService({ keys, issuer: auth, store, accessTokenLifetimeSeconds: 7200, ...(events ? { events } : {}) });
  app.use(
    qrLoginProvider({
      store,
      ...(events ? { events } : {}),
      apps: [
        {
          appid: PORTAL_QR_APPID,
          secretHash: hashAppSecret(secret),
          name: 'SSO Demo Portal',
          redirectUris: [redirectUri],
          loginPageUrl: `${auth}/login`,
          // The portal is its own QR provider: its QR logins come back as the directory's accounts (linkAccount).
          releaseUserId: true,
        },
      ],
      users: demoDirectory(),
      tokens: qrTokenIssuer(tokens),
      publicUrl: auth,
      // A phone without a session signs in at the portal first and comes back to the confirmation page.
      loginUrl: '/login',
      openidSecret: secretFor(config, 'qr-openid'),
    }),
  );
  const client = qrLogin({ providerUrl: auth, appid: PORTAL_QR_APPID, secret, redirectUri });
  app.get('/login/qr', client.login);
  app.get('/callback/qr', client.callback);
  return { href: '/login/qr', label: 'Scan a QR code' };
}

/**
 * The auth site's app.
 *
 * @example
 * const auth = await createAuth(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export async function createAuth(config: DemoConfig, store: KeyValueStore, events?: SecurityEvents): Promise<Express> {
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  app.use(securityHeaders());
  const sessions = ssoSession(sessionOptions(config, store, events));
  // The docs site's proxy asks here about each request, before the session middleware checks the sub-request itself.
  mountForwardAuth(app, config, sessions);
  app.use(sessions);
  app.use(demoAccessPolicy(config));
  // The portal's signing keys: its token service and its OpenID Provider publish the same JWKS.
  const keys = KeySet.generate('ES256');
  // Apps on other domains (the partner) sign in through the portal as an OpenID Provider, under /oidc.
  if (config.openidProvider) app.use(portalProvider(config, store, sessions, keys));
  // Sign in with the corporate IdP: GET /login/demo-idp, GET /callback/demo-idp, back-channel logout.
  app.use(
    oidc({
      name: 'demo-idp',
      issuer: origin(config, 'idp'),
      ...portalOidcClient(config),
      baseUrl: origin(config, 'auth'),
      scopes: ['openid', 'profile'],
      postLogoutRedirectUri: `${origin(config, 'auth')}/login`,
      store,
      ...(config.secure ? {} : { allowInsecureLocalDevelopment: true }),
    }),
  );
  // QR login's URLs must be https, or http on a loopback name (the default sso.localhost); elsewhere it stays off.
  const qr = config.qrLogin ? mountQrLogin(app, config, store, keys, events) : undefined;
  // One store of second factors: TOTP, recovery codes and passkeys.
  const credentials = new KeyValueCredentialStore(store);
  // Password change, reset by email (read the mail at /demo-mail), address change, notices.
  const { users, accounts } = await demoPortalAccounts(app, config, store);
  app.use(
    loginPortal({
      // In the store, so the admin site's account page can disable or remove an account.
      users,
      ...(accounts ? { accounts } : {}),
      store,
      throttle: { deviceTokenSecret: secretFor(config, 'device-tokens') },
      ...(qr ? { qrLogin: qr } : {}),
      providers: [{ href: '/login/demo-idp', label: 'Sign in with the Demo IdP' }],
      // Authenticator apps and recovery codes (/two-factor), and the step-up page routes needing two factors use.
      twoFactor: {
        credentials,
        sealingKey: secretFor(config, 'totp-sealing'),
        issuer: 'SSO Demo',
      },
      // Passkeys for the demo users: add one at /passkeys after signing in, then sign in with it alone. The parent
      // domain is the relying party, so the passkey works from every site of the demo.
      passkeys: { credentials, rpName: 'SSO Demo' },
    }),
  );
  app.get('/', function portalHome(req: Request, res: Response) {
    res.redirect(303, req.user ? '/sessions' : '/login');
  });
  app.use(notFound());
  app.use(errorHandler({ html: true, homeUrl: '/login', stylesheetUrl: '/portal-assets/portal.css' }));
  return app;
}

if (require.main === module) runSite('auth', createAuth);
