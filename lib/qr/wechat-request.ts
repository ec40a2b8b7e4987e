import type { Request } from 'express';
import { verifyAppSecret, type RegisteredQrApp } from './app-registry';
import { WeChatApiError } from './wechat-errors';
import { constantTimeEqual } from '../util/digest';

/**
 * Parameters of a WeChat API call: the form or JSON body, or the query for GET (WeChat's own clients use GET).
 *
 * @example
 * const input = params(req); // { appid, secret, code, grant_type }
 */
export function params(req: Request): Record<string, unknown> {
  if (req.method === 'GET') return req.query as Record<string, unknown>;
  return req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
}

/**
 * A non-empty string parameter, or undefined (an array from a repeated parameter is not one).
 *
 * @example
 * const code = text(input.code);
 */
export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * The registered app calling the API, authenticated by its appid and secret (the secret may be left out only
 * where `secretRequired` is false: WeChat's refresh).
 *
 * @example
 * const app = authenticateClient(apps, params(req), true);
 */
export function authenticateClient(
  apps: ReadonlyMap<string, RegisteredQrApp>,
  input: Record<string, unknown>,
  secretRequired: boolean,
): RegisteredQrApp {
  const appid = text(input.appid);
  if (!appid) throw new WeChatApiError('missing_appid');
  const app = apps.get(appid);
  if (!app) throw new WeChatApiError('invalid_appid');
  const secret = text(input.secret);
  if (!secret) {
    if (secretRequired) throw new WeChatApiError('missing_secret');
    return app;
  }
  if (!verifyAppSecret(app, secret)) throw new WeChatApiError('invalid_secret');
  return app;
}

function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
  return match?.[1];
}

/**
 * The access token of a userinfo call, from the `Authorization` header or the `access_token` query. Clients such
 * as grant's `wechat` provider send it in both; RFC 6750 §2 forbids two methods in one request because the two
 * may name different tokens, so both are accepted only when they are the same token (compared in constant time
 * over SHA-256 digests), and two different tokens, or the query parameter given twice, are refused.
 *
 * @example
 * const token = presentedAccessToken(req); // throws WeChatApiError 40014 / 41001
 */
export function presentedAccessToken(req: Request): string {
  const inQuery = req.query.access_token;
  if (inQuery !== undefined && typeof inQuery !== 'string') throw new WeChatApiError('invalid_access_token');
  const queryToken = text(inQuery);
  const headerToken = bearerToken(req);
  if (queryToken && headerToken && !constantTimeEqual(queryToken, headerToken)) {
    throw new WeChatApiError('invalid_access_token');
  }
  const token = headerToken ?? queryToken;
  if (!token) throw new WeChatApiError('missing_access_token');
  return token;
}
