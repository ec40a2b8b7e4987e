/**
 * The api site: a REST collection (`/notes`) for two kinds of callers. The shop's and admin's pages call it with
 * the shared session cookie (a credentialed cross-origin `fetch`, so CORS must allow exactly those pages), API
 * clients with a Bearer token: the auth site's own, or the portal OpenID Provider's access token for the Notes API
 * (a partner app's, see ./api-bearer.ts). `requireAuth` picks the credential the request carries.
 */
import express, { type Express } from 'express';
import {
  corsPreflight,
  errorHandler,
  notFound,
  requireAuth,
  requireSession,
  securityHeaders,
  ssoSession,
  type KeyValueStore,
  type SecurityEvents,
} from 'express-sso-kit';
import { origin, sessionOptions, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { apiBearer } from './api-bearer';
import { notesApi } from './notes-api';

export { apiTokenSettings } from './api-bearer';

/**
 * The api site's app.
 *
 * @example
 * const api = createApi(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export function createApi(config: DemoConfig, store: KeyValueStore, events?: SecurityEvents): Express {
  // Only the apps' own pages may call with the cookie: CORS lets them read the answers, and the session layer
  // accepts their state-changing calls (sibling subdomains are same-site, so each is named, not trusted by pattern).
  const pages = [origin(config, 'shop'), origin(config, 'admin')];
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  app.use(securityHeaders());
  app.use(corsPreflight({ origins: pages, credentials: true, maxAgeSeconds: 600 }));
  app.use(ssoSession({ ...sessionOptions(config, store, events), csrf: { allowedOrigins: pages } }));
  const authenticate = requireAuth({
    bearer: apiBearer(config),
    session: requireSession(),
  });
  app.use(notesApi({ authenticate }));
  app.use(notFound());
  app.use(errorHandler());
  return app;
}

if (require.main === module) runSite('api', createApi);
