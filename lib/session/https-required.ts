import type { Request } from 'express';
import { ForbiddenError } from '../http/errors';
import { debugChannel } from '../util/debug';
import { warnOnce } from '../util/options';

const debug = debugChannel('session');

/**
 * Refuses to start or finish a login on what Express sees as plain http while the session cookie is Secure: the
 * browser would never get the cookie (and a login transaction would be lost). The answer is 403 `https_required`,
 * a client error, because a client (or a proxy's first `X-Forwarded-Proto` value) decides the protocol; the
 * deployment hint (`trust proxy`) goes to the console once and to the debug channel.
 *
 * @example
 * refuseInsecureLogin(req, 'establishLogin');
 */
export function refuseInsecureLogin(req: Request, who: string): void {
  if (!req.sso?.cookie.secure || req.secure) return;
  warnOnce(
    'https-required',
    `${who}: a login arrived over what Express sees as plain http while the session cookie is Secure; it was refused. ` +
      "Behind a TLS-terminating proxy, set app.set('trust proxy', …) so X-Forwarded-Proto is believed.",
  );
  debug('%s refused: the request is not https as Express sees it (protocol %s); check trust proxy', who, req.protocol);
  throw new ForbiddenError({ code: 'https_required', detail: 'Sign-in needs HTTPS. Open this page with https://.' });
}
