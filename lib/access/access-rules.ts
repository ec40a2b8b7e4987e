import { isConcreteRequest } from '../rbac/permission';
import { OptionsError } from '../util/options';
import { isPlainPath } from './request-path';

/** What a matching rule asks: let anyone through, one factor, two factors, or nobody. */
export type AccessPolicyLevel = 'bypass' | 'one_factor' | 'two_factor' | 'deny';

/** One rule: the first rule whose domain, path and method all match decides (Authelia's access-control order). */
export interface AccessRule {
  /** Hosts: `shop.example.test`, or `*.example.test` for every subdomain. Default any host. */
  domain?: string | readonly string[];
  /**
   * Paths: `/admin` matches `/admin` and everything under `/admin/`, in the case rule of the app's router (any case
   * unless `case sensitive routing` is on); a RegExp is tested on the path as the router sees it (with the `i` flag
   * under case-insensitive routing, and with or without its trailing slash unless `strict routing` is on). Default any.
   */
  path?: string | RegExp | ReadonlyArray<string | RegExp>;
  /** HTTP methods, e.g. `['POST']`; `GET` covers `HEAD` too, as Express's routes do. Default any. */
  methods?: readonly string[];
  /** What a request meeting the rule needs: nothing (`bypass`), a login, two factors, or it is refused (`deny`). */
  policy: AccessPolicyLevel;
  /** With `one_factor`/`two_factor`: the factors must be at most this old, in seconds (a fresh login or step-up). */
  maxAgeSeconds?: number;
  /**
   * With `one_factor`/`two_factor`: a signed-in user must hold one of these roles, or gets 403 `permission_denied`
   * at once, before any step-up or enrolment is asked (a second factor never adds a role).
   */
  roles?: string | readonly string[];
  /**
   * With `one_factor`/`two_factor`: a permission (`'read:reports'`) the user's roles must grant under
   * `accessPolicy({ policy })`, checked like `roles`, before the factors.
   */
  permission?: string;
}

/** The two router settings that decide which paths reach a route (`app.set('case sensitive routing')`, `'strict routing'`). */
export interface RoutingSettings {
  caseSensitive: boolean;
  strict: boolean;
}

/** A rule compiled once: matchers ready, names checked. */
export interface CompiledRule {
  /** The rule's place in the list; -1 for the default policy. */
  readonly index: number;
  readonly policy: AccessPolicyLevel;
  readonly maxAgeSeconds: number | undefined;
  readonly roles: readonly string[] | undefined;
  readonly permission: { readonly action: string; readonly resource: string } | undefined;
  /** Whether the rule names hosts (it then needs a usable Host). */
  readonly namesDomain: boolean;
  /** Whether the rule lists methods. */
  readonly namesMethods: boolean;
  /** The host is the routed host without its port, lower-cased. */
  matchesHost(host: string | undefined): boolean;
  /** The path is already lower-cased when the routing is case-insensitive. */
  matchesPath(path: string, routing: RoutingSettings): boolean;
  /** An upper-case method; `HEAD` matches a rule that lists `GET`. */
  matchesMethod(method: string): boolean;
}

const POLICIES: readonly AccessPolicyLevel[] = ['bypass', 'one_factor', 'two_factor', 'deny'];
const HOST_NAME = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
const KNOWN = ['domain', 'path', 'methods', 'policy', 'maxAgeSeconds', 'roles', 'permission'];

type PathMatcher = (path: string, routing: RoutingSettings) => boolean;

function list<T>(value: T | readonly T[] | undefined): readonly T[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? (value as readonly T[]) : [value as T];
}

function domainMatcher(pattern: string, where: string): (host: string) => boolean {
  const lower = typeof pattern === 'string' ? pattern.toLowerCase() : '';
  if (!HOST_NAME.test(lower)) throw new OptionsError(`${where} must be a host name or "*.<domain>", got ${JSON.stringify(pattern)}`);
  if (lower.startsWith('*.')) {
    const suffix = lower.slice(1);
    return (host) => host.endsWith(suffix) && host.length > suffix.length;
  }
  return (host) => host === lower;
}

/** The path with its trailing slash taken off, or put on: the same route's other address without strict routing. */
function otherTrailing(path: string): string | undefined {
  if (path === '/' || path === '') return undefined;
  return path.endsWith('/') ? path.slice(0, -1) : `${path}/`;
}

function regExpMatcher(pattern: RegExp): PathMatcher {
  // Without g or y, whose lastIndex would make test() depend on the request before.
  const flags = pattern.flags.replace(/[gy]/g, '');
  const sensitive = new RegExp(pattern.source, flags);
  const insensitive = flags.includes('i') ? sensitive : new RegExp(pattern.source, `${flags}i`);
  return (path, routing) => {
    const regExp = routing.caseSensitive ? sensitive : insensitive;
    if (regExp.test(path)) return true;
    const other = routing.strict ? undefined : otherTrailing(path);
    return other !== undefined && regExp.test(other);
  };
}

function pathMatcher(pattern: string | RegExp, where: string): PathMatcher {
  if (pattern instanceof RegExp) return regExpMatcher(pattern);
  if (typeof pattern !== 'string' || !pattern.startsWith('/')) {
    throw new OptionsError(`${where} must be a path starting with "/" or a RegExp, got ${JSON.stringify(pattern)}`);
  }
  if (!isPlainPath(pattern)) {
    throw new OptionsError(
      `${where} must be written as the router matches it: letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @ /, ` +
        `no percent-escapes, empty or dot segments; got ${JSON.stringify(pattern)}`,
    );
  }
  if (pattern === '/') return () => true;
  const base = pattern.endsWith('/') ? pattern.slice(0, -1) : pattern;
  const lower = base.toLowerCase();
  // On a segment boundary: `/admin` covers `/admin/users` but not `/administrator`.
  return (path, routing) => {
    const prefix = routing.caseSensitive ? base : lower;
    return path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47);
  };
}

function rolesOf(rule: AccessRule, where: string): readonly string[] | undefined {
  const roles = list(rule.roles);
  if (roles === undefined) return undefined;
  if (roles.length === 0 || roles.some((role) => typeof role !== 'string' || role === '')) {
    throw new OptionsError(`${where}.roles must be a role name or a non-empty array of role names, e.g. ['admin']`);
  }
  return Object.freeze([...roles]);
}

function permissionOf(rule: AccessRule, where: string): CompiledRule['permission'] {
  const permission = rule.permission;
  if (permission === undefined) return undefined;
  const colon = typeof permission === 'string' ? permission.indexOf(':') : -1;
  const action = colon === -1 ? '' : (permission as string).slice(0, colon);
  const resource = colon === -1 ? '' : (permission as string).slice(colon + 1);
  if (!isConcreteRequest(action, resource)) {
    throw new OptionsError(
      `${where}.permission must name one action on one resource, like "read:reports", got ${JSON.stringify(permission)}`,
    );
  }
  return Object.freeze({ action, resource });
}

function compileRule(rule: AccessRule, index: number, where: string): CompiledRule {
  if (rule === null || typeof rule !== 'object') throw new OptionsError(`${where} must be an object { domain?, path?, methods?, policy }`);
  const unknown = Object.keys(rule).find((key) => !KNOWN.includes(key));
  if (unknown !== undefined) throw new OptionsError(`${where}: unknown option "${unknown}" (known: ${KNOWN.join(', ')})`);
  if (!POLICIES.includes(rule.policy))
    throw new OptionsError(`${where}.policy must be one of ${POLICIES.join(', ')}, got ${JSON.stringify(rule.policy)}`);
  const factors = rule.policy === 'one_factor' || rule.policy === 'two_factor';
  const maxAge = rule.maxAgeSeconds;
  if (maxAge !== undefined) {
    if (!Number.isInteger(maxAge) || maxAge < 0) throw new OptionsError(`${where}.maxAgeSeconds must be a whole number of seconds`);
    if (!factors) throw new OptionsError(`${where}.maxAgeSeconds only applies to one_factor and two_factor rules`);
  }
  if ((rule.roles !== undefined || rule.permission !== undefined) && !factors) {
    throw new OptionsError(`${where}: roles and permission only apply to one_factor and two_factor rules (they need a signed-in user)`);
  }
  const domains = list(rule.domain)?.map((pattern, i) => domainMatcher(pattern, `${where}.domain[${i}]`));
  const paths = list(rule.path)?.map((pattern, i) => pathMatcher(pattern, `${where}.path[${i}]`));
  const methods = list(rule.methods)?.map((method) => String(method).toUpperCase());
  const headAsGet = methods !== undefined && methods.includes('GET') && !methods.includes('HEAD');
  return Object.freeze({
    index,
    policy: rule.policy,
    maxAgeSeconds: maxAge,
    roles: rolesOf(rule, where),
    permission: permissionOf(rule, where),
    namesDomain: domains !== undefined,
    namesMethods: methods !== undefined,
    // Loops rather than some(): this runs for every rule of every request.
    matchesHost(host: string | undefined): boolean {
      if (domains === undefined) return true;
      if (host === undefined) return false;
      for (const match of domains) if (match(host)) return true;
      return false;
    },
    matchesPath(path: string, routing: RoutingSettings): boolean {
      if (paths === undefined) return true;
      for (const match of paths) if (match(path, routing)) return true;
      return false;
    },
    matchesMethod: (method: string) => methods === undefined || methods.includes(method) || (headAsGet && method === 'HEAD'),
  });
}

/**
 * Checks and compiles access rules once; throws an `OptionsError` naming the rule and the fix.
 *
 * @example
 * const rules = compileRules('accessPolicy', [{ domain: 'admin.example.test', policy: 'two_factor' }]);
 */
export function compileRules(who: string, rules: readonly AccessRule[]): CompiledRule[] {
  return rules.map((rule, index) => compileRule(rule, index, `${who}: rules[${index}]`));
}

/**
 * The default policy as a rule that matches everything (index -1).
 *
 * @example
 * const fallback = defaultRule('deny');
 */
export function defaultRule(policy: AccessPolicyLevel): CompiledRule {
  return Object.freeze({
    index: -1,
    policy,
    maxAgeSeconds: undefined,
    roles: undefined,
    permission: undefined,
    namesDomain: false,
    namesMethods: false,
    matchesHost: () => true,
    matchesPath: () => true,
    matchesMethod: () => true,
  });
}
