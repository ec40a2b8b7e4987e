/**
 * The api site: a REST collection (`/notes`) for two kinds of callers. The shop's and admin's pages call it with
 * the shared session cookie (a credentialed cross-origin `fetch`, so CORS must allow exactly those pages), API
 * clients with a Bearer token. `requireAuth` picks the credential the request carries.
 */
import express, { type Express } from 'express';
import {
  corsPreflight,
  errorHandler,
  notFound,
  requireAuth,
  requireBearer,
  requireSession,
  securityHeaders,
  ssoSession,
  type KeyValueStore,
} from 'express-sso-kit';
import { origin, secretFor, sessionOptions, type DemoConfig } from '../common/config';
import { runSite } from '../common/run-site';
import { notesApi } from './notes-api';

/**
 * What the api accepts as Bearer tokens: HS256 JWTs signed with the demo's `api-tokens` key, issued by the auth
 * site for this api. Tests and scripts mint them with that key.
 *
 * @example
 * const { key, issuer, audience } = apiTokenSettings(config);
 */
export function apiTokenSettings(config: DemoConfig): { key: string; issuer: string; audience: string } {
  return { key: secretFor(config, 'api-tokens'), issuer: origin(config, 'auth'), audience: origin(config, 'api') };
}

/**
 * The api site's app.
 *
 * @example
 * const api = createApi(readDemoConfig(process.env), new RedisStore(process.env.REDIS_URL!));
 */
export function createApi(config: DemoConfig, store: KeyValueStore): Express {
  // Only the apps' own pages may call with the cookie: CORS lets them read the answers, and the session layer
  // accepts their state-changing calls (sibling subdomains are same-site, so each is named, not trusted by pattern).
  const pages = [origin(config, 'shop'), origin(config, 'admin')];
  const tokens = apiTokenSettings(config);
  const app = express();
  app.set('trust proxy', 'loopback, uniquelocal'); // the front door
  app.use(securityHeaders());
  app.use(corsPreflight({ origins: pages, credentials: true, maxAgeSeconds: 600 }));
  app.use(ssoSession({ ...sessionOptions(config, store), csrf: { allowedOrigins: pages } }));
  const authenticate = requireAuth({
    bearer: requireBearer({ secret: tokens.key, algorithms: ['HS256'], issuer: tokens.issuer, audience: tokens.audience }),
    session: requireSession(),
  });
  app.use(notesApi({ authenticate }));
  app.use(notFound());
  app.use(errorHandler());
  return app;
}

if (require.main === module) runSite('api', createApi);
