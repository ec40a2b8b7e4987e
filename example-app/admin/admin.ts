/**
 * The admin site: the same shared login as the shop, and a permission on top. Only users whose roles grant
 * `read` on `reports` see the page; everybody else who is signed in gets a page saying why.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import {
  createPolicy,
  errorHandler,
  ForbiddenError,
  logout,
  notFound,
  requirePermission,
  requireSession,
  securityHeaders,
  ssoSession,
  toHttpError,
  type KeyValueStore,
} from 'express-sso-kit';
import { appAssets, demoLinks, renderAppPage, renderForbiddenPage } from '../common/app-pages';
import { origin, sessionOptions, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';

const policy = createPolicy({ roles: { admin: { permissions: ['read:reports', 'write:reports'] } } });

/**
 * The admin site's app.
 *
 * @example
 * const admin = createAdmin(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export function createAdmin(config: DemoConfig, store: KeyValueStore): Express {
  const links = demoLinks(config);
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  app.use(
    securityHeaders({
      contentSecurityPolicy: {
        directives: { connectSrc: ["'self'", origin(config, 'api')], formAction: ["'self'", origin(config, 'auth')] },
      },
    }),
  );
  app.use('/assets', appAssets());
  app.use(ssoSession(sessionOptions(config, store)));

  app.get('/', requireSession(), requirePermission('read', 'reports', { policy }), function adminPage(req: Request, res: Response) {
    const reports = '<h2>Reports</h2><p id="reports" class="report">3 orders today, all shipped.</p>';
    res
      .set('Cache-Control', 'no-store')
      .type('html')
      .send(renderAppPage('Admin', req.user!, links, reports));
  });
  app.get('/me', requireSession(), function currentUser(req: Request, res: Response) {
    const { id, name, roles, method } = req.user!;
    res.set('Cache-Control', 'no-store').json({ id, name, roles, method });
  });
  app.post('/logout', function signOutEverywhere(req: Request, res: Response, next: NextFunction) {
    logout(req, res).then(() => res.redirect(303, `${origin(config, 'auth')}/login`), next);
  });
  app.use(notFound());
  // A browser that may not see the page gets one that says why; API clients get the problem document.
  app.use(function friendlyForbidden(error: unknown, req: Request, res: Response, next: NextFunction) {
    const problem = toHttpError(error);
    if (problem instanceof ForbiddenError && req.method === 'GET' && req.accepts(['application/json', 'text/html']) === 'text/html') {
      res.status(403).set('Cache-Control', 'no-store').type('html').send(renderForbiddenPage(req.user, links));
      return;
    }
    next(error);
  });
  app.use(errorHandler({ html: true, homeUrl: links.admin, stylesheetUrl: '/assets/app.css' }));
  return app;
}

if (require.main === module) runSite('admin', createAdmin);
