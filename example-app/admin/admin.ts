/**
 * The admin site: the same shared login as the shop, and a permission on top. Only users whose roles grant
 * `read` on `reports` see the page; everybody else who is signed in gets a page saying why, at once (the demo's
 * access policy checks the permission before the factors). Every page of the site also needs a second factor (the
 * audit page one from the last 15 minutes), so a password-only session of a reports reader is sent through the
 * portal's step-up page, or to enrolment when it has no second factor.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import {
  errorHandler,
  ForbiddenError,
  notFound,
  requirePermission,
  requireSession,
  securityHeaders,
  ssoSession,
  toHttpError,
  type KeyValueStore,
  type SecurityEvents,
} from 'express-sso-kit';
import { appAssets, demoLinks, renderAppPage, renderForbiddenPage } from '../common/app-pages';
import { origin, sessionOptions, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { demoAccessPolicy, policy } from '../common/access';
import { appFormTargets, signOutEverywhere } from '../common/sign-out';
import { adminAccountRoutes } from './admin-accounts';

/**
 * The admin site's app.
 *
 * @example
 * const admin = createAdmin(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export function createAdmin(config: DemoConfig, store: KeyValueStore, events?: SecurityEvents): Express {
  const links = demoLinks(config);
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  app.use(
    securityHeaders({
      contentSecurityPolicy: {
        directives: { connectSrc: ["'self'", origin(config, 'api')], formAction: appFormTargets(config) },
      },
    }),
  );
  app.use('/assets', appAssets());
  const sessions = ssoSession(sessionOptions(config, store, events));
  app.use(sessions);
  app.use(demoAccessPolicy(config));
  // Accounts: disable, enable, remove, end sessions (manage:accounts and a second factor from the last 15 minutes).
  app.use(adminAccountRoutes(store, sessions, config));

  /** A page for users whose roles grant reading reports. */
  const reportsPage = (title: string, content: string) =>
    function showReports(req: Request, res: Response) {
      res
        .set('Cache-Control', 'no-store')
        .type('html')
        .send(renderAppPage(title, req.user!, links, content));
    };
  const readsReports = [requireSession(), requirePermission('read', 'reports', { policy })];
  const home = '<h2>Reports</h2><p id="reports" class="report">3 orders today, all shipped.</p><p><a href="/accounts">Accounts</a></p>';
  app.get('/', ...readsReports, reportsPage('Admin', home));
  // Two factors within 15 minutes (the policy's rule), fresher than the rest of the site asks.
  app.get('/audit', ...readsReports, reportsPage('Admin audit', '<h2>Audit log</h2><p id="audit" class="report">No changes today.</p>'));
  app.get('/me', requireSession(), function currentUser(req: Request, res: Response) {
    const { id, name, roles, method } = req.user!;
    res.set('Cache-Control', 'no-store').json({ id, name, roles, method });
  });
  app.post('/logout', signOutEverywhere(config));
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
