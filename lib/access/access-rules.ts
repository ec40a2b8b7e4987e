import { OptionsError } from '../util/options';

/** What a matching rule asks: let anyone through, one factor, two factors, or nobody. */
export type AccessPolicyLevel = 'bypass' | 'one_factor' | 'two_factor' | 'deny';

/** One rule: the first rule whose domain, path and method all match decides (Authelia's access-control order). */
export interface AccessRule {
  /** Hosts: `shop.example.test`, or `*.example.test` for every subdomain. Default any host. */
  domain?: string | readonly string[];
  /** Paths: `/admin` matches `/admin` and everything under `/admin/`; a RegExp is tested on the path. Default any. */
  path?: string | RegExp | ReadonlyArray<string | RegExp>;
  /** HTTP methods, e.g. `['POST']`. Default any. */
  methods?: readonly string[];
  policy: AccessPolicyLevel;
  /** With `one_factor`/`two_factor`: the factors must be at most this old, in seconds (a fresh login or step-up). */
  maxAgeSeconds?: number;
}

/** A rule compiled once: matchers ready, names checked. */
export interface CompiledRule {
  readonly index: number;
  readonly policy: AccessPolicyLevel;
  readonly maxAgeSeconds: number | undefined;
  matches(host: string, path: string, method: string): boolean;
}

const POLICIES: readonly AccessPolicyLevel[] = ['bypass', 'one_factor', 'two_factor', 'deny'];
const HOST_NAME = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

function list<T>(value: T | readonly T[] | undefined): readonly T[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? (value as readonly T[]) : [value as T];
}

function domainMatcher(pattern: string, where: string): (host: string) => boolean {
  const lower = pattern.toLowerCase();
  if (!HOST_NAME.test(lower)) throw new OptionsError(`${where} must be a host name or "*.<domain>", got "${pattern}"`);
  if (lower.startsWith('*.')) {
    const suffix = lower.slice(1);
    return (host) => host.endsWith(suffix) && host.length > suffix.length;
  }
  return (host) => host === lower;
}

function pathMatcher(pattern: string | RegExp, where: string): (path: string) => boolean {
  if (pattern instanceof RegExp) return (path) => pattern.test(path);
  if (typeof pattern !== 'string' || !pattern.startsWith('/')) {
    throw new OptionsError(`${where} must be a path starting with "/" or a RegExp, got ${JSON.stringify(pattern)}`);
  }
  if (pattern === '/') return () => true;
  const base = pattern.endsWith('/') ? pattern.slice(0, -1) : pattern;
  // On a segment boundary: `/admin` covers `/admin/users` but not `/administrator`.
  return (path) => path === base || path.startsWith(`${base}/`);
}

/**
 * Checks and compiles access rules once; throws an `OptionsError` naming the rule and the fix.
 *
 * @example
 * const rules = compileRules('accessPolicy', [{ domain: 'admin.example.test', policy: 'two_factor' }]);
 */
export function compileRules(who: string, rules: readonly AccessRule[]): CompiledRule[] {
  return rules.map((rule, index) => {
    const where = `${who}: rules[${index}]`;
    if (rule === null || typeof rule !== 'object')
      throw new OptionsError(`${where} must be an object { domain?, path?, methods?, policy }`);
    const known = new Set(['domain', 'path', 'methods', 'policy', 'maxAgeSeconds']);
    const unknown = Object.keys(rule).find((key) => !known.has(key));
    if (unknown !== undefined) throw new OptionsError(`${where}: unknown option "${unknown}" (known: ${[...known].join(', ')})`);
    if (!POLICIES.includes(rule.policy))
      throw new OptionsError(`${where}.policy must be one of ${POLICIES.join(', ')}, got ${JSON.stringify(rule.policy)}`);
    const maxAge = rule.maxAgeSeconds;
    if (maxAge !== undefined) {
      if (!Number.isInteger(maxAge) || maxAge < 0) throw new OptionsError(`${where}.maxAgeSeconds must be a whole number of seconds`);
      if (rule.policy !== 'one_factor' && rule.policy !== 'two_factor') {
        throw new OptionsError(`${where}.maxAgeSeconds only applies to one_factor and two_factor rules`);
      }
    }
    const domains = list(rule.domain)?.map((pattern, i) => domainMatcher(pattern, `${where}.domain[${i}]`));
    const paths = list(rule.path)?.map((pattern, i) => pathMatcher(pattern, `${where}.path[${i}]`));
    const methods = list(rule.methods)?.map((method) => String(method).toUpperCase());
    return {
      index,
      policy: rule.policy,
      maxAgeSeconds: maxAge,
      matches: (host, path, method) =>
        (domains === undefined || domains.some((match) => match(host))) &&
        (paths === undefined || paths.some((match) => match(path))) &&
        (methods === undefined || methods.includes(method)),
    };
  });
}

/**
 * The first rule matching a request, or undefined when none does (the caller's default applies).
 *
 * @example
 * decideAccess(rules, 'admin.example.test', '/users', 'GET')?.policy; // 'two_factor'
 */
export function decideAccess(rules: readonly CompiledRule[], host: string, path: string, method: string): CompiledRule | undefined {
  return rules.find((rule) => rule.matches(host, path, method));
}
