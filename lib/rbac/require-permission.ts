import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ForbiddenError, HttpError, ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import { StoreUnavailableError } from '../store/port';
import { GrantSet, isConcreteRequest, parsePermission, type Permission } from './permission';
import type { Policy } from './policy';

/** What a per-request {@link RequirePermissionOptions.check} receives besides the request. */
export interface PermissionCheckContext {
  action: string;
  resource: string;
  /** The roles the decision used. */
  roles: readonly string[];
  /** `session` when the identity came from `req.user`/`req.session.user`, `token` when from `req.auth`. */
  source: 'session' | 'token';
}

/** Options of {@link requirePermission}. */
export interface RequirePermissionOptions {
  /** The compiled policy from `createPolicy`. Required. */
  policy: Policy;
  /**
   * Where a verified token (`req.auth.claims`) carries its roles: a claim name (taken literally, so namespaced
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
   * Loads the roles of the authenticated request instead of reading them from the session user or the token,
   * e.g. from a database by `req.user.id`. May be async. A store outage (or a thrown `ServiceUnavailableError`)
   * answers 503; the loader runs at most once per request even when several `requirePermission`s share it.
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

interface Identity {
  source: 'session' | 'token';
  roles: readonly string[];
  scopes: readonly string[];
}

const OPTION_KEYS = new Set(['policy', 'rolesClaim', 'scopePermissions', 'loadRoles', 'check', 'challenge']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);
// One loader call per request, shared by every requirePermission that uses the same loader.
const loadedRoles = new WeakMap<Request, Map<unknown, Promise<readonly string[]>>>();

function looksLikeRequest(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'headers' in value && 'method' in value;
}

function stringList(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function claimAt(claims: Record<string, unknown>, path: readonly string[]): unknown {
  let value: unknown = claims;
  for (const name of path) {
    if (value === null || typeof value !== 'object' || !Object.prototype.hasOwnProperty.call(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

function scopesOf(claims: Record<string, unknown>): string[] {
  const scope = claims.scope;
  if (typeof scope === 'string') return scope.split(' ').filter(Boolean);
  return stringList(claims.scp);
}

/** Dependency failures become 503 (fail closed); the kit's own HTTP errors pass through; the rest stays a 500. */
function asDependencyError(error: unknown, what: string): unknown {
  if (error instanceof HttpError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof StoreUnavailableError || (typeof code === 'string' && NETWORK_CODES.has(code))) {
    return new ServiceUnavailableError({
      code: `${what}_unavailable`,
      detail: 'Permissions cannot be checked right now. Try again shortly.',
      cause: error,
    });
  }
  return error;
}

function validate(action: unknown, resource: unknown, options: RequirePermissionOptions | undefined): void {
  if (looksLikeRequest(action)) {
    throw new TypeError(
      'requirePermission: it was mounted as middleware itself; call it with the permission instead: ' +
        "app.use(requirePermission('read', 'reports', { policy }))",
    );
  }
  if (typeof action !== 'string' || !isConcreteRequest(action, 'x')) {
    throw new TypeError(`requirePermission: action must be a name like "read" (no wildcard), got ${JSON.stringify(action)}`);
  }
  if (typeof resource !== 'function' && (typeof resource !== 'string' || !isConcreteRequest('x', resource))) {
    throw new TypeError(
      `requirePermission: resource must be a name like "reports" or "reports:42" (no wildcard), or a function (req) => string, got ${JSON.stringify(resource)}`,
    );
  }
  if (options === null || typeof options !== 'object')
    throw new TypeError('requirePermission: pass options with a policy: { policy: createPolicy({...}) }');
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key))
      throw new TypeError(`requirePermission: unknown option "${key}"; known options are ${[...OPTION_KEYS].join(', ')}`);
  }
  if (!options.policy || typeof options.policy.can !== 'function') {
    throw new TypeError('requirePermission: options.policy is required; build it once with createPolicy({ roles })');
  }
  const { rolesClaim } = options;
  const claimPath = typeof rolesClaim === 'string' ? [rolesClaim] : rolesClaim;
  if (
    claimPath !== undefined &&
    (!Array.isArray(claimPath) || claimPath.length === 0 || claimPath.some((name) => typeof name !== 'string' || name === ''))
  ) {
    throw new TypeError('requirePermission: rolesClaim must be a claim name like "roles" or a path like ["realm_access", "roles"]');
  }
  for (const name of ['loadRoles', 'check'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function')
      throw new TypeError(`requirePermission: ${name} must be a function (req, …)`);
  }
  const { scopePermissions, challenge } = options;
  if (
    scopePermissions !== undefined &&
    (scopePermissions === null || typeof scopePermissions !== 'object' || Array.isArray(scopePermissions))
  ) {
    throw new TypeError("requirePermission: scopePermissions must map scopes to permissions, e.g. { 'reports.read': ['read:reports'] }");
  }
  if (challenge !== undefined && challenge !== false && (typeof challenge !== 'string' || challenge === '' || /[\r\n]/.test(challenge))) {
    throw new TypeError('requirePermission: challenge must be a WWW-Authenticate value like "Bearer" (no line breaks) or false');
  }
}

/**
 * Allows the request only when its authenticated user may perform `action` on `resource` under the policy; 401
 * without an identity, 403 (`permission_denied`) when not allowed. Roles come from the session user, or from a
 * verified token's claim (and mapped scopes), or from `loadRoles`. Mount it after the middleware that
 * authenticates: `requireSession()`, `requireBearer()` or `requireBasic()`.
 *
 * @example
 * app.delete('/reports/:id', requireSession(), requirePermission('delete', (req) => `reports:${req.params.id}`, {
 *   policy,
 *   check: async (req) => (await reports.get(req.params.id))?.ownerId === req.user?.id,
 * }), removeReport);
 */
export function requirePermission(
  action: string,
  resource: string | ((req: Request) => string),
  options: RequirePermissionOptions,
): RequestHandler {
  validate(action, resource, options);
  const { policy, loadRoles, check } = options;
  const claimPath = typeof options.rolesClaim === 'string' ? [options.rolesClaim] : [...(options.rolesClaim ?? ['roles'])];
  const scopeGrants = new Map<string, GrantSet>();
  for (const [scope, permissions] of Object.entries(options.scopePermissions ?? {})) {
    if (!Array.isArray(permissions)) throw new TypeError(`requirePermission: scopePermissions["${scope}"] must be an array of permissions`);
    const grants = new GrantSet();
    for (const permission of permissions) grants.add(parsePermission(permission, `requirePermission: scopePermissions["${scope}"]`));
    scopeGrants.set(scope, grants);
  }
  const challenge = options.challenge === undefined ? 'Bearer' : options.challenge;
  const unauthorizedHeaders: Record<string, string> = challenge ? { 'WWW-Authenticate': challenge } : {};

  const identify = (req: Request): Identity | undefined => {
    // A verified token is an explicit credential of this very request, unlike an ambient cookie, so it wins.
    const claims = req.auth?.claims as Record<string, unknown> | undefined;
    if (claims && typeof claims === 'object')
      return { source: 'token', roles: stringList(claimAt(claims, claimPath)), scopes: scopesOf(claims) };
    const user = req.user;
    if (user) return { source: 'session', roles: stringList(user.roles), scopes: [] };
    return undefined;
  };

  const allowedByGrants = (identity: Identity, roles: readonly string[], target: string): boolean => {
    if (policy.can(roles, action, target)) return true;
    if (identity.source !== 'token' || scopeGrants.size === 0 || !isConcreteRequest(action, target)) return false;
    return identity.scopes.some((scope) => scopeGrants.get(scope)?.allows(action, target) === true);
  };

  const rolesFromLoader = (req: Request, loader: NonNullable<RequirePermissionOptions['loadRoles']>): Promise<readonly string[]> => {
    let perRequest = loadedRoles.get(req);
    if (!perRequest) {
      perRequest = new Map();
      loadedRoles.set(req, perRequest);
    }
    let pending = perRequest.get(loader);
    if (!pending) {
      pending = Promise.resolve()
        .then(() => loader(req))
        .then((roles) => {
          if (!Array.isArray(roles) || roles.some((role) => typeof role !== 'string')) {
            throw new TypeError('requirePermission: loadRoles must resolve to an array of role names');
          }
          return roles;
        });
      perRequest.set(loader, pending);
    }
    return pending;
  };

  const denied = (target: string) =>
    new ForbiddenError({
      code: 'permission_denied',
      detail: isConcreteRequest(action, target)
        ? `You are not allowed to ${action} ${target}.`
        : `You are not allowed to ${action} this resource.`,
    });

  const finish = async (req: Request, identity: Identity, target: string, next: NextFunction): Promise<void> => {
    let roles = identity.roles;
    if (loadRoles) {
      try {
        roles = await rolesFromLoader(req, loadRoles);
      } catch (error) {
        next(asDependencyError(error, 'roles'));
        return;
      }
    }
    if (!allowedByGrants(identity, roles, target)) {
      next(denied(target));
      return;
    }
    if (check) {
      let allowed: boolean;
      try {
        allowed = (await check(req, { action, resource: target, roles, source: identity.source })) === true;
      } catch (error) {
        next(asDependencyError(error, 'permission_check'));
        return;
      }
      if (!allowed) {
        next(denied(target));
        return;
      }
    }
    next();
  };

  return function requirePermissionMiddleware(req: Request, _res: Response, next: NextFunction): void | Promise<void> {
    const identity = identify(req);
    if (!identity) {
      // With a session (or a token middleware that ran and set req.auth to undefined) the request is simply anonymous.
      if (req.session || Object.prototype.hasOwnProperty.call(req, 'auth')) {
        next(
          new UnauthorizedError({
            code: 'authentication_required',
            detail: 'Log in to access this resource.',
            headers: unauthorizedHeaders,
          }),
        );
        return;
      }
      next(
        new HttpError(500, {
          code: 'middleware_order',
          detail:
            'requirePermission found no identity and no authentication middleware before it: mount ssoSession() and requireSession() ' +
            '(cookie sessions), requireBearer() (tokens) or requireBasic() before requirePermission().',
        }),
      );
      return;
    }
    let target: string;
    if (typeof resource === 'function') {
      try {
        target = resource(req);
      } catch (error) {
        next(error);
        return;
      }
      if (typeof target !== 'string') {
        next(new TypeError('requirePermission: the resource function must return a string such as "reports:42"'));
        return;
      }
    } else {
      target = resource;
    }
    if (!loadRoles && !check) {
      // The common case stays synchronous: no promise, no extra tick.
      next(allowedByGrants(identity, identity.roles, target) ? undefined : denied(target));
      return;
    }
    return finish(req, identity, target, next);
  };
}
