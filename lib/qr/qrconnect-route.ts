import express, { type RequestHandler, type Router } from 'express';
import { hashBinding, setBindingCookie } from './browser-binding';
import { guarded, providerOrigin, sendPage, type QrProviderContext } from './provider-context';
import { randomToken } from './qr-login-requests';
import { QR_PAGE_SCRIPT, renderMessagePage, renderQrPage } from './qr-pages';

/** Where the router serves the QR page's script, relative to its mount path. */
export const QR_SCRIPT_PATH = '/sns/qr-login/qr-login.js';

const STATE_SHAPE = /^[A-Za-z0-9._~-]{1,128}$/;

/**
 * The start of a QR login: `GET /sns/oauth2/qrconnect` checks the app's request, creates the login request bound
 * to this browser, and answers the QR page (or its JSON description); the page's static script is served beside it.
 *
 * @example
 * router.use(qrconnectRoutes(context, limiters.qrconnect));
 */
export function qrconnectRoutes(context: QrProviderContext, limiter: RequestHandler): Router {
  const { apps, requests } = context;
  const { qrLifetimeSeconds, cookieName } = context.settings;
  const router = express.Router();

  router.get(QR_SCRIPT_PATH, function qrLoginScript(_req, res) {
    res
      .set({ 'Cache-Control': 'public, max-age=3600', 'X-Content-Type-Options': 'nosniff' })
      .type('application/javascript')
      .send(QR_PAGE_SCRIPT);
  });

  router.get(
    '/sns/oauth2/qrconnect',
    limiter,
    guarded(async function qrConnect(req, res) {
      const query = req.query as Record<string, unknown>;
      const app = typeof query.appid === 'string' ? apps.get(query.appid) : undefined;
      const refuse = (message: string) => sendPage(res, 400, renderMessagePage('This sign-in link is not valid', message));
      // Every refusal is a page on the provider, never a redirect: the redirect_uri is not trusted until it matched.
      if (!app) return refuse('The application asking for sign-in is not registered.');
      if (typeof query.redirect_uri !== 'string' || !app.redirectUris.has(query.redirect_uri)) {
        return refuse('The return address is not registered for this application.');
      }
      if (query.response_type !== 'code') return refuse('response_type must be "code".');
      if (query.scope !== 'snsapi_login') return refuse('scope must be "snsapi_login".');
      if (typeof query.state !== 'string' || !STATE_SHAPE.test(query.state)) {
        return refuse('state must be 1-128 characters of letters, digits, ".", "_", "~" or "-".');
      }

      const base = providerOrigin(context, req) + req.baseUrl;
      const authCode = randomToken(24);
      const binding = setBindingCookie(res, cookieName, `${req.baseUrl}/sns/qr-logins/${authCode}`, qrLifetimeSeconds + 60);
      const record = await requests.create({
        authCode,
        appid: app.appid,
        redirectUri: query.redirect_uri,
        state: query.state,
        bindingHash: hashBinding(binding),
        requester: { ip: req.ip ?? 'unknown', userAgent: (req.get('user-agent') ?? 'unknown').slice(0, 256) },
        validitySeconds: qrLifetimeSeconds,
      });
      const resourceUrl = `${base}/sns/qr-logins/${record.authCode}`;
      const links = {
        qr_url: `${resourceUrl}/confirmation`,
        expires_in: qrLifetimeSeconds,
        status_url: `${resourceUrl}/status`,
        events_url: `${resourceUrl}/events`,
        redirection_url: `${resourceUrl}/redirection`,
      };
      res.set('Cache-Control', 'no-store');
      const wantsJson = query.format === 'json' || req.accepts(['text/html', 'application/json']) === 'application/json';
      if (wantsJson) {
        res.status(201).location(resourceUrl).json(links);
        return;
      }
      const html = await renderQrPage({
        appName: app.name,
        qrUrl: links.qr_url,
        expiresAt: record.expiresAt,
        validitySeconds: qrLifetimeSeconds,
        eventsUrl: links.events_url,
        statusUrl: links.status_url,
        redirectionUrl: links.redirection_url,
        retryUrl: req.originalUrl,
        scriptUrl: `${req.baseUrl}${QR_SCRIPT_PATH}`,
      });
      sendPage(res, 200, html);
    }),
  );
  return router;
}
