import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ForbiddenError } from '../http/errors';
import { requireSession } from '../session/require-session';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { requestHost } from '../util/request-origin';
import { compileRules, decideAccess, type AccessPolicyLevel, type AccessRule, type CompiledRule } from './access-rules';

export type { AccessPolicyLevel, AccessRule } from './access-rules';

/** Options of {@link accessPolicy}. */
export interface AccessPolicyOptions {
  /** The rules, first match wins. */
  rules: readonly AccessRule[];
  /** What applies when no rule matches. Default `deny`: a path nobody thought of is closed. */
  defaultPolicy?: AccessPolicyLevel;
  /** The portal's step-up page, when it is not `step-up` next to the login page (see `requireSession`). */
  stepUpUrl?: string;
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
};

const debug = debugChannel('rbac');

/**
 * Access control in one place, like Authelia's rules: each request is matched against `rules` by host, path and
 * method, the first match decides, and no match means `defaultPolicy` (`deny` unless you say otherwise).
 * `bypass` lets the request through, `one_factor` needs a login, `two_factor` a second factor (through the
 * portal's step-up page for browsers, 401 `insufficient_user_authentication` for APIs), `deny` answers 403;
 * `maxAgeSeconds` asks the factors to be that recent. Mount it after `ssoSession`.
 *
 * @example
 * app.use(accessPolicy({ rules: [
 *   { path: '/assets', policy: 'bypass' },
 *   { domain: 'admin.example.test', policy: 'two_factor' },
 *   { domain: '*.example.test', policy: 'one_factor' },
 * ] }));
 */
export function accessPolicy(options: AccessPolicyOptions): RequestHandler {
  checkOptions('accessPolicy', options, SCHEMA);
  const rules = compileRules('accessPolicy', options.rules);
  const fallback = options.defaultPolicy ?? 'deny';
  const stepUp = options.stepUpUrl === undefined ? {} : { stepUpUrl: options.stepUpUrl };
  if (options.stepUpUrl !== undefined && !rules.some((rule) => rule.policy === 'two_factor' || rule.maxAgeSeconds !== undefined)) {
    if (fallback !== 'two_factor')
      throw new OptionsError('accessPolicy: stepUpUrl is only used by two_factor rules or rules with maxAgeSeconds');
  }
  // One guard per distinct requirement, built once: the handler only picks one.
  const guards = new Map<string, RequestHandler>();
  const guardOf = (policy: AccessPolicyLevel, maxAgeSeconds: number | undefined): RequestHandler => {
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
  const fallbackRule: CompiledRule = { index: -1, policy: fallback, maxAgeSeconds: undefined, matches: () => true };
  // Built now, so a bad stepUpUrl is refused when the factory is called, not at the first request.
  for (const rule of [...rules, fallbackRule]) {
    if (rule.policy === 'one_factor' || rule.policy === 'two_factor') guardOf(rule.policy, rule.maxAgeSeconds);
  }

  return function accessPolicyMiddleware(req: Request, res: Response, next: NextFunction): void {
    const host = (requestHost(req) ?? '').replace(/:\d+$/, '');
    const rule = decideAccess(rules, host, req.path, req.method) ?? fallbackRule;
    if (debug.enabled)
      debug(
        '%s %s on %s: %s (rule %s)',
        req.method,
        req.path,
        host || '(no host)',
        rule.policy,
        rule.index === -1 ? 'default' : rule.index,
      );
    switch (rule.policy) {
      case 'bypass':
        next();
        return;
      case 'deny':
        next(new ForbiddenError({ code: 'access_denied', detail: 'Access to this resource is denied.' }));
        return;
      default:
        guardOf(rule.policy, rule.maxAgeSeconds)(req, res, next);
    }
  };
}
