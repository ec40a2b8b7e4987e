import express, { type RequestHandler, type Router } from 'express';
import { ForbiddenError, UnprocessableEntityError } from '../http/errors';
import { methodNotAllowed } from '../http/handlers';
import { debugChannel } from '../util/debug';
import { requireSessionUser } from './confirming-user';
import { guarded } from '../http/handlers';
import { providerOwnOrigin, sendPage, type QrProviderContext } from './provider-context';
import { renderConfirmationPage } from './qr-pages';
import { QR_STYLESHEET_PATH } from './qrconnect-route';
import { loadRequest, recordDecision, transitionRefusal, TRANSITIONS } from './qr-logins-resource';
import { effectiveStatus, type QrLoginTransition } from './qr-state';

const debug = debugChannel('qr');

/**
 * The web confirmation page (the demo "phone"): `GET /sns/qr-logins/{auth_code}/confirmation` shows the request to
 * the provider's signed-in user, and its same-origin form POSTs the decision.
 *
 * @example
 * confirmationRoutes(context, loginRoutes);
 */
export function confirmationRoutes(context: QrProviderContext, router: Router = express.Router()): Router {
  const { apps, requests } = context;
  const { codeLifetimeSeconds } = context.settings;
  const sessionUser = requireSessionUser(context);
  const confirmationForm = express.urlencoded({ extended: false, limit: '1kb' });
  const sameOrigin: RequestHandler = function qrSameOriginCheck(req, _res, next) {
    // The form changes state with the session cookie, so it must come from a page of this provider (CSRF).
    const origin = req.get('origin');
    const fetchSite = req.get('sec-fetch-site');
    const expected = providerOwnOrigin(context, req);
    const ok = origin !== undefined ? expected !== undefined && origin === expected : fetchSite === 'same-origin';
    if (!ok) debug('confirmation form refused: Origin %j (Sec-Fetch-Site %j) is not this provider %j', origin, fetchSite, expected);
    next(ok ? undefined : new ForbiddenError({ code: 'cross_origin_request', detail: 'The form must be sent from this site.' }));
  };

  router
    .route('/sns/qr-logins/:authCode/confirmation')
    .get(
      sessionUser,
      guarded(async function showConfirmation(req, res) {
        const record = await loadRequest(requests, req);
        const app = apps.get(record.appid);
        sendPage(
          res,
          200,
          renderConfirmationPage({
            appName: app?.name ?? record.appid,
            status: effectiveStatus(record, Date.now()),
            requesterIp: record.requester.ip,
            requesterUserAgent: record.requester.userAgent,
            createdAt: record.createdAt,
            actionUrl: req.originalUrl.split('?')[0] ?? req.originalUrl,
            stylesheetUrl: `${req.baseUrl}${QR_STYLESHEET_PATH}`,
            isScanner: record.scannedBy === res.locals.qrUserId,
            ...(req.user?.name ? { userName: req.user.name } : {}),
          }),
        );
      }),
    )
    .post(
      sameOrigin,
      sessionUser,
      confirmationForm,
      guarded(async function submitConfirmation(req, res) {
        const to = (req.body as Record<string, unknown> | undefined)?.status;
        if (!TRANSITIONS.includes(to as QrLoginTransition)) {
          throw new UnprocessableEntityError([{ field: 'status', message: `must be one of ${TRANSITIONS.join(', ')}` }]);
        }
        const authCode = String(req.params.authCode);
        const userId = String(res.locals.qrUserId);
        // Viewing this page is the scan: a decision on a pending request records this user as the scanner first,
        // so the page needs one click. The requesting browser still sees scanned, then the decision.
        if (to !== 'scanned') {
          const current = await requests.get(authCode);
          if (current && effectiveStatus(current, Date.now()) === 'pending') {
            const scanned = await requests.transition(authCode, 'scanned', userId, codeLifetimeSeconds);
            if (scanned.ok) recordDecision(context, req, 'scanned', scanned, userId);
            if (!scanned.ok && scanned.reason !== 'illegal_transition') throw transitionRefusal(scanned.reason, scanned.status, 'scanned');
          }
        }
        const result = await requests.transition(authCode, to as QrLoginTransition, userId, codeLifetimeSeconds);
        recordDecision(context, req, to as QrLoginTransition, result, userId);
        if (!result.ok) throw transitionRefusal(result.reason, result.status, to as QrLoginTransition);
        res.redirect(303, req.originalUrl);
      }),
    )
    .all(methodNotAllowed(['GET', 'POST']));
  return router;
}
