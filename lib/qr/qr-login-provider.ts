import express, { type Router } from 'express';
import { OptionsError } from '../util/options';
import { preparingMiddleware } from '../util/request-shape';
import { buildAppRegistry } from './app-registry';
import { browserRoutes } from './browser-routes';
import { confirmationRoutes } from './confirmation-routes';
import type { QrProviderContext } from './provider-context';
import { resolveProviderOptions } from './provider-option-schema';
import type { QrLoginProviderOptions } from './provider-options';
import { QrLoginRequests } from './qr-login-requests';
import { qrconnectRoutes } from './qrconnect-route';
import { qrLoginsResource } from './qr-logins-resource';
import { createRateLimiters } from './rate-limits';
import { sharedOpenidSecret } from './openid-secret';
import { weChatApiRoutes } from './wechat-api';

export type { QrLoginProviderOptions, QrRateLimits } from './provider-options';

/**
 * The QR-login identity provider as an Express router, on WeChat's wire format: `qrconnect` shows the QR page to
 * the browser, the phone app moves the request through `/sns/qr-logins/{auth_code}`, the creating browser (and only
 * it) is redirected to the app with a single-use code, and the app exchanges it at `/sns/oauth2/access_token`.
 *
 * @example
 * idp.use(qrLoginProvider({ store, apps: [{ appid: 'shop', secretHash, name: 'Shop', redirectUris: ['https://shop.example.test/callback/qr'] }],
 *                           users: directory, tokens: qrTokenIssuer(tokenService), authenticateApp: requireBearer({ … }) }));
 */
export function qrLoginProvider(options: QrLoginProviderOptions): Router {
  // eslint-disable-next-line prefer-rest-params
  if (arguments.length === 3 && typeof arguments[2] === 'function') {
    throw new OptionsError(
      'qrLoginProvider: it is a factory; write app.use(qrLoginProvider({ store, apps, users, tokens })), not app.use(qrLoginProvider)',
    );
  }
  const settings = resolveProviderOptions(options);
  const apps = buildAppRegistry(options.apps);
  const context: QrProviderContext = {
    settings,
    store: options.store,
    apps,
    requests: new QrLoginRequests(options.store),
    tokens: options.tokens,
    users: options.users,
    authenticateApp: options.authenticateApp,
    openidSecret: sharedOpenidSecret(options.store, options.openidSecret),
  };
  const limiters = createRateLimiters(options.store, apps, settings.rateLimits);

  const router = express.Router();
  // Body parsers, rate limiters and the routes add properties to every request: make that cheap first.
  router.use(preparingMiddleware);
  // The browser that asks, the phone that confirms (its REST resource and the demo web page), the app's server.
  router.use(qrconnectRoutes(context, limiters.qrconnect));
  router.use(browserRoutes(context));
  router.use(qrLoginsResource(context));
  router.use(confirmationRoutes(context));
  router.use(weChatApiRoutes(context, limiters.token));
  return router;
}
