/**
 * The demo's access policy, one list for every site (as Authelia keeps its rules in one place): the shop needs one
 * factor, the whole admin site two (its audit page two done in the last 15 minutes) and the `read:reports`
 * permission, and revoking a session at the portal a second factor from the last five minutes. A signed-in user
 * whose roles do not grant `read:reports` gets admin's "not for you" page at once: a second factor would not give
 * him the role, so he is never asked for one. A user with the role and no second factor yet who opens admin is taken
 * to enrolment by the portal's step-up page, not locked out. Other addresses of the shop and the portal are their
 * own 404 pages; a host no rule names is denied. (`/healthz` is answered before any site's app, so health checks
 * never meet these rules.)
 */
import { accessPolicy, createPolicy, type AccessRule } from 'express-sso-kit';
import { type DemoConfig } from './config';

/**
 * The demo's roles: admins read and write reports (the admin site's permission) and manage accounts.
 *
 * @example
 * policy.can(req.user, 'read', 'reports');
 */
export const policy = createPolicy({ roles: { admin: { permissions: ['read:reports', 'write:reports', 'manage:accounts'] } } });

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
    { domain: host('admin'), path: '/audit', policy: 'two_factor', maxAgeSeconds: 900, permission: 'read:reports' },
    // Every other address of admin (its reports, /me, even its 404s): the permission, then two factors, so a password
    // alone shows nothing and a user without the role is told so before any second factor is asked.
    { domain: host('admin'), policy: 'two_factor', permission: 'read:reports' },
    { domain: host('shop'), path: [/^\/$/, '/me'], policy: 'one_factor' },
    { domain: host('auth'), path: '/sessions/revocations', methods: ['POST'], policy: 'two_factor', maxAgeSeconds: 300 },
    // The docs site (static files behind the front door's forward-auth): a login, and two factors for /internal.
    { domain: host('docs'), path: '/internal', policy: 'two_factor' },
    { domain: host('docs'), policy: 'one_factor' },
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
  return accessPolicy({ policy, rules: demoAccessRules(config) });
}
