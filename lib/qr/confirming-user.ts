import type { RequestHandler } from 'express';
import { ForbiddenError, UnauthorizedError } from '../http/errors';
import { debugChannel } from '../util/debug';
import { providerOrigin, type QrProviderContext } from './provider-context';

const debug = debugChannel('qr');

function foreignUser(): ForbiddenError {
  return new ForbiddenError({ code: 'foreign_identity', detail: 'Sign in with an account of this provider to approve sign-ins.' });
}

/**
 * Identifies the user who scans and decides on the `/sns/qr-logins` API: the provider's own session user (`req.user`,
 * only of its directory's source), or the subject of a phone-app token that `authenticateApp` verified and
 * `appTokenIssuer` issued. The directory user id goes to `res.locals.qrUserId`.
 *
 * @example
 * router.patch('/sns/qr-logins/:authCode', identifyAppUser(context), updateQrLogin);
 */
export function identifyAppUser(context: QrProviderContext): RequestHandler {
  const { authenticateApp } = context;
  const { directorySource, appTokenIssuer } = context.settings;
  return function qrIdentifyAppUser(req, res, next) {
    const sessionUser = req.user;
    if (sessionUser && !req.headers.authorization) {
      // Only users of the provider's own directory may scan and confirm: a partner IdP's user with the same
      // subject is somebody else.
      if (sessionUser.source !== directorySource) {
        debug('scan or decision refused: the session user is of source %j, not the directory %j', sessionUser.source, directorySource);
        next(foreignUser());
        return;
      }
      res.locals.qrUserId = sessionUser.subject;
      next();
      return;
    }
    const challenge = { 'WWW-Authenticate': 'Bearer realm="qr-login"' };
    if (!authenticateApp) {
      debug('scan or decision refused: no session user, and no authenticateApp for phone-app tokens');
      next(new UnauthorizedError({ code: 'login_required', detail: 'Sign in to the provider first.', headers: challenge }));
      return;
    }
    authenticateApp(req, res, (error?: unknown) => {
      if (error) {
        next(error);
        return;
      }
      const subject = req.auth?.payload.sub;
      if (typeof subject !== 'string' || subject === '') {
        debug('scan or decision refused: the phone-app token names no subject');
        next(new UnauthorizedError({ code: 'invalid_token', detail: 'The token names no user.', headers: challenge }));
        return;
      }
      // A token's subject is a user of this directory only when the phone app's own issuer asserted it; the same
      // `sub` from another issuer the middleware accepts is somebody else.
      if (req.auth?.payload.iss !== appTokenIssuer) {
        debug(
          'scan or decision refused: the phone-app token is issued by %j, not appTokenIssuer %j',
          req.auth?.payload.iss,
          appTokenIssuer,
        );
        next(foreignUser());
        return;
      }
      res.locals.qrUserId = subject;
      next();
    });
  };
}

/**
 * Requires a provider session of the directory's source for the web confirmation page; a visitor without one is
 * sent to `loginUrl` (GET) or refused with 401.
 *
 * @example
 * router.get('/sns/qr-logins/:authCode/confirmation', requireSessionUser(context), showConfirmation);
 */
export function requireSessionUser(context: QrProviderContext): RequestHandler {
  const { directorySource, loginUrl } = context.settings;
  return function qrConfirmationSession(req, res, next) {
    const user = req.user;
    if (user) {
      if (user.source !== directorySource) {
        debug('confirmation page refused: the session user is of source %j, not the directory %j', user.source, directorySource);
        next(foreignUser());
        return;
      }
      res.locals.qrUserId = user.subject;
      next();
      return;
    }
    if (loginUrl && req.method === 'GET') {
      // The page names itself in full: a bare path would be resolved by the login page against its own idea of
      // home (another site of the domain), not against this provider, and the phone would land on a 404 there.
      const origin = providerOrigin(context, req);
      const here = origin === undefined ? undefined : `${origin}${req.originalUrl}`;
      res.redirect(
        303,
        here === undefined ? loginUrl : `${loginUrl}${loginUrl.includes('?') ? '&' : '?'}${new URLSearchParams({ return_to: here })}`,
      );
      return;
    }
    next(new UnauthorizedError({ code: 'login_required', detail: 'Sign in to the provider first.' }));
  };
}
