import type { Request } from 'express';
import { HttpError, ServiceUnavailableError } from '../http/errors';
import { StoreUnavailableError } from '../store/port';

/** Who is asking, as far as permissions go: where the identity came from, its roles and (tokens) its scopes. */
export interface RequestIdentity {
  source: 'session' | 'token';
  roles: readonly string[];
  scopes: readonly string[];
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);
// One loader call per request, shared by every requirePermission that uses the same loader.
const loadedRoles = new WeakMap<Request, Map<unknown, Promise<readonly string[]>>>();

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

/**
 * The identity of a request: a verified token (`req.auth`, set by `requireBearer`) first, since it is an explicit
 * credential of this very request unlike an ambient cookie; else `req.user` (set by `requireSession` or
 * `requireBasic`). Undefined when neither is there.
 *
 * @example
 * const identity = identifyRequest(req, ['roles']);
 */
export function identifyRequest(req: Request, claimPath: readonly string[]): RequestIdentity | undefined {
  const claims = req.auth?.payload as Record<string, unknown> | undefined;
  if (claims && typeof claims === 'object') {
    return { source: 'token', roles: stringList(claimAt(claims, claimPath)), scopes: scopesOf(claims) };
  }
  const user = req.user;
  if (user) return { source: 'session', roles: stringList(user.roles), scopes: [] };
  return undefined;
}

/**
 * The roles `loader` gives for this request, loaded once per request and loader however many `requirePermission`s
 * ask. Rejects with a 500 `permission_misconfigured` when the loader gives anything but an array of role names.
 *
 * @example
 * const roles = await rolesFromLoader(req, async (r) => db.rolesOf(r.user!.id));
 */
export function rolesFromLoader(
  req: Request,
  loader: (req: Request) => readonly string[] | Promise<readonly string[]>,
): Promise<readonly string[]> {
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
          throw new HttpError(500, {
            code: 'permission_misconfigured',
            detail: 'requirePermission: loadRoles must resolve to an array of role names',
          });
        }
        return roles;
      });
    perRequest.set(loader, pending);
  }
  return pending;
}

/**
 * Dependency failures of `loadRoles`/`check` become 503 `<what>_unavailable` (fail closed); the kit's own HTTP
 * errors pass through; anything else stays as it is (a 500).
 *
 * @example
 * next(asDependencyError(error, 'roles'));
 */
export function asDependencyError(error: unknown, what: 'roles' | 'permission_check'): unknown {
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
