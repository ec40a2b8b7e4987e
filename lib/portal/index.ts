export { loginPortal, type LoginPortalOptions, type PortalLoginLink } from './login-portal';
export {
  fileUserDirectory,
  redisUserDirectory,
  normalizeUsername,
  type UserDirectory,
  type DirectoryUser,
  type UserRecord,
  type ManagedUserDirectory,
  type RedisUserDirectoryOptions,
} from './user-directory';
export {
  hashPassword,
  verifyPasswordHash,
  parsePasswordHash,
  DEFAULT_SCRYPT_PARAMETERS,
  type ScryptParameters,
  type ParsedPasswordHash,
} from './password-hash';
export {
  LoginThrottle,
  DEFAULT_ACCOUNT_LIMIT,
  DEFAULT_IP_LIMIT,
  type LoginThrottleOptions,
  type ThrottleLimit,
  type ThrottleDecision,
} from './login-throttle';
