import type { Request } from 'express';
import { checkOptions, OptionsError, refuseMiddlewareUse, type OptionSchema } from '../util/options';
import { GrantSet, isConcreteRequest, parsePermission, type Permission } from './permission';
import type { Policy } from './policy';

/** What a per-request {@link RequirePermissionOptions.check} receives besides the request. */
export interface PermissionCheckContext {
  action: string;
  resource: string;
  /** The roles the decision used. */
  roles: readonly string[];
  /** `session` when the identity came from `req.user` (a session or Basic login), `token` when from `req.auth`. */
  source: 'session' | 'token';
}

/** Options of {@link requirePermission}. */
export interface RequirePermissionOptions {
  /** The compiled policy from `createPolicy`. Required. */
  policy: Policy;
  /**
   * Where a verified token (`req.auth.payload`) carries its roles: a claim name (taken literally, so namespaced
   * claims like `"https://example.test/roles"` work) or a path of names (`['realm_access', 'roles']`).
   * Default `'roles'`. The claim may hold an array of strings or a single string.
   */
  rolesClaim?: string | readonly string[];
  /**
   * Maps OAuth scopes of a verified token (`scope`, space-separated, or `scp`, an array) to permissions they grant
   * in addition to the token's roles, e.g. `{ 'reports.read': ['read:reports', 'read:reports:*'] }`. Default: none.
   */
  scopePermissions?: Readonly<Record<string, readonly Permission[]>>;
  /**
   * Loads the roles of the authenticated request instead of reading them from `req.user` or the token, e.g. from a
   * database by `req.user.id` (`<source>|<subject>`). May be async. A store outage (or a thrown
   * `ServiceUnavailableError`) answers 503; the loader runs at most once per request even when several
   * `requirePermission`s share it.
   */
  loadRoles?: (req: Request) => readonly string[] | Promise<readonly string[]>;
  /**
   * A per-request rule checked after the policy allowed, e.g. "is the user the owner of this record". Return
   * false to refuse with 403; throw an `HttpError` (such as `NotFoundError`) to answer otherwise. May be async.
   */
  check?: (req: Request, context: PermissionCheckContext) => boolean | Promise<boolean>;
  /** `WWW-Authenticate` value of the 401 sent when the request has no identity. Default `'Bearer'`; `false` for none. */
  challenge?: string | false;
}

const OPTIONS: OptionSchema = {
  policy: {
    type: 'object',
    required: true,
    expected: 'the compiled policy: build it once with createPolicy({ roles })',
    check: (policy: { can?: unknown }) => (typeof policy.can === 'function' ? undefined : 'must be built with createPolicy({ roles })'),
  },
  rolesClaim: {
    type: ['string', 'string[]'],
    expected: 'a claim name like "roles" or a path like ["realm_access", "roles"]',
    check: (claim: string | readonly string[]) =>
      (typeof claim === 'string' ? [claim] : claim).some((name) => name === '') || claim.length === 0
        ? 'must be a claim name like "roles" or a path like ["realm_access", "roles"], without empty names'
        : undefined,
  },
  scopePermissions: {
    type: 'object',
    expected: "an object mapping scopes to permissions, e.g. { 'reports.read': ['read:reports'] }",
  },
  loadRoles: { type: 'function', expected: 'a function (req) => roles' },
  check: { type: 'function', expected: 'a function (req, context) => boolean' },
  challenge: {
    type: ['string', 'boolean'],
    expected: 'a WWW-Authenticate value like "Bearer", or false',
    check: (challenge: string | boolean) =>
      challenge === true || challenge === '' || (typeof challenge === 'string' && /[\r\n]/.test(challenge))
        ? 'must be a WWW-Authenticate value like "Bearer" (no line breaks) or false'
        : undefined,
  },
};

/**
 * Validates the arguments of `requirePermission` when the factory is called: the action and a fixed resource must
 * be concrete names, the options follow the kit's options rule, and `scopePermissions` are parsed into grants.
 *
 * @example
 * const scopeGrants = checkRequirePermission('read', 'reports', { policy });
 */
export function checkRequirePermission(action: unknown, resource: unknown, options: RequirePermissionOptions): Map<string, GrantSet> {
  refuseMiddlewareUse('requirePermission', action, "app.use(requirePermission('read', 'reports', { policy }))");
  if (typeof action !== 'string' || !isConcreteRequest(action, 'x')) {
    throw new OptionsError(`requirePermission: action must be a name like "read" (no wildcard), got ${JSON.stringify(action)}`);
  }
  if (typeof resource !== 'function' && (typeof resource !== 'string' || !isConcreteRequest('x', resource))) {
    throw new OptionsError(
      `requirePermission: resource must be a name like "reports" or "reports:42" (no wildcard), or a function (req) => string, got ${JSON.stringify(resource)}`,
    );
  }
  if (options === undefined) throw new OptionsError('requirePermission: pass options with a policy: { policy: createPolicy({...}) }');
  checkOptions('requirePermission', options, OPTIONS);
  const scopeGrants = new Map<string, GrantSet>();
  for (const [scope, permissions] of Object.entries(options.scopePermissions ?? {})) {
    if (!Array.isArray(permissions))
      throw new OptionsError(`requirePermission: scopePermissions["${scope}"] must be an array of permissions`);
    const grants = new GrantSet();
    for (const permission of permissions) grants.add(parsePermission(permission, `requirePermission: scopePermissions["${scope}"]`));
    scopeGrants.set(scope, grants);
  }
  return scopeGrants;
}
