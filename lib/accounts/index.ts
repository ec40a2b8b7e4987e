export { DEFAULT_DIRECTORY_SOURCE, normalizeUsername, type DirectoryUser, type UserDirectory, type UserRecord } from './user-directory';
export { fileUserDirectory, type FileUserDirectoryOptions } from './file-user-directory';
export {
  isWritableUserDirectory,
  type Account,
  type AccountPage,
  type AccountSearch,
  type CredentialVersionCondition,
  type ManagedUserDirectory,
  type NewAccount,
  type SetEmailOptions,
  type WritableUserDirectory,
} from './writable-user-directory';
export { normalizeEmail } from './account-record';
export {
  redisUserDirectory,
  memoryUserDirectory,
  type RedisUserDirectoryOptions,
  type MemoryUserDirectoryOptions,
} from './kv-user-directory';
export { postgresUserDirectory, postgresUserDirectorySql, type PostgresUserDirectoryOptions } from './postgres-user-directory';
export {
  passwordPolicy,
  type PasswordPolicy,
  type PasswordPolicyOptions,
  type PasswordContext,
  type PasswordRefusal,
  type PasswordRefusalCode,
  type PasswordVerdict,
} from './password-policy';
export {
  rangeBreachCheck,
  BreachCheckUnavailableError,
  type BreachCheck,
  type BreachCheckResult,
  type RangeBreachCheckOptions,
} from './breach-check';
export {
  AccountTokens,
  type AccountTokensOptions,
  type IssuedAccountToken,
  type AccountTokenCheck,
  type AccountTokenRefusal,
} from './account-tokens';
export { accountAdmin, type AccountAdmin, type AccountAdminOptions, type AdminActor } from './account-admin';
export { accountAdminRoutes, type AccountAdminRoutesOptions } from './account-admin-routes';
