export { createPolicy, type Policy, type PolicyOptions, type RoleDefinition, type PermissionSubject } from './policy';
export {
  parsePermission,
  formatPermission,
  isConcreteRequest,
  type Permission,
  type PermissionObject,
  type ParsedPermission,
} from './permission';
export { requirePermission, type RequirePermissionOptions, type PermissionCheckContext } from './require-permission';
export { requireAuth, type RequireAuthOptions } from './require-auth';
