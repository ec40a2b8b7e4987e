import { BadGatewayError, BadRequestError, HttpError, ServiceUnavailableError, UnauthorizedError } from '../http/errors';
import type { QrProviderTokens } from './types';

/** The user profile `/sns/userinfo` answers (WeChat's fields; more may come). */
export interface QrUserinfo {
  openid: string;
  nickname?: string;
  sex?: number;
  province?: string;
  city?: string;
  country?: string;
  headimgurl?: string;
  privilege?: string[];
  unionid?: string;
  /** The kit's provider only, to apps registered with `releaseUserId`: the directory's id of the user. */
  user_id?: string;
  [field: string]: unknown;
}

/** How the relying app talks to the provider, resolved once by `qrLogin`. */
export interface QrProviderClientSettings {
  providerUrl: string;
  appid: string;
  secret: string;
  exchangeMethod: 'POST' | 'GET';
  userinfoTokenIn: 'header' | 'query';
  timeoutMs: number;
}

// Codes that mean "this sign-in attempt is spent, scan again": the user can fix it.
const CODE_PROBLEMS = new Set([40029, 40163, 41008, 42003]);
// Codes that mean the provider is busy or limiting: try again later.
const BUSY = new Set([-1, 45009, 45011]);
// Codes that mean the refresh token is spent: the session's provider tokens are dead, a new login is needed.
const REFRESH_REJECTED = new Set([40030, 42002]);

function providerError(errcode: number, action: string): HttpError {
  const extensions = { errcode };
  if (CODE_PROBLEMS.has(errcode)) {
    return new BadRequestError({
      code: 'qr_code_rejected',
      detail: 'The sign-in code was not accepted (it may have expired or been used already). Please scan a new QR code.',
      extensions,
    });
  }
  if (REFRESH_REJECTED.has(errcode)) {
    return new UnauthorizedError({ code: 'qr_refresh_rejected', detail: 'The sign-in has expired. Please sign in again.', extensions });
  }
  if (BUSY.has(errcode)) {
    return new ServiceUnavailableError({
      code: 'qr_provider_busy',
      detail: 'The sign-in service is busy. Please try again in a moment.',
      extensions,
    });
  }
  return new BadGatewayError({
    code: 'qr_provider_refused',
    detail: `The sign-in service refused to ${action} (error ${errcode}). Please try again later or contact the site administrator.`,
    extensions,
  });
}

async function call(
  settings: QrProviderClientSettings,
  path: string,
  method: 'GET' | 'POST',
  params: Record<string, string>,
  headers: Record<string, string> = {},
  action: string,
): Promise<Record<string, unknown>> {
  const url = new URL(`${settings.providerUrl}${path}`);
  const init: RequestInit = {
    method,
    headers: { accept: 'application/json', ...headers },
    signal: AbortSignal.timeout(settings.timeoutMs),
    redirect: 'error',
  };
  if (method === 'GET') {
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  } else {
    init.body = new URLSearchParams(params).toString();
    init.headers = { ...init.headers, 'content-type': 'application/x-www-form-urlencoded' };
  }
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, init);
    text = await res.text();
  } catch (error) {
    // Unreachable or too slow: nothing was decided, the user can retry once the provider is back.
    throw new ServiceUnavailableError({
      code: 'qr_provider_unavailable',
      detail: 'The sign-in service did not answer. Please try again shortly.',
      cause: error,
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const record = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  // WeChat answers errors with HTTP 200 and an errcode; the kit's provider with a 4xx and the same body.
  if (record && typeof record.errcode === 'number' && record.errcode !== 0) throw providerError(record.errcode, action);
  if (res.status === 503 || res.status === 429) {
    throw new ServiceUnavailableError({
      code: 'qr_provider_unavailable',
      detail: 'The sign-in service is unavailable. Please try again shortly.',
    });
  }
  if (!res.ok || !record) {
    throw new BadGatewayError({
      code: 'qr_provider_bad_response',
      detail: 'The sign-in service answered unexpectedly. Please try again later.',
    });
  }
  return record;
}

function tokensFrom(body: Record<string, unknown>, previousOpenid?: string): QrProviderTokens {
  const { access_token: accessToken, refresh_token: refreshToken, openid, expires_in: expiresIn, unionid, scope } = body;
  if (
    typeof accessToken !== 'string' ||
    typeof refreshToken !== 'string' ||
    typeof openid !== 'string' ||
    typeof expiresIn !== 'number' ||
    expiresIn <= 0
  ) {
    throw new BadGatewayError({ code: 'qr_provider_bad_response', detail: 'The sign-in service answered without the expected tokens.' });
  }
  if (previousOpenid !== undefined && openid !== previousOpenid) {
    throw new BadGatewayError({ code: 'qr_provider_bad_response', detail: 'The sign-in service answered for another user.' });
  }
  return {
    accessToken,
    refreshToken,
    openid,
    ...(typeof unionid === 'string' ? { unionid } : {}),
    ...(typeof scope === 'string' ? { scope } : {}),
    expiresAt: Math.floor(Date.now() / 1000) + expiresIn,
  };
}

/**
 * Exchanges an authorization code at `/sns/oauth2/access_token` (form POST, or GET for WeChat itself).
 *
 * @example
 * const tokens = await exchangeCode(settings, req.query.code);
 */
export async function exchangeCode(settings: QrProviderClientSettings, code: string): Promise<QrProviderTokens> {
  const body = await call(
    settings,
    '/sns/oauth2/access_token',
    settings.exchangeMethod,
    { appid: settings.appid, secret: settings.secret, code, grant_type: 'authorization_code' },
    {},
    'exchange the sign-in code',
  );
  return tokensFrom(body);
}

/**
 * Reads `/sns/userinfo` for the token's openid, and checks the answer is about that openid.
 *
 * @example
 * const profile = await fetchUserinfo(settings, tokens);
 */
export async function fetchUserinfo(settings: QrProviderClientSettings, tokens: QrProviderTokens): Promise<QrUserinfo> {
  const inQuery = settings.userinfoTokenIn === 'query';
  const body = await call(
    settings,
    '/sns/userinfo',
    'GET',
    inQuery ? { access_token: tokens.accessToken, openid: tokens.openid } : { openid: tokens.openid },
    inQuery ? {} : { authorization: `Bearer ${tokens.accessToken}` },
    'read the user profile',
  );
  if (body.openid !== tokens.openid) {
    throw new BadGatewayError({ code: 'qr_provider_bad_response', detail: 'The sign-in service answered for another user.' });
  }
  return body as QrUserinfo;
}

/**
 * Renews the access token with the refresh token (`/sns/oauth2/refresh_token`); the refresh token rotates.
 *
 * @example
 * req.session.qrLogin.tokens = await refreshTokens(settings, req.session.qrLogin.tokens);
 */
export async function refreshTokens(settings: QrProviderClientSettings, tokens: QrProviderTokens): Promise<QrProviderTokens> {
  const body = await call(
    settings,
    '/sns/oauth2/refresh_token',
    settings.exchangeMethod,
    { appid: settings.appid, secret: settings.secret, grant_type: 'refresh_token', refresh_token: tokens.refreshToken },
    {},
    'renew the sign-in',
  );
  const renewed = tokensFrom(body, tokens.openid);
  return { ...renewed, ...(renewed.unionid === undefined && tokens.unionid !== undefined ? { unionid: tokens.unionid } : {}) };
}
