import express, { type RequestHandler, type Router } from 'express';
import { browserRoutes } from './browser-routes';
import { confirmationRoutes } from './confirmation-routes';
import type { QrProviderContext } from './provider-context';
import { qrconnectRoutes } from './qrconnect-route';
import { qrLoginsResource } from './qr-logins-resource';
import { weChatApiRoutes } from './wechat-api';

/** The provider's routers, by the start of their paths. */
export interface QrProviderAreas {
  /** `/sns/oauth2/qrconnect` and the QR page's script and stylesheet under `/sns/qr-login/`. */
  entry: Router;
  /** One login request's resources under `/sns/qr-logins/`: the browser's, the phone app's, the confirmation page. */
  logins: Router;
  /** The relying apps' server API: `/sns/oauth2/access_token`, `/sns/oauth2/refresh_token`, `/sns/userinfo`. */
  api: Router;
}

const LOGINS = /^\/sns\/qr-logins\//i;
const ENTRY = /^\/sns\/(?:oauth2\/qrconnect|qr-login\/)/i;
const API = /^\/sns\/(?:oauth2\/|userinfo)/i;

/**
 * Which of the provider's routers a request path can belong to, matched as loosely as Express matches a route (in
 * any case, with or without a trailing slash); undefined for a path none of them routes. A router is entered only by
 * the paths it may answer, so a request is matched against one router's routes, not against five routers in a row.
 *
 * @example
 * providerArea('/sns/qr-logins/abc/status'); // 'logins'
 */
export function providerArea(path: string): keyof QrProviderAreas | undefined {
  if (LOGINS.test(path)) return 'logins';
  if (ENTRY.test(path)) return 'entry';
  if (API.test(path)) return 'api';
  return undefined;
}

/**
 * Builds the provider's three routers, each with its routes in the order they are matched.
 *
 * @example
 * const areas = providerAreas(context, limiters);
 */
export function providerAreas(context: QrProviderContext, limiters: { qrconnect: RequestHandler; token: RequestHandler }): QrProviderAreas {
  const logins = express.Router();
  browserRoutes(context, logins);
  qrLoginsResource(context, logins);
  confirmationRoutes(context, logins);
  return {
    entry: qrconnectRoutes(context, limiters.qrconnect),
    logins,
    api: weChatApiRoutes(context, limiters.token),
  };
}
