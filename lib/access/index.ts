export { accessPolicy, type AccessPolicyOptions, type AccessPolicyLevel, type AccessRule } from './access-policy';
export { compileRules, defaultRule, type CompiledRule, type RoutingSettings } from './access-rules';
export {
  compileAccessPolicy,
  decideAccess,
  type AccessDecision,
  type AccessFacts,
  type AccessRefusal,
  type AccessRequirement,
  type CompiledAccessPolicy,
} from './access-decision';
export { pathReadings, isPlainPath } from './request-path';
