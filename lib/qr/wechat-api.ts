import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { methodNotAllowed } from '../http/handlers';
import { debugChannel } from '../util/debug';
import { guarded } from '../http/handlers';
import { headNotAllowed, type QrProviderContext } from './provider-context';
import type { QrDirectoryUser } from './provider-ports';
import { grantForCode, isOutage, refreshGrant, userForAccessToken, type QrTokenAnswer } from './token-grants';
import { WeChatApiError } from './wechat-errors';
import { authenticateClient, params, presentedAccessToken, text } from './wechat-request';
import { sendNoStoreJson } from '../http/no-store-json';

const debug = debugChannel('qr');

function sendTokens(res: Response, body: QrTokenAnswer): void {
  res.setHeader('Pragma', 'no-cache');
  sendNoStoreJson(res, body);
}

function profileField(user: QrDirectoryUser, name: 'city' | 'province' | 'country' | 'headimgurl'): string {
  const value = user[name] ?? user.attributes?.[name];
  return typeof value === 'string' ? value : '';
}

/** `POST|GET /sns/oauth2/access_token`: redeems the authorization code once and issues the token pair. */
function accessTokenEndpoint(context: QrProviderContext) {
  return async function qrAccessTokenEndpoint(req: Request, res: Response): Promise<void> {
    const input = params(req);
    const app = authenticateClient(context.apps, input, true);
    const code = text(input.code);
    if (!code) throw new WeChatApiError('missing_code');
    if (input.grant_type !== 'authorization_code') throw new WeChatApiError('invalid_grant_type');
    sendTokens(res, await grantForCode(context, app, code));
  };
}

/** `POST|GET /sns/oauth2/refresh_token`: rotates the refresh token and issues a new access token of the same grant. */
function refreshTokenEndpoint(context: QrProviderContext) {
  return async function qrRefreshTokenEndpoint(req: Request, res: Response): Promise<void> {
    const input = params(req);
    const app = authenticateClient(context.apps, input, context.settings.requireSecretOnRefresh);
    if (input.grant_type !== 'refresh_token') throw new WeChatApiError('invalid_grant_type');
    const presented = text(input.refresh_token);
    if (!presented) throw new WeChatApiError('missing_refresh_token');
    sendTokens(res, await refreshGrant(context, app, presented, req));
  };
}

/** `GET /sns/userinfo`: the profile of the token's user, for the openid the token was issued for. */
function userinfoEndpoint(context: QrProviderContext) {
  return async function qrUserinfoEndpoint(req: Request, res: Response): Promise<void> {
    const token = presentedAccessToken(req);
    const openid = text(req.query.openid);
    if (!openid) throw new WeChatApiError('missing_openid');
    const { user, userId, appid, unionid } = await userForAccessToken(context, token, openid);
    // The directory's own id goes only to an app the provider's operator registered as one of theirs.
    const released = context.apps.get(appid)?.releaseUserId === true ? { user_id: userId } : {};
    const sex = user.sex ?? user.attributes?.sex;
    sendNoStoreJson(res, {
      openid,
      nickname: user.nickname ?? user.name ?? '',
      sex: typeof sex === 'number' ? sex : 0,
      province: profileField(user, 'province'),
      city: profileField(user, 'city'),
      country: profileField(user, 'country'),
      headimgurl: profileField(user, 'headimgurl'),
      privilege: [],
      unionid,
      ...released,
    });
  };
}

/**
 * Renders errors of the WeChat-format endpoints as `{ errcode, errmsg }`. With `wechatCompatibleStatus` the HTTP
 * status is 200 as WeChat's; an outage keeps 503 with Retry-After either way, so the caller fails closed and retries.
 *
 * @example
 * router.use(weChatErrorRenderer({ wechatCompatibleStatus: false }));
 */
export function weChatErrorRenderer(options: { wechatCompatibleStatus: boolean }) {
  return function qrWeChatErrorRenderer(error: unknown, req: Request, res: Response, next: NextFunction): void {
    if (res.headersSent) {
      next(error);
      return;
    }
    let apiError: WeChatApiError;
    if (error instanceof WeChatApiError) apiError = error;
    else if (isOutage(error)) apiError = new WeChatApiError('system_busy', { headers: { 'Retry-After': '5' }, cause: error });
    else if ((error as { status?: unknown })?.status === 429)
      apiError = new WeChatApiError('rate_limited', { headers: (error as { headers?: Record<string, string> }).headers ?? {} });
    else if (typeof (error as { status?: unknown })?.status === 'number' && (error as { expose?: unknown }).expose === true) {
      apiError = new WeChatApiError('bad_request');
    } else {
      next(error);
      return;
    }
    // The path and the reason only: the query of a WeChat GET call carries the code, the secret or a token.
    const reason = (apiError.cause as { reason?: unknown } | undefined)?.reason;
    debug(
      '%s %s refused: %s (errcode %d)%s',
      req.method,
      req.path,
      apiError.code,
      apiError.errcode,
      reason ? `, token ${String(reason)}` : '',
    );
    const status = options.wechatCompatibleStatus && apiError.status < 500 ? 200 : apiError.status;
    for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
    sendNoStoreJson(res, { errcode: apiError.errcode, errmsg: apiError.errmsg }, status);
  };
}

/**
 * The WeChat-format API of the relying apps' servers (`/sns/oauth2/access_token`, `/sns/oauth2/refresh_token`,
 * `/sns/userinfo`), with WeChat's `{ errcode, errmsg }` error bodies.
 *
 * @example
 * const api = weChatApiRoutes(context, limiters.token);
 */
export function weChatApiRoutes(context: QrProviderContext, limiter: RequestHandler, router: Router = express.Router()): Router {
  const formOrJson = [express.urlencoded({ extended: false, limit: '4kb' }), express.json({ limit: '4kb' })];
  router.all(['/sns/oauth2/access_token', '/sns/oauth2/refresh_token', '/sns/userinfo'], function markWeChatApi(_req, res, next) {
    res.locals.qrWeChatApi = true;
    next();
  });
  // WeChat's GET token endpoints change state; a HEAD must not redeem a code or rotate a refresh token.
  router.head(['/sns/oauth2/access_token', '/sns/oauth2/refresh_token'], headNotAllowed(['GET', 'POST']));
  router
    .route('/sns/oauth2/access_token')
    .get(limiter, guarded(accessTokenEndpoint(context)))
    .post(formOrJson, limiter, guarded(accessTokenEndpoint(context)));
  router
    .route('/sns/oauth2/refresh_token')
    .get(limiter, guarded(refreshTokenEndpoint(context)))
    .post(formOrJson, limiter, guarded(refreshTokenEndpoint(context)));
  router.get('/sns/userinfo', limiter, guarded(userinfoEndpoint(context)));
  router.all(['/sns/oauth2/access_token', '/sns/oauth2/refresh_token'], methodNotAllowed(['GET', 'POST']));
  router.all('/sns/userinfo', methodNotAllowed(['GET']));
  const renderWeChatError = weChatErrorRenderer(context.settings);
  router.use(function qrWeChatErrors(error: unknown, req: Request, res: Response, next: NextFunction) {
    if (res.locals.qrWeChatApi && (error as { status?: unknown })?.status !== 405) renderWeChatError(error, req, res, next);
    else next(error);
  });
  return router;
}
