export { qrLoginProvider, type QrLoginProviderOptions, type QrRateLimits } from './qr-login-provider';
export { qrLogin, type QrLoginOptions, type QrLoginHandlers, type QrUserProfile } from './qr-login';
export { qrTokenIssuer, type QrTokenIssuerOptions } from './qr-token-issuer';
export {
  hashAppSecret,
  generateAppSecret,
  verifyAppSecret,
  deriveOpenid,
  deriveUnionid,
  buildAppRegistry,
  MIN_APP_SECRET_LENGTH,
  type QrAppRegistration,
  type RegisteredQrApp,
} from './app-registry';
export {
  applyTransition,
  effectiveStatus,
  isTerminal,
  type QrLoginStatus,
  type QrLoginTransition,
  type QrLoginRecord,
  type QrTransitionResult,
  type QrTransitionRefusal,
} from './qr-state';
export { QrLoginRequests, type QrStatusEvent, type QrCodeRecord } from './qr-login-requests';
export { WeChatApiError, WECHAT_ERRORS, type WeChatErrorName } from './wechat-errors';
export type { QrTokenIssuer, QrUserDirectory, QrDirectoryUser, QrAccessTokenRequest, QrRotatedRefreshToken } from './provider-ports';
export type { QrUserinfo } from './qr-login-client';
export type { QrLoginSessionState, QrProviderTokens } from './types';
