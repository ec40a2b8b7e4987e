import express, { type Request, type Router } from 'express';
import { ForbiddenError, NotFoundError } from '../http/errors';
import { debugChannel } from '../util/debug';
import { hasBinding } from './browser-binding';
import { guarded } from '../http/handlers';
import { headNotAllowed, sendPage, type QrProviderContext } from './provider-context';
import type { QrStatusEvent } from './qr-login-requests';
import { renderMessagePage } from './qr-pages';
import { QR_STYLESHEET_PATH } from './qrconnect-route';
import { effectiveStatus, isTerminal, type QrLoginRecord, type QrLoginStatus } from './qr-state';
import { sendNoStoreJson } from '../http/no-store-json';

const debug = debugChannel('qr');

const SSE_HEARTBEAT_MS = 15_000;

/**
 * The requesting browser's side of one login request: its status (polling), its events (Server-Sent Events) and
 * the redirect to the app with the code. Each answers only the browser holding the request's binding cookie.
 *
 * @example
 * browserRoutes(context, loginRoutes);
 */
export function browserRoutes(context: QrProviderContext, router: Router = express.Router()): Router {
  const { apps, requests } = context;
  const { cookieName } = context.settings;

  const loadBound = async (req: Request): Promise<QrLoginRecord> => {
    const record = await requests.get(String(req.params.authCode));
    if (!record) {
      debug('status refused: no such login request');
      throw new NotFoundError({ code: 'qr_login_not_found', detail: 'No such QR login request.' });
    }
    if (!hasBinding(req, cookieName, record.bindingHash)) {
      debug('status refused: the browser does not hold the binding cookie of the request');
      throw new ForbiddenError({ code: 'qr_binding_mismatch', detail: 'This QR login was started in another browser.' });
    }
    return record;
  };

  router.get(
    '/sns/qr-logins/:authCode/status',
    guarded(async function qrLoginStatus(req, res) {
      const record = await loadBound(req);
      sendNoStoreJson(res, { status: effectiveStatus(record, Date.now()), expires_at: new Date(record.expiresAt).toISOString() });
    }),
  );

  router.get(
    '/sns/qr-logins/:authCode/events',
    guarded(async function qrLoginEvents(req, res) {
      const initial = await loadBound(req);
      const streamHeaders = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' };
      if (req.method === 'HEAD') {
        res.status(200).set(streamHeaders).end();
        return;
      }
      const authCode = initial.authCode;
      let closed = false;
      let last: QrLoginStatus | undefined;
      const timers: NodeJS.Timeout[] = [];
      const subscription: { end?: () => Promise<void> } = {};
      const finish = () => {
        if (closed) return;
        closed = true;
        for (const timer of timers) clearTimeout(timer);
        void subscription.end?.().catch(() => undefined);
        res.end();
      };
      const send = (status: QrLoginStatus) => {
        if (closed || status === last) return;
        last = status;
        res.write(`event: status\ndata: ${JSON.stringify({ status })}\n\n`);
        if (isTerminal(status)) finish();
      };
      // Subscribe before reading the current status, so a transition between the two is not lost.
      subscription.end = await requests.subscribe(authCode, (event: QrStatusEvent) => send(event.status));
      req.on('close', finish);
      res.status(200).set(streamHeaders);
      res.flushHeaders();
      res.write('retry: 2000\n\n');
      const current = (await requests.get(authCode)) ?? initial;
      send(effectiveStatus(current, Date.now()));
      if (closed) return;
      const untilExpiry = current.expiresAt - Date.now();
      timers.push(
        setTimeout(
          () => void requests.get(authCode).then((latest) => send(latest ? effectiveStatus(latest, Date.now()) : 'expired')),
          Math.max(0, untilExpiry) + 50,
        ),
      );
      const heartbeat = setInterval(() => {
        if (!closed) res.write(': keep-alive\n\n');
      }, SSE_HEARTBEAT_MS);
      timers.push(heartbeat);
    }),
  );

  router.head('/sns/qr-logins/:authCode/redirection', headNotAllowed(['GET']));
  router.get(
    '/sns/qr-logins/:authCode/redirection',
    guarded(async function qrLoginRedirection(req, res) {
      const record = await requests.get(String(req.params.authCode));
      const app = record ? apps.get(record.appid) : undefined;
      const page = (status: number, why: string, title: string, message: string, retryUrl?: string) => {
        debug('redirect refused: %s', why);
        const stylesheetUrl = `${req.baseUrl}${QR_STYLESHEET_PATH}`;
        const otherWaysUrl = app?.loginPageUrl;
        sendPage(
          res,
          status,
          renderMessagePage({
            title,
            message,
            stylesheetUrl,
            ...(retryUrl ? { retryUrl } : {}),
            ...(otherWaysUrl ? { otherWaysUrl } : {}),
          }),
        );
      };
      if (!record) {
        return page(
          404,
          'no such login request',
          'Sign-in request not found',
          'This sign-in request does not exist or has been cleaned up.',
        );
      }
      const retryUrl = app
        ? `${req.baseUrl}/sns/oauth2/qrconnect?${new URLSearchParams({ appid: record.appid, redirect_uri: record.redirectUri, response_type: 'code', scope: 'snsapi_login', state: record.state })}`
        : undefined;
      if (!hasBinding(req, cookieName, record.bindingHash)) {
        const message = 'This sign-in was started in another browser; only that browser can finish it.';
        return page(403, 'the browser does not hold the binding cookie of the request', 'Wrong browser', message);
      }
      const status = effectiveStatus(record, Date.now());
      if (status === 'expired') {
        return page(410, 'the request expired', 'The code has expired', 'The QR code was not confirmed in time.', retryUrl);
      }
      if (status === 'denied')
        return page(403, 'the request was denied', 'Sign-in denied', 'The sign-in was denied on the phone.', retryUrl);
      if (status !== 'confirmed' || !record.code) {
        return page(409, `the request is ${status}, not confirmed`, 'Not confirmed yet', 'Confirm the sign-in on your phone first.');
      }
      if (!(await requests.collect(record))) {
        return page(410, 'the redirect was already collected', 'Already used', 'This sign-in was already completed.', retryUrl);
      }
      const target = new URL(record.redirectUri);
      target.searchParams.set('code', record.code);
      target.searchParams.set('state', record.state);
      // The code leaves in the Location header alone: no body repeats the address (as Express's redirect would, after
      // negotiating its type), so nothing but the redirect itself carries the code.
      res.statusCode = 302;
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Referrer-Policy', 'no-referrer');
      res.setHeader('Location', target.href);
      res.setHeader('Content-Length', 0);
      res.end();
    }),
  );
  return router;
}
