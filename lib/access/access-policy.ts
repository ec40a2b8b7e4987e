import type { Application, NextFunction, Request, RequestHandler, Response } from 'express';
import { isCorsPreflight } from '../cors/cors-preflight';
import { recordAccessDenied } from '../events/access-denied';
import { BadRequestError, ForbiddenError } from '../http/errors';
import { redactPath } from '../http/log-redaction';
import type { Policy } from '../rbac/policy';
import { requireSession } from '../session/require-session';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { routedHost } from '../util/request-origin';
import { compileAccessPolicy, decideAccess, type AccessDecision, type AccessRequirement } from './access-decision';
import { compileRules, defaultRule, type AccessPolicyLevel, type AccessRule, type RoutingSettings } from './access-rules';

export type { AccessPolicyLevel, AccessRule } from './access-rules';

/** Options of {@link accessPolicy}. */
export interface AccessPolicyOptions {
  /** The rules, first match wins. */
  rules: readonly AccessRule[];
  /** What applies when no rule matches. Default `deny`: a path nobody thought of is closed. */
  defaultPolicy?: AccessPolicyLevel;
  /** The portal's step-up page, when it is not `step-up` next to the login page (see `requireSession`). */
  stepUpUrl?: string;
  /** The policy of `createPolicy(...)` that rules with a `permission` are checked against. */
  policy?: Policy;
}

const SCHEMA: OptionSchema = {
  rules: { type: 'array', required: true, expected: "an array of rules like { domain: 'admin.example.test', policy: 'two_factor' }" },
  defaultPolicy: {
    type: 'string',
    check: (value: string) =>
      ['bypass', 'one_factor', 'two_factor', 'deny'].includes(value)
        ? undefined
        : `must be bypass, one_factor, two_factor or deny, got "${value}"`,
  },
  stepUpUrl: { type: 'string', expected: 'the absolute URL of the portal’s step-up page' },
  policy: {
    type: 'object',
    expected: 'a policy made by createPolicy({ roles })',
    check: (value: Partial<Policy>) => (typeof value.can === 'function' ? undefined : 'must be a policy made by createPolicy({ roles })'),
  },
};

const debug = debugChannel('rbac');
const DEFAULT_ROUTING: RoutingSettings = Object.freeze({ caseSensitive: false, strict: false });
const routingByApp = new WeakMap<Application, RoutingSettings>();

const REFUSALS = {
  'malformed-path': { code: 'malformed_uri', detail: 'The request URL contains a malformed percent-encoding.' },
  'ambiguous-path': {
    code: 'ambiguous_path',
    detail: 'The request path reads differently decoded (percent-escapes, dot segments, repeated or back slashes); send it plainly.',
  },
  'unusable-host': { code: 'invalid_host', detail: 'The request names no usable Host.' },
} as const;

// The access.denied reason each denial is recorded with.
const DENIALS = {
  'deny-rule': 'rule_denied',
  'no-rule': 'no_rule',
  'missing-role': 'permission_denied',
  'missing-permission': 'permission_denied',
} as const;

/**
 * The case and trailing-slash rules of the app's router, read from the router itself (Express 4's `app._router`,
 * Express 5's `app.router`), which took them from the app's settings when it was built; once per app.
 */
function routingOf(req: Request): RoutingSettings {
  const app = req.app;
  if (app === undefined) return DEFAULT_ROUTING;
  let routing = routingByApp.get(app);
  if (routing === undefined) {
    const holder = app as unknown as { _router?: RoutingSettings; router?: RoutingSettings };
    let router = holder._router;
    if (router === undefined) {
      try {
        router = holder.router;
      } catch {
        // Express 4's app.router only throws a migration notice; its router is app._router.
      }
    }
    routing = Object.freeze({
      caseSensitive: (router?.caseSensitive ?? app.enabled('case sensitive routing')) === true,
      strict: (router?.strict ?? app.enabled('strict routing')) === true,
    });
    routingByApp.set(app, routing);
  }
  return routing;
}

/** The method a CORS preflight asks for, when it is one and carries no credentials (browsers never send any). */
function preflightMethodOf(req: Request): string | undefined {
  if (!isCorsPreflight(req) || req.headers.cookie !== undefined || req.headers.authorization !== undefined) return undefined;
  return String(req.headers['access-control-request-method']).toUpperCase();
}

function hostnameOf(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  const port = /:\d+$/.exec(host);
  return port === null ? host : host.slice(0, port.index);
}

function describe(decision: AccessDecision): string {
  if (decision.rule === undefined) return `refused: ${decision.reason}`;
  const rule = decision.rule.index === -1 ? 'the default' : `rule ${decision.rule.index}`;
  return `${decision.outcome} by ${rule} (${decision.rule.policy}): ${decision.reason}`;
}

/**
 * Access control in one place, like Authelia's rules: each request is matched against `rules` by host, path and
 * method, the first match decides, and no match means `defaultPolicy` (`deny` unless you say otherwise).
 * `bypass` lets the request through, `one_factor` needs a login, `two_factor` a second factor (through the
 * portal's step-up page for browsers, 401 `insufficient_user_authentication` for APIs), `deny` answers 403;
 * `maxAgeSeconds` asks the factors to be that recent, `roles`/`permission` refuse a signed-in user who lacks them
 * (403 `permission_denied`) before any factor is asked. Rules see the request as the router does: the host it was
 * routed by (never `X-Forwarded-Host`), the path in the app's case and trailing-slash rules, `HEAD` as `GET`; a path
 * that reads differently decoded is refused (400). Mount it after `ssoSession`.
 *
 * @example
 * app.use(accessPolicy({ policy, rules: [
 *   { path: '/assets', policy: 'bypass' },
 *   { domain: 'admin.example.test', policy: 'two_factor', permission: 'read:reports' },
 *   { domain: '*.example.test', policy: 'one_factor' },
 * ] }));
 */
export function accessPolicy(options: AccessPolicyOptions): RequestHandler {
  checkOptions('accessPolicy', options, SCHEMA);
  const rules = compileRules('accessPolicy', options.rules);
  const fallback = defaultRule(options.defaultPolicy ?? 'deny');
  const compiled = compileAccessPolicy(rules, fallback, options.policy);
  const withPermission = rules.find((rule) => rule.permission !== undefined);
  if (withPermission !== undefined && options.policy === undefined) {
    throw new OptionsError(
      `accessPolicy: rules[${withPermission.index}] names a permission; pass the policy too: accessPolicy({ policy, rules })`,
    );
  }
  const stepUp = options.stepUpUrl === undefined ? {} : { stepUpUrl: options.stepUpUrl };
  if (options.stepUpUrl !== undefined && !rules.some((rule) => rule.policy === 'two_factor' || rule.maxAgeSeconds !== undefined)) {
    if (fallback.policy !== 'two_factor')
      throw new OptionsError('accessPolicy: stepUpUrl is only used by two_factor rules or rules with maxAgeSeconds');
  }
  // One guard per distinct requirement, built once: the handler only picks one.
  const guards = new Map<string, RequestHandler>();
  const guardOf = ({ policy, maxAgeSeconds }: AccessRequirement): RequestHandler => {
    const key = `${policy}:${maxAgeSeconds ?? ''}`;
    let guard = guards.get(key);
    if (guard === undefined) {
      guard = requireSession({
        ...(policy === 'two_factor' ? { acr: '2fa' as const } : {}),
        ...(maxAgeSeconds === undefined ? {} : { maxAgeSeconds }),
        ...(policy === 'two_factor' || maxAgeSeconds !== undefined ? stepUp : {}),
      });
      guards.set(key, guard);
    }
    return guard;
  };
  // Built now, so a bad stepUpUrl is refused when the factory is called, not at the first request.
  for (const rule of [...rules, fallback]) {
    if (rule.policy === 'one_factor' || rule.policy === 'two_factor') guardOf({ policy: rule.policy, maxAgeSeconds: rule.maxAgeSeconds });
  }

  return function accessPolicyMiddleware(req: Request, res: Response, next: NextFunction): void {
    const host = hostnameOf(routedHost(req));
    const roles = req.user === undefined ? undefined : Array.isArray(req.user.roles) ? req.user.roles : [];
    const decision = decideAccess(compiled, {
      host,
      path: req.path,
      method: req.method,
      preflightMethod: preflightMethodOf(req),
      routing: routingOf(req),
      roles,
    });
    if (debug.enabled) debug('%s %s on %s: %s', req.method, redactPath(req.path), host ?? '(no usable host)', describe(decision));
    switch (decision.outcome) {
      case 'refuse':
        next(new BadRequestError(REFUSALS[decision.reason]));
        return;
      case 'allow':
        next();
        return;
      case 'deny':
        recordAccessDenied(req, DENIALS[decision.reason], {
          rule: decision.rule.index === -1 ? 'default' : `rules[${decision.rule.index}]`,
        });
        next(
          decision.reason === 'missing-role' || decision.reason === 'missing-permission'
            ? new ForbiddenError({ code: 'permission_denied', detail: 'You are not allowed to access this resource.' })
            : new ForbiddenError({ code: 'access_denied', detail: 'Access to this resource is denied.' }),
        );
        return;
      case 'authenticate':
        guardOf(decision.requirement)(req, res, next);
    }
  };
}
