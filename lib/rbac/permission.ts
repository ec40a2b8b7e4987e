import { OptionsError } from '../util/options';

/**
 * The permission grammar. A user has roles, a role is a set of permissions, and a permission binds an action to a
 * resource:
 *
 *   permission := action ":" resource        (split at the first ":")
 *   action     := "*" | name
 *   resource   := "*" | name (":" name)* [":" "*"]
 *   name       := 1*( ALPHA / DIGIT / "_" / "-" / "." / "/" )
 *
 * `*` as the action grants every action; `*` as the whole resource grants every resource; a trailing `:*` grants
 * every resource below that prefix (`reports:*` covers `reports:42` and `reports:42:comments`, but not `reports`
 * itself, so the collection and its items can be granted apart).
 */

/** A permission as an object; the same grammar as the string form applies to each part. */
export interface PermissionObject {
  action: string;
  resource: string;
}

/** A permission in either form: `'read:reports'` or `{ action: 'read', resource: 'reports' }`. */
export type Permission = string | PermissionObject;

/** A permission after parsing; `resourcePrefix` is set for `reports:*`-style grants (it ends with ":"). */
export interface ParsedPermission {
  action: string;
  resource: string;
  /** `exact`: one resource; `prefix`: every resource below `resource` (stored without the `*`); `any`: all. */
  kind: 'exact' | 'prefix' | 'any';
}

const NAME = /^[A-Za-z0-9_\-./]+$/;
const CONCRETE_RESOURCE = /^[A-Za-z0-9_\-./]+(?::[A-Za-z0-9_\-./]+)*$/;

/**
 * Whether an action and resource name one concrete operation (no wildcard, no empty segment). Requests that do not
 * are denied rather than matched, so a `*` smuggled into a resource built from a URL never reads as "everything".
 *
 * @example
 * isConcreteRequest('read', 'reports:42'); // true
 */
export function isConcreteRequest(action: unknown, resource: unknown): boolean {
  return typeof action === 'string' && NAME.test(action) && typeof resource === 'string' && CONCRETE_RESOURCE.test(resource);
}

function describe(permission: unknown): string {
  return typeof permission === 'string' ? `"${permission}"` : (JSON.stringify(permission) ?? String(permission));
}

function parseResource(resource: string, where: string, original: unknown): Pick<ParsedPermission, 'resource' | 'kind'> {
  if (resource === '*') return { resource: '', kind: 'any' };
  const segments = resource.split(':');
  const last = segments.length - 1;
  segments.forEach((segment, index) => {
    if (segment === '*' && index === last && index > 0) return;
    if (!NAME.test(segment)) {
      throw new OptionsError(
        `${where}: malformed permission ${describe(original)}: resource segments are names of letters, digits, "_", "-", ".", "/", ` +
          `and "*" may only stand alone or as the last segment (e.g. "read:reports:*")`,
      );
    }
  });
  if (segments[last] === '*') return { resource: `${segments.slice(0, last).join(':')}:`, kind: 'prefix' };
  return { resource, kind: 'exact' };
}

/**
 * Parses one permission, throwing an `OptionsError` (a `TypeError`) that quotes it when it does not follow the grammar.
 *
 * @example
 * parsePermission('read:reports:*'); // { action: 'read', resource: 'reports:', kind: 'prefix' }
 */
export function parsePermission(permission: Permission, where = 'parsePermission'): ParsedPermission {
  let action: unknown;
  let resource: unknown;
  if (typeof permission === 'string') {
    const colon = permission.indexOf(':');
    if (colon <= 0 || colon === permission.length - 1) {
      throw new OptionsError(
        `${where}: malformed permission ${describe(permission)}: write "action:resource", e.g. "read:reports" or "*:*"`,
      );
    }
    action = permission.slice(0, colon);
    resource = permission.slice(colon + 1);
  } else if (permission !== null && typeof permission === 'object' && !Array.isArray(permission)) {
    action = permission.action;
    resource = permission.resource;
    const extra = Object.keys(permission).filter((key) => key !== 'action' && key !== 'resource');
    if (extra.length > 0) {
      throw new OptionsError(
        `${where}: malformed permission ${describe(permission)}: only "action" and "resource" are allowed, got "${extra.join('", "')}"`,
      );
    }
  } else {
    throw new OptionsError(
      `${where}: malformed permission ${describe(permission)}: give a string "action:resource" or { action, resource }`,
    );
  }
  if (typeof action !== 'string' || (action !== '*' && !NAME.test(action))) {
    throw new OptionsError(`${where}: malformed permission ${describe(permission)}: the action must be "*" or a name like "read"`);
  }
  if (typeof resource !== 'string' || resource.length === 0) {
    throw new OptionsError(`${where}: malformed permission ${describe(permission)}: the resource must be "*" or a name like "reports"`);
  }
  return { action, ...parseResource(resource, where, permission) };
}

/**
 * Renders a parsed permission back to its canonical string form.
 *
 * @example
 * formatPermission(parsePermission({ action: 'read', resource: 'reports:*' })); // 'read:reports:*'
 */
export function formatPermission(permission: ParsedPermission): string {
  if (permission.kind === 'any') return `${permission.action}:*`;
  if (permission.kind === 'prefix') return `${permission.action}:${permission.resource}*`;
  return `${permission.action}:${permission.resource}`;
}

/**
 * A compiled set of grants, answering "is (action, resource) allowed?" with a handful of Set look-ups: one per
 * action form (`read`, `*`) and resource form (exact, each `:`-prefix, any). Internal to the rbac folder.
 *
 * @example
 * const grants = new GrantSet();
 * grants.add(parsePermission('read:reports:*'));
 * grants.allows('read', 'reports:42'); // true
 */
export class GrantSet {
  private readonly exact = new Set<string>();
  private readonly prefixes = new Set<string>();
  private readonly anyResource = new Set<string>();
  private readonly canonical = new Set<string>();
  // Most policies have no prefix grants; then a miss costs two look-ups and no walk over the resource.
  private hasPrefixes = false;

  add(permission: ParsedPermission): void {
    const key = `${permission.action}\u0000${permission.resource}`;
    if (permission.kind === 'any') this.anyResource.add(permission.action);
    else if (permission.kind === 'prefix') {
      this.prefixes.add(key);
      this.hasPrefixes = true;
    } else this.exact.add(key);
    this.canonical.add(formatPermission(permission));
  }

  addAll(other: GrantSet): void {
    for (const value of other.exact) this.exact.add(value);
    for (const value of other.prefixes) this.prefixes.add(value);
    for (const value of other.anyResource) this.anyResource.add(value);
    for (const value of other.canonical) this.canonical.add(value);
    this.hasPrefixes ||= other.hasPrefixes;
  }

  /** The grants in canonical string form, sorted. */
  list(): string[] {
    return [...this.canonical].sort();
  }

  allows(action: string, resource: string): boolean {
    if (this.anyResource.has(action) || this.anyResource.has('*')) return true;
    if (this.exact.has(`${action}\u0000${resource}`) || this.exact.has(`*\u0000${resource}`)) return true;
    if (!this.hasPrefixes) return false;
    // Walk the request's own prefixes ("a:", "a:b:", …); a resource has few segments, so this stays cheap.
    for (let colon = resource.indexOf(':'); colon !== -1; colon = resource.indexOf(':', colon + 1)) {
      const prefix = resource.slice(0, colon + 1);
      if (this.prefixes.has(`${action}\u0000${prefix}`) || this.prefixes.has(`*\u0000${prefix}`)) return true;
    }
    return false;
  }
}
