/**
 * The portal's forward-auth endpoint, for the demo's docs site: static files that Caddy serves (not Node), behind
 * Caddy's `forward_auth`, signed in through this portal with the same session and rules as the Express sites.
 */
import type { Express, RequestHandler } from 'express';
import { forwardAuth } from 'express-sso-kit';
import { demoAccessRules, policy } from '../common/access';
import type { DemoConfig } from '../common/config';

// The front door: loopback for `npm run demo`, the compose network's private ranges for `docker compose up`.
const FRONT_DOOR_ADDRESSES = ['127.0.0.1', '::1', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'];

/**
 * Mounts `/authz/forward-auth` (and the nginx and Envoy dialects) before the session middleware.
 *
 * @example
 * mountForwardAuth(app, config, sessions);
 */
export function mountForwardAuth(app: Express, config: DemoConfig, sessions: RequestHandler): void {
  app.use('/authz', forwardAuth({ session: sessions, trustedProxies: FRONT_DOOR_ADDRESSES, policy, rules: demoAccessRules(config) }));
}
