import { rememberEvents } from '../events/event-source';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { OptionsError } from '../util/options';
import { prepareForProperties } from '../util/request-shape';
import { buildAppRegistry } from './app-registry';
import type { QrProviderContext } from './provider-context';
import { providerArea, providerAreas } from './provider-areas';
import { resolveProviderOptions } from './provider-option-schema';
import type { QrLoginProviderOptions } from './provider-options';
import { QrLoginRequests } from './qr-login-requests';
import { createRateLimiters } from './rate-limits';
import { sharedOpenidSecret } from './openid-secret';

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
  const context = providerContext(options);
  const areas = providerAreas(
    context,
    createRateLimiters(options.store, context.apps, context.settings.rateLimits, context.settings.events),
  );

  const { events } = context.settings;
  const enterArea = (area: keyof typeof areas, req: Request, res: Response, next: NextFunction) => {
    // Body parsers, rate limiters and the routes add properties to every request: make that cheap first.
    prepareForProperties(req, res);
    // The app's errorHandler records the provider's outages in the provider's events.
    rememberEvents(req, events);
    areas[area](req, res, next);
  };
  const router = express.Router();
  router.use(function qrLoginProviderRoutes(req, res, next) {
    const area = providerArea(req.path);
    if (area === undefined) next();
    else enterArea(area, req, res, next);
  });
  // Express enters a router through its `handle` (Express 4 and 5 alike). A request on one of the provider's paths
  // goes straight to its area's router, skipping a pass through this router's own stack: the same layers run, with
  // one router fewer per request. Any other path goes through this router's stack, so routes added to it still answer.
  // The stack's own dispatcher above then only passes such paths on; it routes by itself only if an Express version
  // ever entered a router without calling its `handle`, so the provider keeps working there, one router slower.
  const handleAsRouter = (router as unknown as RouterHandle).handle.bind(router);
  (router as unknown as RouterHandle).handle = function handle(req, res, next) {
    const area = providerArea(req.path);
    if (area === undefined) handleAsRouter(req, res, next);
    else enterArea(area, req, res, next);
  };
  return router;
}

/** How Express enters a router: `router(req, res, next)` calls `router.handle(req, res, next)`. */
interface RouterHandle {
  handle(req: Request, res: Response, next: NextFunction): void;
}

/**
 * What the provider's routes share, from its options (checked here, so a bad option fails at startup).
 *
 * @example
 * const context = providerContext(options);
 */
export function providerContext(options: QrLoginProviderOptions): QrProviderContext {
  return {
    settings: resolveProviderOptions(options),
    store: options.store,
    apps: buildAppRegistry(options.apps),
    requests: new QrLoginRequests(options.store),
    tokens: options.tokens,
    users: options.users,
    authenticateApp: options.authenticateApp,
    openidSecret: sharedOpenidSecret(options.store, options.openidSecret),
  };
}
