import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { JwtPayload } from 'jsonwebtoken';
import { StoreUnavailableError, type KeyValueStore } from '../store/port';
import { deriveOpenid, deriveUnionid, verifyAppSecret, type RegisteredQrApp } from './app-registry';
import type { QrLoginRequests } from './qr-login-requests';
import type { QrDirectoryUser, QrTokenIssuer, QrUserDirectory } from './provider-ports';
import { WeChatApiError } from './wechat-errors';

/** What the WeChat-format endpoints share, built once by `qrLoginProvider`. */
export interface WeChatApiContext {
  apps: ReadonlyMap<string, RegisteredQrApp>;
  requests: QrLoginRequests;
  store: KeyValueStore;
  tokens: QrTokenIssuer;
  users: QrUserDirectory;
  openidSecret: () => Promise<Buffer>;
  accessTokenLifetimeSeconds: number;
  /** How long the openid → user mapping is kept: as long as a refresh token may live. */
  subjectRetentionSeconds: number;
  requireSecretOnRefresh: boolean;
  wechatCompatibleStatus: boolean;
}

const SCOPE = 'snsapi_login';

// The store wraps every outage in StoreUnavailableError; anything else thrown by a token check is a refusal.
function isOutage(error: unknown): boolean {
  return error instanceof StoreUnavailableError;
}

/** Parameters of a WeChat API call: the form or JSON body, or the query for GET (WeChat's own clients use GET). */
function params(req: Request): Record<string, unknown> {
  if (req.method === 'GET') return req.query as Record<string, unknown>;
  return req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function subjectKey(appid: string, openid: string): string {
  return `qr:openid:{${createHash('sha256').update(`${appid}\0${openid}`).digest('base64url')}}`;
}

function authenticateApp(context: WeChatApiContext, input: Record<string, unknown>, secretRequired: boolean): RegisteredQrApp {
  const appid = text(input.appid);
  if (!appid) throw new WeChatApiError('missing_appid');
  const app = context.apps.get(appid);
  if (!app) throw new WeChatApiError('invalid_appid');
  const secret = text(input.secret);
  if (!secret) {
    if (secretRequired) throw new WeChatApiError('missing_secret');
    return app;
  }
  if (!verifyAppSecret(app, secret)) throw new WeChatApiError('invalid_secret');
  return app;
}

function sendTokens(res: Response, body: Record<string, unknown>): void {
  res.set('Cache-Control', 'no-store').set('Pragma', 'no-cache').json(body);
}

/**
 * `POST|GET /sns/oauth2/access_token`: redeems the authorization code once and issues the token pair.
 *
 * @example
 * router.post('/sns/oauth2/access_token', accessTokenEndpoint(context));
 */
export function accessTokenEndpoint(context: WeChatApiContext) {
  return async function qrAccessTokenEndpoint(req: Request, res: Response): Promise<void> {
    const input = params(req);
    const app = authenticateApp(context, input, true);
    const code = text(input.code);
    if (!code) throw new WeChatApiError('missing_code');
    if (input.grant_type !== 'authorization_code') throw new WeChatApiError('invalid_grant_type');

    const redeemed = await context.requests.redeemCode(code, app.appid);
    if (!redeemed.ok) {
      if (redeemed.reason === 'code_used') {
        // A replayed code means it leaked: revoke everything issued from it (RFC 6749 §4.1.2).
        await context.tokens.revokeGrant(redeemed.grantId);
        throw new WeChatApiError('code_used');
      }
      throw new WeChatApiError('invalid_code');
    }
    const { userId, grantId } = redeemed.code;
    const secret = await context.openidSecret();
    const openid = deriveOpenid(secret, app.appid, userId);
    await context.store.set(subjectKey(app.appid, openid), userId, context.subjectRetentionSeconds);
    const [accessToken, refreshToken] = await Promise.all([
      context.tokens.issueAccessToken({
        subject: openid,
        audience: app.appid,
        scope: SCOPE,
        roles: [],
        clientId: app.appid,
        grantId,
        expiresInSeconds: context.accessTokenLifetimeSeconds,
      }),
      context.tokens.issueRefreshToken({ subject: openid, clientId: app.appid, grantId, scope: SCOPE }),
    ]);
    // A replay that raced this exchange may have revoked the grant before the refresh token's family existed;
    // revoking again now covers that family too. The answer still goes out: exactly one caller wins the code.
    if (await context.tokens.isRevoked({ gid: grantId })) await context.tokens.revokeGrant(grantId);
    sendTokens(res, {
      access_token: accessToken,
      expires_in: context.accessTokenLifetimeSeconds,
      refresh_token: refreshToken,
      openid,
      scope: SCOPE,
      unionid: deriveUnionid(secret, userId),
    });
  };
}

/**
 * `POST|GET /sns/oauth2/refresh_token`: rotates the refresh token and issues a new access token of the same grant.
 *
 * @example
 * router.post('/sns/oauth2/refresh_token', refreshTokenEndpoint(context));
 */
export function refreshTokenEndpoint(context: WeChatApiContext) {
  return async function qrRefreshTokenEndpoint(req: Request, res: Response): Promise<void> {
    const input = params(req);
    const app = authenticateApp(context, input, context.requireSecretOnRefresh);
    if (input.grant_type !== 'refresh_token') throw new WeChatApiError('invalid_grant_type');
    const presented = text(input.refresh_token);
    if (!presented) throw new WeChatApiError('missing_refresh_token');
    let rotated;
    try {
      rotated = await context.tokens.rotateRefreshToken(presented, app.appid);
    } catch (error) {
      if (isOutage(error)) throw error;
      throw new WeChatApiError('invalid_refresh_token', { cause: error });
    }
    const accessToken = await context.tokens.issueAccessToken({
      subject: rotated.subject,
      audience: app.appid,
      scope: rotated.scope,
      roles: [],
      clientId: app.appid,
      grantId: rotated.grantId,
      expiresInSeconds: context.accessTokenLifetimeSeconds,
    });
    await context.store.expire(subjectKey(app.appid, rotated.subject), context.subjectRetentionSeconds);
    sendTokens(res, {
      access_token: accessToken,
      expires_in: context.accessTokenLifetimeSeconds,
      refresh_token: rotated.refreshToken,
      openid: rotated.subject,
      scope: rotated.scope,
    });
  };
}

function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
  return match?.[1];
}

function profileField(user: QrDirectoryUser, name: 'city' | 'province' | 'country' | 'headimgurl'): string {
  const value = user[name] ?? user.attributes?.[name];
  return typeof value === 'string' ? value : '';
}

async function verifiedClaims(context: WeChatApiContext, token: string): Promise<JwtPayload> {
  // The audience is the app the token was issued to; decoding it unverified only picks which audience to demand.
  const payloadPart = token.split('.')[1] ?? '';
  let audience: unknown;
  try {
    audience = (JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8')) as JwtPayload).aud;
  } catch {
    throw new WeChatApiError('invalid_access_token');
  }
  if (typeof audience !== 'string' || !context.apps.has(audience)) throw new WeChatApiError('invalid_access_token');
  let claims: JwtPayload;
  try {
    claims = await context.tokens.verifyAccessToken(token, audience);
  } catch (error) {
    if (isOutage(error)) throw error;
    const reason = (error as { reason?: unknown }).reason;
    throw new WeChatApiError(reason === 'expired' ? 'access_token_expired' : 'invalid_access_token', { cause: error });
  }
  return claims;
}

/**
 * `GET /sns/userinfo`: the profile of the token's user, for the openid the token was issued for.
 *
 * @example
 * router.get('/sns/userinfo', userinfoEndpoint(context));
 */
export function userinfoEndpoint(context: WeChatApiContext) {
  return async function qrUserinfoEndpoint(req: Request, res: Response): Promise<void> {
    const queryToken = text(req.query.access_token);
    const headerToken = bearerToken(req);
    // Two tokens in one request is ambiguous (RFC 6750 §2): refuse rather than pick one.
    if (queryToken && headerToken) throw new WeChatApiError('invalid_access_token');
    const token = queryToken ?? headerToken;
    if (!token) throw new WeChatApiError('missing_access_token');
    const openid = text(req.query.openid);
    if (!openid) throw new WeChatApiError('missing_openid');
    const claims = await verifiedClaims(context, token);
    if (claims.sub !== openid) throw new WeChatApiError('invalid_openid');
    const appid = claims.aud as string;
    const userId = await context.store.get(subjectKey(appid, openid));
    const user = userId ? await context.users.findById(userId) : null;
    if (!user || !userId) throw new WeChatApiError('user_not_found');
    const sex = user.sex ?? user.attributes?.sex;
    const secret = await context.openidSecret();
    res.set('Cache-Control', 'no-store').json({
      openid,
      nickname: user.nickname ?? user.name ?? '',
      sex: typeof sex === 'number' ? sex : 0,
      province: profileField(user, 'province'),
      city: profileField(user, 'city'),
      country: profileField(user, 'country'),
      headimgurl: profileField(user, 'headimgurl'),
      privilege: [],
      unionid: deriveUnionid(secret, userId),
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
export function weChatErrorRenderer(context: Pick<WeChatApiContext, 'wechatCompatibleStatus'>) {
  return function qrWeChatErrorRenderer(error: unknown, _req: Request, res: Response, next: NextFunction): void {
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
    const status = context.wechatCompatibleStatus && apiError.status < 500 ? 200 : apiError.status;
    for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
    res.status(status).set('Cache-Control', 'no-store').json({ errcode: apiError.errcode, errmsg: apiError.errmsg });
  };
}
