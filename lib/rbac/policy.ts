import { checkOptions, OptionsError } from '../util/options';
import { GrantSet, isConcreteRequest, parsePermission, type Permission } from './permission';

/** One role: the permissions it grants and the roles whose permissions it includes. */
export interface RoleDefinition {
  /** Permissions in the grammar of `permission.ts`, e.g. `['read:reports', 'write:reports:*']` or `['*:*']`. */
  permissions: readonly Permission[];
  /** Roles whose permissions this role also has; resolved (transitively) when the policy is created. */
  inherits?: readonly string[];
}

/** Options of {@link createPolicy}. */
export interface PolicyOptions {
  /** Every role the application knows, by name. */
  roles: Readonly<Record<string, RoleDefinition>>;
}

/** Anything with roles: a `SessionUser`, a token's claims mapped to `{ roles }`, or a plain object. */
export interface PermissionSubject {
  roles?: readonly string[] | null;
}

/** A compiled, immutable policy. */
export interface Policy {
  /** The role names the policy defines. */
  readonly roles: readonly string[];
  /**
   * Whether a subject (or a list of role names) may perform `action` on `resource`. Unknown role names grant
   * nothing; a resource with a wildcard or an empty segment is denied. A bound function, safe to hand to templates.
   */
  can(subject: PermissionSubject | readonly string[] | null | undefined, action: string, resource: string): boolean;
  /** The effective permissions of some roles (own and inherited), in canonical string form, sorted. */
  permissionsOf(subject: PermissionSubject | readonly string[] | null | undefined): string[];
}

// Control characters in a role name are never intended and would garble logs and error messages.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function rolesOf(subject: PermissionSubject | readonly string[] | null | undefined): readonly unknown[] {
  if (Array.isArray(subject)) return subject;
  const roles = (subject as PermissionSubject | null | undefined)?.roles;
  return Array.isArray(roles) ? roles : [];
}

function validateRole(name: string, definition: unknown): asserts definition is RoleDefinition {
  if (name.length === 0 || CONTROL.test(name))
    throw new OptionsError(`createPolicy: role names must be non-empty printable strings, got ${JSON.stringify(name)}`);
  checkOptions(`createPolicy: role "${name}"`, definition, {
    permissions: {
      type: 'array',
      required: true,
      expected: 'an array such as ["read:reports"] (it may be empty when the role only inherits)',
    },
    inherits: { type: 'string[]', expected: 'an array of role names' },
  });
}

/**
 * Compiles a role → permission policy once: permissions are parsed, inheritance is resolved (unknown roles and
 * cycles are `OptionsError`s (`TypeError`s) naming the roles), and each role gets a precomputed look-up, so {@link Policy.can} costs
 * a few Set look-ups per role.
 *
 * @example
 * const policy = createPolicy({
 *   roles: {
 *     viewer: { permissions: ['read:reports', 'read:reports:*'] },
 *     editor: { permissions: ['write:reports:*'], inherits: ['viewer'] },
 *     admin: { permissions: ['*:*'] },
 *   },
 * });
 * policy.can(req.user, 'write', 'reports:42'); // true for an editor
 */
export function createPolicy(options: PolicyOptions): Policy {
  checkOptions('createPolicy', options, {
    roles: { type: 'object', required: true, expected: '{ <name>: { permissions: [...], inherits?: [...] } }' },
  });
  const definitions = new Map<string, RoleDefinition>();
  const own = new Map<string, GrantSet>();
  for (const [name, definition] of Object.entries(options.roles)) {
    validateRole(name, definition);
    const grants = new GrantSet();
    for (const permission of definition.permissions) grants.add(parsePermission(permission, `createPolicy: role "${name}"`));
    definitions.set(name, definition);
    own.set(name, grants);
  }
  for (const [name, definition] of definitions) {
    for (const parent of definition.inherits ?? []) {
      if (!definitions.has(parent)) throw new OptionsError(`createPolicy: role "${name}" inherits "${parent}", which is not defined`);
    }
  }

  const effective = new Map<string, GrantSet>();
  // Depth-first resolution; `path` holds the roles being resolved, so meeting one again is a cycle.
  const resolve = (name: string, path: string[]): GrantSet => {
    const done = effective.get(name);
    if (done) return done;
    if (path.includes(name)) {
      const cycle = [...path.slice(path.indexOf(name)), name];
      throw new OptionsError(`createPolicy: roles inherit in a cycle: ${cycle.map((role) => `"${role}"`).join(' → ')}`);
    }
    const grants = new GrantSet();
    grants.addAll(own.get(name) as GrantSet);
    for (const parent of definitions.get(name)?.inherits ?? []) grants.addAll(resolve(parent, [...path, name]));
    effective.set(name, grants);
    return grants;
  };
  for (const name of definitions.keys()) resolve(name, []);

  const roleNames = Object.freeze([...definitions.keys()]);
  const can = (subject: PermissionSubject | readonly string[] | null | undefined, action: string, resource: string): boolean => {
    if (!isConcreteRequest(action, resource)) return false;
    for (const role of rolesOf(subject)) {
      if (typeof role === 'string' && effective.get(role)?.allows(action, resource)) return true;
    }
    return false;
  };
  const permissionsOf = (subject: PermissionSubject | readonly string[] | null | undefined): string[] => {
    const all = new GrantSet();
    for (const role of rolesOf(subject)) {
      const grants = typeof role === 'string' ? effective.get(role) : undefined;
      if (grants) all.addAll(grants);
    }
    return all.list();
  };
  return Object.freeze({ roles: roleNames, can, permissionsOf });
}
