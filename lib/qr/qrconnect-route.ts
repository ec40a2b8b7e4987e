import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { debugChannel } from '../util/debug';
import type { RegisteredQrApp } from './app-registry';
import { hashBinding, setBindingCookie } from './browser-binding';
import { guarded } from '../http/handlers';
import { providerOrigin, sendPage, type QrProviderContext } from './provider-context';
import { randomToken } from '../util/random-token';
import { sendKitStylesheet } from '../http/pages/kit-stylesheet';
import { QR_PAGE_SCRIPT, renderMessagePage, renderQrPage } from './qr-pages';
import { sendNoStoreJson } from '../http/no-store-json';

const debug = debugChannel('qr');

/**
 * Where the router serves the QR page's script, relative to its mount path.
 *
 * @example
 * renderQrPage({ …, scriptUrl: `${req.baseUrl}${QR_SCRIPT_PATH}` });
 */
export const QR_SCRIPT_PATH = '/sns/qr-login/qr-login.js';

/**
 * Where the router serves the kit's stylesheet for its pages, relative to its mount path.
 *
 * @example
 * renderMessagePage({ …, stylesheetUrl: `${req.baseUrl}${QR_STYLESHEET_PATH}` });
 */
export const QR_STYLESHEET_PATH = '/sns/qr-login/qr-login.css';

const STATE_SHAPE = /^[A-Za-z0-9._~-]{1,128}$/;

/** A valid qrconnect request, or why it is not one (shown on a page, never sent to an unchecked redirect_uri). */
type ConnectRequest = { app: RegisteredQrApp; redirectUri: string; state: string } | { problem: string };

function checkConnectRequest(apps: ReadonlyMap<string, RegisteredQrApp>, query: Record<string, unknown>): ConnectRequest {
  const checked = connectRequestOf(apps, query);
  // The appid and the problem only: the state is the relying app's secret.
  if ('problem' in checked) debug('qrconnect refused for appid %j: %s', query.appid, checked.problem);
  return checked;
}

function connectRequestOf(apps: ReadonlyMap<string, RegisteredQrApp>, query: Record<string, unknown>): ConnectRequest {
  const app = typeof query.appid === 'string' ? apps.get(query.appid) : undefined;
  if (!app) return { problem: 'The application asking for sign-in is not registered.' };
  if (typeof query.redirect_uri !== 'string' || !app.redirectUris.has(query.redirect_uri)) {
    return { problem: 'The return address is not registered for this application.' };
  }
  if (query.response_type !== 'code') return { problem: 'response_type must be "code".' };
  if (query.scope !== 'snsapi_login') return { problem: 'scope must be "snsapi_login".' };
  if (typeof query.state !== 'string' || !STATE_SHAPE.test(query.state)) {
    return { problem: 'state must be 1-128 characters of letters, digits, ".", "_", "~" or "-".' };
  }
  return { app, redirectUri: query.redirect_uri, state: query.state };
}

// Every refusal is a page on the provider, never a redirect: the redirect_uri is not trusted until it matched.
function refuse(req: Request, res: Response, problem: string): void {
  const stylesheetUrl = `${req.baseUrl}${QR_STYLESHEET_PATH}`;
  sendPage(res, 400, renderMessagePage({ title: 'This sign-in link is not valid', message: problem, stylesheetUrl }));
}

function wantsJson(req: Request): boolean {
  return req.query.format === 'json' || req.accepts(['text/html', 'application/json']) === 'application/json';
}

/**
 * The start of a QR login: `GET /sns/oauth2/qrconnect` checks the app's request, creates the login request bound
 * to this browser, and answers the QR page (or its JSON description); the page's static script is served beside it.
 *
 * @example
 * const entry = qrconnectRoutes(context, limiters.qrconnect);
 */
export function qrconnectRoutes(context: QrProviderContext, limiter: RequestHandler, router: Router = express.Router()): Router {
  const { apps, requests } = context;
  const { qrLifetimeSeconds, cookieName } = context.settings;

  router.get(QR_SCRIPT_PATH, function qrLoginScript(_req, res) {
    res
      .set({ 'Cache-Control': 'public, max-age=3600', 'X-Content-Type-Options': 'nosniff' })
      .type('application/javascript')
      .send(QR_PAGE_SCRIPT);
  });
  router.get(QR_STYLESHEET_PATH, sendKitStylesheet);

  // HEAD answers what GET would (a 400 page for a bad request, else 200 with GET's media type) but creates
  // nothing: no login request, no binding cookie, no rate-limit count. Link checkers and prefetchers send HEAD.
  router.head('/sns/oauth2/qrconnect', function qrConnectHead(req, res) {
    const checked = checkConnectRequest(apps, req.query as Record<string, unknown>);
    if ('problem' in checked) return refuse(req, res, checked.problem);
    res
      .set('Cache-Control', 'no-store')
      .type(wantsJson(req) ? 'json' : 'html')
      .status(200)
      .end();
  });

  router.get(
    '/sns/oauth2/qrconnect',
    limiter,
    guarded(async function qrConnect(req, res) {
      const query = req.query as Record<string, unknown>;
      const checked = checkConnectRequest(apps, query);
      if ('problem' in checked) return refuse(req, res, checked.problem);
      const { app, redirectUri, state } = checked;

      const origin = providerOrigin(context, req);
      if (origin === undefined) {
        debug('qrconnect refused: the request has no usable Host header (set publicUrl)');
        return refuse(req, res, 'The sign-in address could not be determined. Please try again.');
      }
      const base = origin + req.baseUrl;
      const authCode = randomToken(24);
      const binding = setBindingCookie(res, cookieName, `${req.baseUrl}/sns/qr-logins/${authCode}`, qrLifetimeSeconds + 60);
      const record = await requests.create({
        authCode,
        appid: app.appid,
        redirectUri,
        state,
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
      if (wantsJson(req)) {
        sendNoStoreJson(res.location(resourceUrl), links, 201);
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
        stylesheetUrl: `${req.baseUrl}${QR_STYLESHEET_PATH}`,
        ...(app.loginPageUrl ? { otherWaysUrl: app.loginPageUrl } : {}),
      });
      sendPage(res, 200, html);
    }),
  );
  return router;
}
