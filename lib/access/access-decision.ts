import type { Policy } from '../rbac/policy';
import type { AccessPolicyLevel, CompiledRule, RoutingSettings } from './access-rules';
import { pathReadings } from './request-path';

/** What {@link decideAccess} reads of a request. */
export interface AccessFacts {
  /** The host the request was routed by, lower-cased, without its port; undefined when it has no usable one. */
  host: string | undefined;
  /** The path as the router matches it (`req.path`): still percent-encoded. */
  path: string;
  /** The method, upper-case. */
  method: string;
  /** For a CORS preflight that carries no credentials: the method it asks for, upper-case. */
  preflightMethod?: string | undefined;
  /** The app's router settings. */
  routing: RoutingSettings;
  /** The roles of the signed-in user; undefined when nobody is signed in. */
  roles: readonly string[] | undefined;
}

/** The rules and defaults {@link decideAccess} decides with, compiled once by {@link compileAccessPolicy}. */
export interface CompiledAccessPolicy {
  readonly rules: readonly CompiledRule[];
  /** What applies when no rule matches (index -1). */
  readonly fallback: CompiledRule;
  /** The policy `permission` rules are checked against. */
  readonly policy: Policy | undefined;
  /** Whether any rule names hosts (a request then needs a usable one). */
  readonly namesDomain: boolean;
}

/**
 * Puts compiled rules, the default and the permission policy together for {@link decideAccess}.
 *
 * @example
 * const compiled = compileAccessPolicy(compileRules('accessPolicy', rules), defaultRule('deny'), policy);
 */
export function compileAccessPolicy(rules: readonly CompiledRule[], fallback: CompiledRule, policy?: Policy): CompiledAccessPolicy {
  return Object.freeze({ rules, fallback, policy, namesDomain: rules.some((rule) => rule.namesDomain) });
}

/** Why a request is refused before any rule: its path or host reads differently to the router and to the rules. */
export type AccessRefusal = 'malformed-path' | 'ambiguous-path' | 'unusable-host';

/** The factors a request must show, and how recent they must be. */
export interface AccessRequirement {
  policy: 'one_factor' | 'two_factor';
  maxAgeSeconds: number | undefined;
}

/** The outcome of {@link decideAccess}: the rule that decided and why. */
export type AccessDecision =
  | { outcome: 'refuse'; reason: AccessRefusal; rule: undefined }
  | { outcome: 'allow'; reason: 'bypass' | 'preflight'; rule: CompiledRule }
  | { outcome: 'deny'; reason: 'deny-rule' | 'no-rule' | 'missing-role' | 'missing-permission'; rule: CompiledRule }
  | { outcome: 'authenticate'; reason: 'factors'; rule: CompiledRule; requirement: AccessRequirement };

const RANK: Record<AccessPolicyLevel, number> = { bypass: 0, one_factor: 1, two_factor: 2, deny: 3 };

/** The first rule for one reading of the path and one method. */
function ruleFor(compiled: CompiledAccessPolicy, host: string | undefined, path: string, method: string, routing: RoutingSettings) {
  return (
    compiled.rules.find((rule) => rule.matchesHost(host) && rule.matchesPath(path, routing) && rule.matchesMethod(method)) ??
    compiled.fallback
  );
}

/**
 * The rules an OPTIONS request answers to. Express hands OPTIONS to every `app.all` and `app.use` handler of its
 * path, whatever method they serve, so it must pass every rule any method of that path would meet: the rules of its
 * host and path up to the first one that lists no methods (or the default, when none of them is method-free).
 */
function rulesForOptions(compiled: CompiledAccessPolicy, host: string | undefined, path: string, routing: RoutingSettings) {
  const rules: CompiledRule[] = [];
  for (const rule of compiled.rules) {
    if (!rule.matchesHost(host) || !rule.matchesPath(path, routing)) continue;
    rules.push(rule);
    if (!rule.namesMethods) return rules;
  }
  rules.push(compiled.fallback);
  return rules;
}

function strictest(rules: readonly CompiledRule[]): CompiledRule {
  return rules.reduce((best, rule) => (RANK[rule.policy] > RANK[best.policy] ? rule : best));
}

function missingAuthorization(compiled: CompiledAccessPolicy, rule: CompiledRule, roles: readonly string[]) {
  if (rule.roles !== undefined && !rule.roles.some((role) => roles.includes(role))) return 'missing-role' as const;
  const permission = rule.permission;
  if (permission !== undefined && compiled.policy?.can(roles, permission.action, permission.resource) !== true) {
    return 'missing-permission' as const;
  }
  return undefined;
}

/**
 * The access decision for one request, a pure function of its facts. A path whose readings (as the router matches it,
 * and decoded as a parameter, a file server or a proxy reads it) meet different rules is refused, and so is a request
 * without a usable host when a rule names hosts. Otherwise the first matching rule decides: `HEAD` meets the rules of
 * `GET`; `OPTIONS` meets the strictest rule of every method of its path (a CORS preflight without credentials only
 * the rule of the method it asks for, and passes unless that rule is `deny`). A signed-in user whose roles the rule
 * does not admit is denied before any factor is asked.
 *
 * @example
 * const decision = decideAccess(compiled, { host: 'admin.example.test', path: '/Audit', method: 'GET',
 *   routing: { caseSensitive: false, strict: false }, roles: [] });
 * decision.outcome; // 'authenticate', by the /audit rule
 */
export function decideAccess(compiled: CompiledAccessPolicy, facts: AccessFacts): AccessDecision {
  const { host, routing } = facts;
  if (host === undefined && compiled.namesDomain) return { outcome: 'refuse', reason: 'unusable-host', rule: undefined };
  const readings = pathReadings(facts.path);
  if (readings === 'malformed-path') return { outcome: 'refuse', reason: 'malformed-path', rule: undefined };
  const preflight = facts.preflightMethod;
  const method = preflight ?? facts.method;
  const options = method === 'OPTIONS';
  let rules: readonly CompiledRule[] | undefined;
  for (const reading of readings) {
    const path = routing.caseSensitive ? reading : reading.toLowerCase();
    const here = options ? rulesForOptions(compiled, host, path, routing) : [ruleFor(compiled, host, path, method, routing)];
    if (rules !== undefined && (rules.length !== here.length || rules.some((rule, i) => rule !== here[i]))) {
      return { outcome: 'refuse', reason: 'ambiguous-path', rule: undefined };
    }
    rules = here;
  }
  const rule = rules!.length === 1 ? rules![0]! : strictest(rules!);
  if (rule.policy === 'deny') return { outcome: 'deny', reason: rule.index === -1 ? 'no-rule' : 'deny-rule', rule };
  if (rule.policy === 'bypass') return { outcome: 'allow', reason: 'bypass', rule };
  // Browsers send a preflight without cookies or credentials: nothing to authenticate, and the CORS layer answers it.
  if (preflight !== undefined) return { outcome: 'allow', reason: 'preflight', rule };
  let maxAgeSeconds: number | undefined;
  for (const candidate of rules!) {
    if (candidate.policy === 'bypass') continue;
    if (facts.roles !== undefined) {
      const missing = missingAuthorization(compiled, candidate, facts.roles);
      if (missing !== undefined) return { outcome: 'deny', reason: missing, rule: candidate };
    }
    const age = candidate.maxAgeSeconds;
    if (age !== undefined && (maxAgeSeconds === undefined || age < maxAgeSeconds)) maxAgeSeconds = age;
  }
  return {
    outcome: 'authenticate',
    reason: 'factors',
    rule,
    requirement: { policy: rule.policy === 'two_factor' ? 'two_factor' : 'one_factor', maxAgeSeconds },
  };
}
