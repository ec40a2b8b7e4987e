/**
 * The demo's access policy, one list for every site (as Authelia keeps its rules in one place): the shop needs one
 * factor, the whole admin site two (its audit page two done in the last 15 minutes), and revoking a session at the
 * portal a second factor from the last five minutes. A user with no second factor yet who opens admin is taken to
 * enrolment by the portal's step-up page, not locked out. Other addresses of the shop and the portal are their own
 * 404 pages; a host no rule names is denied. (`/healthz` is answered before any site's app, so health checks never
 * meet these rules.)
 */
import { accessPolicy, type AccessRule } from 'express-sso-kit';
import { type DemoConfig } from './config';

/**
 * The rules, first match wins.
 *
 * @example
 * const rules = demoAccessRules(config);
 */
export function demoAccessRules(config: DemoConfig): AccessRule[] {
  const host = (site: string) => `${site}.${config.domain}`;
  return [
    // Assets and sign-out work for everyone; a signed-out browser posting /logout just lands on the login page.
    { path: ['/assets', '/logout'], policy: 'bypass' },
    { domain: host('admin'), path: '/audit', policy: 'two_factor', maxAgeSeconds: 900 },
    // Every other address of admin (its reports, /me, even its 404s): two factors, so a password alone shows nothing.
    { domain: host('admin'), policy: 'two_factor' },
    { domain: host('shop'), path: [/^\/$/, '/me'], policy: 'one_factor' },
    { domain: host('auth'), path: '/sessions/revocations', methods: ['POST'], policy: 'two_factor', maxAgeSeconds: 300 },
    // The portal serves its own sign-in pages and checks its own sessions; any other address of a site is its 404.
    { domain: [host('auth'), host('shop')], policy: 'bypass' },
  ];
}

/**
 * The policy middleware of one demo site (every site applies the same list; each meets only its own host).
 *
 * @example
 * app.use(demoAccessPolicy(config));
 */
export function demoAccessPolicy(config: DemoConfig) {
  return accessPolicy({ rules: demoAccessRules(config) });
}
