import express, { type Request, type Router } from 'express';
import { eventsFor } from '../events/event-source';
import { identityId } from '../session/identity';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  GoneError,
  NotFoundError,
  UnprocessableEntityError,
  type FieldError,
  type HttpError,
} from '../http/errors';
import { methodNotAllowed } from '../http/handlers';
import { debugChannel } from '../util/debug';
import type { RegisteredQrApp } from './app-registry';
import { identifyAppUser } from './confirming-user';
import { guarded } from '../http/handlers';
import { type QrProviderContext } from './provider-context';
import type { QrLoginRequests, QrStoredTransitionResult } from './qr-login-requests';
import { effectiveStatus, type QrLoginRecord, type QrLoginStatus, type QrLoginTransition } from './qr-state';
import { sendNoStoreJson } from '../http/no-store-json';

const debug = debugChannel('qr');

/**
 * The statuses a client may ask for.
 *
 * @example
 * if (!TRANSITIONS.includes(body.status)) throw new UnprocessableEntityError([{ field: 'status', message: '…' }]);
 */
export const TRANSITIONS: readonly QrLoginTransition[] = ['scanned', 'confirmed', 'denied'];

/**
 * The HTTP error of a refused transition: 404 unknown, 410 expired, 403 not the scanner, 409 otherwise (with the
 * current status, so the phone can show it).
 *
 * @example
 * if (!result.ok) throw transitionRefusal(result.reason, result.status);
 */
export function transitionRefusal(reason: string, status?: QrLoginStatus, to?: QrLoginTransition): HttpError {
  // Why, never which request: the auth_code is a bearer of the login.
  debug('%s refused: %s (the request is %s)', to ?? 'reading the request', reason, status ?? 'unknown');
  if (reason === 'not_found') return new NotFoundError({ code: 'qr_login_not_found', detail: 'No such QR login request.' });
  if (reason === 'expired') return new GoneError({ code: 'qr_login_expired', detail: 'The QR code has expired.' });
  if (reason === 'not_scanner')
    return new ForbiddenError({ code: 'not_scanner', detail: 'Only the user who scanned the code may decide.' });
  return new ConflictError({
    code: 'illegal_transition',
    detail: `The request is ${status ?? 'in another state'}.`,
    extensions: { current_status: status },
  });
}

/**
 * Records a decision on a QR login where it is taken: `qr.scanned`, `qr.confirmed` or `qr.denied`, or its refusal
 * (`qr.expired`, or `qr.refused` when the user is not the one who scanned or the request's state does not allow
 * it). The user is the provider directory's (`<source>|<id>`); the client is the relying app.
 *
 * @example
 * recordDecision(context, req, 'confirmed', result, userId);
 */
export function recordDecision(
  context: QrProviderContext,
  req: Request,
  to: QrLoginTransition,
  result: QrStoredTransitionResult,
  directoryUserId: string,
): void {
  const events = eventsFor(req, context.settings.events);
  if (events === undefined) return;
  const userId = identityId({ source: context.settings.directorySource, subject: directoryUserId });
  if (result.ok) {
    const facts = { userId, clientId: result.record.appid };
    if (to === 'scanned') events.emit('qr.scanned', { reason: 'scanned', ...facts }, req);
    else if (to === 'confirmed') events.emit('qr.confirmed', { reason: 'confirmed', ...facts }, req);
    else events.emit('qr.denied', { reason: 'denied', ...facts }, req);
  } else if (result.reason === 'expired') {
    events.emit('qr.expired', { reason: 'expired', userId }, req);
  } else if (result.reason !== 'not_found') {
    events.emit('qr.refused', { reason: result.reason, userId }, req);
  }
}

/**
 * The login request named in the path, or 404.
 *
 * @example
 * const record = await loadRequest(requests, req);
 */
export async function loadRequest(requests: QrLoginRequests, req: Request): Promise<QrLoginRecord> {
  const record = await requests.get(String(req.params.authCode));
  if (!record) throw transitionRefusal('not_found');
  return record;
}

/** The resource representation of a login request on the `/sns/qr-logins` API. */
function representation(record: QrLoginRecord, app: RegisteredQrApp | undefined, now: number) {
  return {
    auth_code: record.authCode,
    status: effectiveStatus(record, now),
    app: { appid: record.appid, name: app?.name ?? record.appid },
    requester: { ip: record.requester.ip, user_agent: record.requester.userAgent },
    created_at: new Date(record.createdAt).toISOString(),
    expires_at: new Date(record.expiresAt).toISOString(),
    ...(record.scannedAt ? { scanned_at: new Date(record.scannedAt).toISOString() } : {}),
    ...(record.decidedAt ? { decided_at: new Date(record.decidedAt).toISOString() } : {}),
  };
}

function patchErrors(body: unknown): FieldError[] {
  const errors: FieldError[] = [];
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    errors.push({ field: '', message: 'the body must be a JSON object like {"status":"scanned"}' });
    return errors;
  }
  const { status, ...rest } = body as Record<string, unknown>;
  if (status === undefined) errors.push({ field: 'status', message: 'is required' });
  else if (!TRANSITIONS.includes(status as QrLoginTransition))
    errors.push({ field: 'status', message: `must be one of ${TRANSITIONS.join(', ')}` });
  for (const field of Object.keys(rest)) errors.push({ field, message: 'is not a field of a QR login request' });
  return errors;
}

/**
 * The phone app's REST resource `/sns/qr-logins/{auth_code}`: GET shows the request (and where it came from, against
 * QRLjacking), PATCH `{"status": …}` scans, confirms or denies it.
 *
 * @example
 * qrLoginsResource(context, loginRoutes);
 */
export function qrLoginsResource(context: QrProviderContext, router: Router = express.Router()): Router {
  const { apps, requests } = context;
  const { codeLifetimeSeconds } = context.settings;
  const identify = identifyAppUser(context);
  const patchBody = express.json({ limit: '2kb', type: 'application/json' });
  router
    .route('/sns/qr-logins/:authCode')
    .get(
      identify,
      guarded(async function readQrLogin(req, res) {
        const record = await loadRequest(requests, req);
        const now = Date.now();
        if (effectiveStatus(record, now) === 'expired') throw transitionRefusal('expired', 'expired');
        sendNoStoreJson(res, representation(record, apps.get(record.appid), now));
      }),
    )
    .patch(
      identify,
      function requireJson(req, _res, next) {
        next(
          req.is('application/json')
            ? undefined
            : new BadRequestError({ code: 'body_not_json', detail: 'Send the change as application/json.' }),
        );
      },
      patchBody,
      guarded(async function updateQrLogin(req, res) {
        const errors = patchErrors(req.body as unknown);
        if (errors.length) throw new UnprocessableEntityError(errors);
        const to = (req.body as { status: QrLoginTransition }).status;
        const userId = String(res.locals.qrUserId);
        const result = await requests.transition(String(req.params.authCode), to, userId, codeLifetimeSeconds);
        recordDecision(context, req, to, result, userId);
        if (!result.ok) throw transitionRefusal(result.reason, result.status, to);
        sendNoStoreJson(res, representation(result.record, apps.get(result.record.appid), Date.now()));
      }),
    )
    .all(methodNotAllowed(['GET', 'PATCH']));
  return router;
}
