/**
 * The partner site: another organisation's app on a domain of its own (`partner.localhost` by default), which the
 * parent-domain cookie never reaches. It signs users in through the portal's OpenID Provider with the kit's own
 * relying party (`oidc()`), keeps a session of its own (its own cookie on its own domain), and is signed out by
 * back-channel when the portal session ends. "Read my notes" (/notes) calls the demo's Notes API with the user's
 * access token from the portal's provider.
 */
import express, { type Express, type Request, type Response } from 'express';
import {
  errorHandler,
  notFound,
  oidc,
  requireSession,
  securityHeaders,
  ssoSession,
  type KeyValueStore,
  type SecurityEvents,
} from 'express-sso-kit';
import { appAssets } from '../common/app-pages';
import { NOTES_READ_SCOPE, origin, partnerOidcClient, secretFor, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { readMyNotes } from './partner-notes';
import { renderPartnerOffPage, renderPartnerPage, renderPartnerSignedOutPage } from './partner-pages';

/**
 * The partner's app.
 *
 * @example
 * const partner = createPartner(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export function createPartner(config: DemoConfig, store: KeyValueStore, events?: SecurityEvents): Express {
  const partner = origin(config, 'partner');
  const portal = origin(config, 'auth');
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  // Signing out posts to this site, which continues to the portal's end-session page (RP-initiated logout).
  app.use(securityHeaders({ contentSecurityPolicy: { directives: { formAction: ["'self'", portal] } } }));
  app.use('/assets', appAssets());
  if (!config.openidProvider) {
    app.get('/', function partnerOff(_req: Request, res: Response) {
      res.status(503).set('Cache-Control', 'no-store').type('html').send(renderPartnerOffPage());
    });
    app.use(notFound());
    app.use(errorHandler({ html: true, stylesheetUrl: '/assets/app.css' }));
    return app;
  }
  const defaultPort = config.secure ? 443 : 80;
  app.use(
    ssoSession({
      store,
      // Its own session: its own cookie, on its own domain, under its own key prefix and secret.
      cookieDomain: config.partnerDomain,
      cookieName: 'partner.sid',
      sessionPrefix: 'partner-sess:',
      secret: secretFor(config, 'partner-sessions'),
      ...(events ? { events } : {}),
      loginUrl: `${partner}/login/portal`,
      defaultRedirectUrl: `${partner}/`,
      allowedRedirectPorts: config.publicPort === defaultPort ? [] : [config.publicPort],
      ...(config.secure ? {} : { allowInsecureLocalDevelopment: true }),
    }),
  );
  // GET /login/portal, GET /callback/portal, POST /logout/portal, POST /backchannel-logout/portal.
  app.use(
    oidc({
      name: 'portal',
      issuer: portal,
      ...partnerOidcClient(config),
      baseUrl: partner,
      // notes:read: its access token is for the Notes API (the provider's resource), which it calls for the user.
      scopes: ['openid', 'profile', NOTES_READ_SCOPE],
      idTokenSigningAlg: 'ES256',
      rolesClaim: 'roles',
      // Its access token is for the Notes API, which userinfo does not accept: the provider then puts the profile
      // claims (name, roles) in the ID token instead (OpenID Connect Core §5.4).
      fetchUserinfo: false,
      postLogoutRedirectUri: `${partner}/signed-out`,
      store,
      ...(config.secure ? {} : { allowInsecureLocalDevelopment: true }),
    }),
  );
  app.get('/', requireSession(), function partnerHome(req: Request, res: Response) {
    res.set('Cache-Control', 'no-store').type('html').send(renderPartnerPage(req.user!, portal));
  });
  app.get('/notes', requireSession(), readMyNotes(config));
  app.get('/me', requireSession(), function currentUser(req: Request, res: Response) {
    const { id, name, roles, method } = req.user!;
    res.set('Cache-Control', 'no-store').json({ id, name, roles, method });
  });
  app.get('/signed-out', function signedOut(_req: Request, res: Response) {
    res.set('Cache-Control', 'no-store').type('html').send(renderPartnerSignedOutPage());
  });
  app.use(notFound());
  app.use(errorHandler({ html: true, homeUrl: `${partner}/`, stylesheetUrl: '/assets/app.css' }));
  return app;
}

if (require.main === module) runSite('partner', createPartner);
