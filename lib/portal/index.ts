export { loginPortal } from './login-portal';
export { type LoginPortalOptions, type PortalLoginLink } from './portal-options';
export { type PortalPasskeyOptions } from './passkey-options';
export { type PortalTwoFactorOptions } from './two-factor-options';
export { totpFactor, recoveryCodeFactor, type SecondFactor } from './second-factor';
export {
  fileUserDirectory,
  redisUserDirectory,
  normalizeUsername,
  type UserDirectory,
  type DirectoryUser,
  type UserRecord,
  type ManagedUserDirectory,
  type FileUserDirectoryOptions,
  type RedisUserDirectoryOptions,
} from './user-directory';
export {
  hashPassword,
  verifyPasswordHash,
  parsePasswordHash,
  DEFAULT_SCRYPT_PARAMETERS,
  type ScryptParameters,
  type ParsedPasswordHash,
} from '../util/password-hash';
export {
  LoginThrottle,
  MAX_DEVICE_TOKENS,
  type LoginAttemptFacts,
  type AllowedLogin,
  type RefusedLogin,
  type ThrottleDecision,
  type ThrottleScope,
  type IssuedDeviceTokens,
} from './login-throttle';
export {
  DEFAULT_THROTTLE_LIMITS,
  DEFAULT_DEVICE_TOKEN_LIFETIME_SECONDS,
  type LoginThrottleOptions,
  type ThrottleLimit,
} from './login-throttle-options';
export { clientNetwork, DEFAULT_IPV6_PREFIX_LENGTH } from './client-network';
export { DEVICE_COOKIE } from './device-cookie';
