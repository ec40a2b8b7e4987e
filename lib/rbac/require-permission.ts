import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { recordAccessDenied } from '../events/access-denied';
import { ForbiddenError, HttpError, UnauthorizedError } from '../http/errors';
import { looksLikeCredential, redactPath } from '../http/log-redaction';
import { debugChannel, REDACTED } from '../util/debug';
import { isConcreteRequest } from './permission';
import { checkRequirePermission, type RequirePermissionOptions } from './require-permission-options';
import { asDependencyError, identifyRequest, rolesFromLoader, type RequestIdentity } from './request-identity';

export type { PermissionCheckContext, RequirePermissionOptions } from './require-permission-options';

const debug = debugChannel('rbac');

/** A resource for a debug line: segments that may be credentials (a record's secret handle) are left out. */
function loggable(resource: string): string {
  return isConcreteRequest('x', resource)
    ? resource
        .split(':')
        .map((segment) => (looksLikeCredential(segment) ? REDACTED : segment))
        .join(':')
    : '(a resource that is not a concrete name)';
}

/**
 * Allows the request only when its authenticated user may perform `action` on `resource` under the policy; 401
 * without an identity, 403 (`permission_denied`) when not allowed. Roles come from `req.user` (set by
 * `requireSession` or `requireBasic`), or from a verified token's claim (and mapped scopes), or from `loadRoles`.
 * Mount it after the middleware that authenticates. With `DEBUG=express-sso-kit:rbac` every refusal says why.
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
  const scopeGrants = checkRequirePermission(action, resource, options);
  const { policy, loadRoles, check } = options;
  const claimPath = typeof options.rolesClaim === 'string' ? [options.rolesClaim] : [...(options.rolesClaim ?? ['roles'])];
  const challenge = options.challenge === undefined ? 'Bearer' : options.challenge;
  const unauthorizedHeaders: Record<string, string> = challenge ? { 'WWW-Authenticate': challenge } : {};

  const allowedByGrants = (identity: RequestIdentity, roles: readonly string[], target: string): boolean => {
    if (policy.can(roles, action, target)) return true;
    if (identity.source !== 'token' || scopeGrants.size === 0 || !isConcreteRequest(action, target)) return false;
    return identity.scopes.some((scope) => scopeGrants.get(scope)?.allows(action, target) === true);
  };

  const denied = (req: Request, target: string, why: string) => {
    debug('%s %s: denied %s on %s: %s', req.method, redactPath(req.originalUrl), action, loggable(target), why);
    recordAccessDenied(req, 'permission_denied', { permission: `${action} ${loggable(target)}` });
    return new ForbiddenError({
      code: 'permission_denied',
      detail: isConcreteRequest(action, target)
        ? `You are not allowed to ${action} ${target}.`
        : `You are not allowed to ${action} this resource.`,
    });
  };
  const refusalByRoles = (identity: RequestIdentity, roles: readonly string[]) =>
    `the ${identity.source}'s roles [${roles.join(', ')}]${identity.source === 'token' ? ' and scopes' : ''} do not grant it`;

  const finish = async (req: Request, identity: RequestIdentity, target: string, next: NextFunction): Promise<void> => {
    let roles = identity.roles;
    if (loadRoles) {
      try {
        roles = await rolesFromLoader(req, loadRoles);
      } catch (error) {
        debug('%s %s: loadRoles failed (%s)', req.method, redactPath(req.originalUrl), (error as Error)?.name);
        next(asDependencyError(error, 'roles'));
        return;
      }
    }
    if (!allowedByGrants(identity, roles, target)) {
      next(denied(req, target, refusalByRoles(identity, roles)));
      return;
    }
    if (check) {
      let allowed: boolean;
      try {
        allowed = (await check(req, { action, resource: target, roles, source: identity.source })) === true;
      } catch (error) {
        debug(
          '%s %s: the check of %s on %s threw (%s)',
          req.method,
          redactPath(req.originalUrl),
          action,
          loggable(target),
          (error as Error)?.name,
        );
        next(asDependencyError(error, 'permission_check'));
        return;
      }
      if (!allowed) {
        next(denied(req, target, 'the check function refused'));
        return;
      }
    }
    next();
  };

  return function requirePermissionMiddleware(req: Request, _res: Response, next: NextFunction): void | Promise<void> {
    const identity = identifyRequest(req, claimPath);
    if (!identity) {
      // With a session (or a token middleware that ran and set req.auth to undefined) the request is simply anonymous.
      if (req.session || Object.prototype.hasOwnProperty.call(req, 'auth')) {
        debug('%s %s: no authenticated user or token, 401', req.method, redactPath(req.originalUrl));
        recordAccessDenied(req, 'not_authenticated', {
          permission: `${action} ${typeof resource === 'string' ? loggable(resource) : '(per request)'}`,
        });
        next(
          new UnauthorizedError({
            code: 'authentication_required',
            detail: 'Log in to access this resource.',
            headers: unauthorizedHeaders,
          }),
        );
        return;
      }
      debug('%s %s: no authentication middleware ran before requirePermission, 500', req.method, redactPath(req.originalUrl));
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
        next(
          new HttpError(500, {
            code: 'permission_misconfigured',
            detail: 'requirePermission: the resource function must return a string such as "reports:42"',
          }),
        );
        return;
      }
    } else {
      target = resource;
    }
    if (!loadRoles && !check) {
      // The common case stays synchronous: no promise, no extra tick.
      if (allowedByGrants(identity, identity.roles, target)) next();
      else next(denied(req, target, refusalByRoles(identity, identity.roles)));
      return;
    }
    return finish(req, identity, target, next);
  };
}
