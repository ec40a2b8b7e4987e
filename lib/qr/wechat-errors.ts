import { HttpError } from '../http/errors';

/**
 * The errcodes the provider answers with, WeChat's numbers, and the HTTP status chosen for each (RFC 9110 §15): 400 for
 * a bad or spent parameter, 401 for a missing/wrong credential or token, 404 for a user that no longer exists,
 * 429 for rate limits, 503 for an outage. With `wechatCompatibleStatus` every one of them but the outage is sent
 * with HTTP 200, as WeChat does.
 *
 * @example
 * res.status(WECHAT_ERRORS.code_used.status).json({ errcode: 40163, errmsg: WECHAT_ERRORS.code_used.errmsg });
 */
export const WECHAT_ERRORS = {
  system_busy: { errcode: -1, errmsg: 'system error, please retry later', status: 503 },
  invalid_grant_type: { errcode: 40002, errmsg: 'invalid grant_type', status: 400 },
  invalid_openid: { errcode: 40003, errmsg: 'invalid openid', status: 400 },
  invalid_appid: { errcode: 40013, errmsg: 'invalid appid', status: 401 },
  invalid_access_token: { errcode: 40014, errmsg: 'invalid access_token', status: 401 },
  invalid_code: { errcode: 40029, errmsg: 'invalid code', status: 400 },
  invalid_refresh_token: { errcode: 40030, errmsg: 'invalid refresh_token', status: 400 },
  invalid_secret: { errcode: 40125, errmsg: 'invalid appsecret', status: 401 },
  code_used: { errcode: 40163, errmsg: 'code been used', status: 400 },
  missing_access_token: { errcode: 41001, errmsg: 'access_token missing', status: 401 },
  missing_appid: { errcode: 41002, errmsg: 'appid missing', status: 400 },
  missing_refresh_token: { errcode: 41003, errmsg: 'refresh_token missing', status: 400 },
  missing_secret: { errcode: 41004, errmsg: 'appsecret missing', status: 400 },
  missing_code: { errcode: 41008, errmsg: 'missing code', status: 400 },
  missing_openid: { errcode: 41009, errmsg: 'missing openid', status: 400 },
  access_token_expired: { errcode: 42001, errmsg: 'access_token expired', status: 401 },
  refresh_token_expired: { errcode: 42002, errmsg: 'refresh_token expired', status: 400 },
  rate_limited: { errcode: 45011, errmsg: 'api minute-quota reach limit', status: 429 },
  user_not_found: { errcode: 46004, errmsg: 'user not exist', status: 404 },
  bad_request: { errcode: 44002, errmsg: 'invalid request body', status: 400 },
} as const;

const BEARER_ERRORS: ReadonlySet<string> = new Set(['invalid_access_token', 'access_token_expired', 'missing_access_token']);

/** The name of one WeChat error in {@link WECHAT_ERRORS}. */
export type WeChatErrorName = keyof typeof WECHAT_ERRORS;

/**
 * An error of the WeChat-format endpoints (`/sns/oauth2/*`, `/sns/userinfo`). It is an {@link HttpError}, so an app's
 * `errorHandler` would still render it; the provider's router renders it as `{ errcode, errmsg }`.
 *
 * @example
 * throw new WeChatApiError('code_used');
 */
export class WeChatApiError extends HttpError {
  override name = 'WeChatApiError';
  readonly errcode: number;
  readonly errmsg: string;

  constructor(which: WeChatErrorName, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    const entry = WECHAT_ERRORS[which];
    // A refused access token gets the Bearer challenge of RFC 6750, as every 401 of the kit carries one.
    const challenge: Record<string, string> = BEARER_ERRORS.has(which)
      ? { 'WWW-Authenticate': 'Bearer realm="qr-login", error="invalid_token"' }
      : {};
    super(entry.status, {
      code: which,
      detail: entry.errmsg,
      extensions: { errcode: entry.errcode },
      ...options,
      headers: { ...challenge, ...options.headers },
    });
    this.errcode = entry.errcode;
    this.errmsg = entry.errmsg;
  }
}
