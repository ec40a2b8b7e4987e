/**
 * The shop: an app of the domain that only shows its pages to signed-in users. One login at the auth site and the
 * shop knows who you are, through the shared session in Redis; signing out here signs you out everywhere.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { errorHandler, logout, notFound, requireSession, securityHeaders, ssoSession, type KeyValueStore } from 'express-sso-kit';
import { appAssets, demoLinks, renderAppPage } from '../common/app-pages';
import { origin, sessionOptions, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { demoAccessPolicy } from '../common/access';

/**
 * The shop's app.
 *
 * @example
 * const shop = createShop(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export function createShop(config: DemoConfig, store: KeyValueStore): Express {
  const links = demoLinks(config);
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  // The kit's strict policy, plus what this page does: read notes from the api site; sign-out ends at the portal.
  app.use(
    securityHeaders({
      contentSecurityPolicy: {
        directives: { connectSrc: ["'self'", origin(config, 'api')], formAction: ["'self'", origin(config, 'auth')] },
      },
    }),
  );
  app.use('/assets', appAssets());
  app.use(ssoSession(sessionOptions(config, store)));
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
  app.post('/logout', function signOutEverywhere(req: Request, res: Response, next: NextFunction) {
    logout(req, res).then(() => res.redirect(303, `${origin(config, 'auth')}/login`), next);
  });
  app.use(notFound());
  app.use(errorHandler({ html: true, homeUrl: links.shop, stylesheetUrl: '/assets/app.css' }));
  return app;
}

if (require.main === module) runSite('shop', createShop);
