/**
 * The shop: an app of the domain that only shows its pages to signed-in users. One login at the auth site and the
 * shop knows who you are, through the shared session in Redis; "Sign out everywhere" here ends every session of the
 * user, on every app and in every browser (and the identity provider's, when the login came through it).
 */
import express, { type Express, type Request, type Response } from 'express';
import {
  errorHandler,
  notFound,
  requireSession,
  securityHeaders,
  ssoSession,
  type KeyValueStore,
  type SecurityEvents,
} from 'express-sso-kit';
import { appAssets, demoLinks, renderAppPage } from '../common/app-pages';
import { origin, sessionOptions, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { demoAccessPolicy } from '../common/access';
import { appFormTargets, signOutEverywhere } from '../common/sign-out';

/**
 * The shop's app.
 *
 * @example
 * const shop = createShop(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export function createShop(config: DemoConfig, store: KeyValueStore, events?: SecurityEvents): Express {
  const links = demoLinks(config);
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  // The kit's strict policy, plus what this page does: read notes from the api site; forms go to the portal, and
  // signing out may go on to the identity provider's end-session page.
  app.use(
    securityHeaders({
      contentSecurityPolicy: {
        directives: { connectSrc: ["'self'", origin(config, 'api')], formAction: appFormTargets(config) },
      },
    }),
  );
  app.use('/assets', appAssets());
  app.use(ssoSession(sessionOptions(config, store, events)));
  app.use(demoAccessPolicy(config));

  app.get('/', requireSession(), function shopPage(req: Request, res: Response) {
    const welcome = '<p>Welcome to the shop. You signed in once, at the portal.</p>';
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(renderAppPage('Shop', req.user!, links, welcome));
  });
  app.get('/me', requireSession(), function currentUser(req: Request, res: Response) {
    const { id, name, roles, method } = req.user!;
    res.set('Cache-Control', 'no-store').json({ id, name, roles, method });
  });
  app.post('/logout', signOutEverywhere(config));
  app.use(notFound());
  app.use(errorHandler({ html: true, homeUrl: links.shop, stylesheetUrl: '/assets/app.css' }));
  return app;
}

if (require.main === module) runSite('shop', createShop);
