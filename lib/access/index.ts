export { accessPolicy, type AccessPolicyOptions, type AccessPolicyLevel, type AccessRule } from './access-policy';
export { compileRules, decideAccess, type CompiledRule } from './access-rules';
