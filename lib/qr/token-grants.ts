import type { Request } from 'express';
import type { JwtPayload } from '../tokens/types';
import { StoreUnavailableError } from '../store/port';
import { deriveOpenid, deriveUnionid, type RegisteredQrApp } from './app-registry';
import type { QrProviderContext } from './provider-context';
import type { QrDirectoryUser } from './provider-ports';
import { WeChatApiError } from './wechat-errors';
import { sha256 } from '../util/digest';

const SCOPE = 'snsapi_login';

/** The token answer of the exchange and the refresh, in WeChat's field names. */
export type QrTokenAnswer = Record<string, unknown>;

/**
 * True for a store outage, which must reach the caller as 503; anything else thrown by a token check is a refusal.
 *
 * @example
 * if (isOutage(error)) throw error;
 */
export function isOutage(error: unknown): boolean {
  return error instanceof StoreUnavailableError;
}

function subjectKey(appid: string, openid: string): string {
  return `qr:openid:{${sha256(`${appid}\0${openid}`, 'base64url')}}`;
}

/**
 * Redeems an authorization code of `app` once and issues the token pair of a new grant. A code presented a second
 * time means it leaked: every token issued from it is revoked (RFC 6749 §4.1.2).
 *
 * @example
 * const answer = await grantForCode(context, app, code);
 */
export async function grantForCode(context: QrProviderContext, app: RegisteredQrApp, code: string): Promise<QrTokenAnswer> {
  const { tokens, settings } = context;
  const redeemed = await context.requests.redeemCode(code, app.appid);
  if (!redeemed.ok) {
    if (redeemed.reason === 'code_used') {
      await tokens.revokeGrant(redeemed.grantId);
      throw new WeChatApiError('code_used');
    }
    throw new WeChatApiError('invalid_code');
  }
  const { userId, grantId } = redeemed.code;
  const secret = await context.openidSecret();
  const openid = deriveOpenid(secret, app.appid, userId);
  // The subject's record and the refresh token's go to Redis together (one round trip on a single node).
  const [accessToken, refreshToken] = await Promise.all([
    tokens.issueAccessToken({
      subject: openid,
      audience: app.appid,
      scope: SCOPE,
      roles: [],
      clientId: app.appid,
      grantId,
      expiresInSeconds: settings.accessTokenLifetimeSeconds,
    }),
    tokens.issueRefreshToken({ subject: openid, clientId: app.appid, grantId, scope: SCOPE }),
    context.store.set(subjectKey(app.appid, openid), userId, settings.subjectLifetimeSeconds),
  ]);
  // A replay that raced this exchange may have revoked the grant before the refresh token's family existed;
  // revoking again now covers that family too. The answer still goes out: exactly one caller wins the code.
  if (await tokens.isRevoked({ gid: grantId })) await tokens.revokeGrant(grantId);
  return {
    access_token: accessToken,
    expires_in: settings.accessTokenLifetimeSeconds,
    refresh_token: refreshToken,
    openid,
    scope: SCOPE,
    unionid: deriveUnionid(secret, userId),
  };
}

/**
 * Rotates a refresh token of `app` and issues a new access token of the same grant.
 *
 * @example
 * const answer = await refreshGrant(context, app, presentedRefreshToken);
 */
export async function refreshGrant(
  context: QrProviderContext,
  app: RegisteredQrApp,
  presented: string,
  req?: Request,
): Promise<QrTokenAnswer> {
  const { tokens, settings } = context;
  let rotated;
  try {
    rotated = await tokens.rotateRefreshToken(presented, app.appid, req);
  } catch (error) {
    if (isOutage(error)) throw error;
    throw new WeChatApiError('invalid_refresh_token', { cause: error });
  }
  const accessToken = await tokens.issueAccessToken({
    subject: rotated.subject,
    audience: app.appid,
    scope: rotated.scope,
    roles: [],
    clientId: app.appid,
    grantId: rotated.grantId,
    expiresInSeconds: settings.accessTokenLifetimeSeconds,
  });
  await context.store.expire(subjectKey(app.appid, rotated.subject), settings.subjectLifetimeSeconds);
  return {
    access_token: accessToken,
    expires_in: settings.accessTokenLifetimeSeconds,
    refresh_token: rotated.refreshToken,
    openid: rotated.subject,
    scope: rotated.scope,
  };
}

async function verifiedClaims(context: QrProviderContext, token: string): Promise<JwtPayload> {
  // The audience is the app the token was issued to; decoding it unverified only picks which audience to demand.
  const payloadPart = token.split('.')[1] ?? '';
  let audience: unknown;
  try {
    audience = (JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8')) as JwtPayload).aud;
  } catch {
    throw new WeChatApiError('invalid_access_token');
  }
  if (typeof audience !== 'string' || !context.apps.has(audience)) throw new WeChatApiError('invalid_access_token');
  try {
    return await context.tokens.verifyAccessToken(token, audience);
  } catch (error) {
    if (isOutage(error)) throw error;
    const reason = (error as { reason?: unknown }).reason;
    throw new WeChatApiError(reason === 'expired' ? 'access_token_expired' : 'invalid_access_token', { cause: error });
  }
}

/** What userinfo answers about the token's user. */
export interface QrTokenUser {
  user: QrDirectoryUser;
  /** The directory's id of the user; userinfo releases it only to apps registered with `releaseUserId`. */
  userId: string;
  /** The app the token was issued to. */
  appid: string;
  unionid: string;
}

/**
 * The user an access token was issued for, checked against the `openid` the caller names.
 *
 * @example
 * const { user, unionid } = await userForAccessToken(context, token, openid);
 */
export async function userForAccessToken(context: QrProviderContext, token: string, openid: string): Promise<QrTokenUser> {
  const claims = await verifiedClaims(context, token);
  if (claims.sub !== openid) throw new WeChatApiError('invalid_openid');
  const appid = claims.aud as string;
  const userId = await context.store.get(subjectKey(appid, openid));
  const user = userId ? await context.users.findById(userId) : null;
  if (!user || !userId) throw new WeChatApiError('user_not_found');
  const secret = await context.openidSecret();
  return { user, userId, appid, unionid: deriveUnionid(secret, userId) };
}
