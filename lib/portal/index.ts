export { loginPortal } from './login-portal';
export { type LoginPortalOptions, type PortalLoginLink } from './portal-options';
export { type PortalPasskeyOptions } from './passkeys/passkey-options';
export { type PortalAccountOptions, type AccountNoticeKind } from './accounts/account-options';
export {
  PasswordResetLinks,
  passwordResetLinkSender,
  type PasswordResetLinksOptions,
  type SendResetLink,
  type ResetLinkSent,
} from './accounts/password-reset-links';
export { type PortalTwoFactorOptions } from './two-factor/two-factor-options';
export { totpFactor, recoveryCodeFactor, type SecondFactor } from './two-factor/second-factor';
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
} from './throttle/login-throttle';
export {
  DEFAULT_THROTTLE_LIMITS,
  DEFAULT_DEVICE_TOKEN_LIFETIME_SECONDS,
  type LoginThrottleOptions,
  type ThrottleLimit,
} from './throttle/login-throttle-options';
export { clientNetwork, DEFAULT_IPV6_PREFIX_LENGTH } from './throttle/client-network';
export { DEVICE_COOKIE } from './throttle/device-cookie';
