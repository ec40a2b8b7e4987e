import type { Request, Response } from 'express';
import { eventsFor } from '../events/event-source';
import { signInAttempt } from '../events/sign-in-attempt';
import { establishLogin } from '../session/establish-login';
import { debugChannel } from '../util/debug';
import { readDeviceCookie, writeDeviceCookie } from './throttle/device-cookie';
import { sendLoginPage } from './login-page';
import type { LoginThrottle, ThrottleScope } from './throttle/login-throttle';
import type { PortalSettings } from './portal-options';
import { oneString, requireSameOrigin, safeReturnTo, ssoContext } from './portal-request';

const GENERIC_FAILURE = 'Wrong username or password';
const MAX_USERNAME = 256;
const MAX_PASSWORD = 1024;
const debug = debugChannel('portal');
const THROTTLE_LIMITS = {
  network: 'login_per_network',
  'account-and-network': 'login_per_account_and_network',
  account: 'login_per_account',
} as const satisfies Record<ThrottleScope, string>;

/**
 * The message of a throttled attempt, in whole minutes.
 *
 * @example
 * tooManyAttempts(90); // 'Too many failed attempts. Try again in 2 minutes.'
 */
export function tooManyAttempts(retryAfterSeconds: number): string {
  const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60));
  return `Too many failed attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

/**
 * The `POST /login` handler: same origin only, the throttle asked before the password is checked (429 with
 * `Retry-After` and the login page when it refuses, the same for known and unknown usernames), one generic failure
 * (401), and on success a fresh session id, a renewed device cookie and 302 to `return_to`.
 *
 * @example
 * router.post('/login', parseForm, passwordLogin(settings, new LoginThrottle(store, settings.throttle)));
 */
export function passwordLogin(settings: PortalSettings, throttle: LoginThrottle) {
  return async function submitLogin(req: Request, res: Response): Promise<void> {
    const events = eventsFor(req, settings.events);
    const attempt = signInAttempt(req, events, 'password');
    requireSameOrigin(req, settings.allowedOrigins);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const username = oneString(body.username)?.trim() ?? '';
    const password = oneString(body.password) ?? '';
    const returnTo = safeReturnTo(req, body.return_to);
    if (username === '' || password === '' || username.length > MAX_USERNAME || password.length > MAX_PASSWORD) {
      debug('refused a password login: username or password missing or too long');
      attempt.failed('missing_credentials', username === '' ? {} : { username: username.slice(0, MAX_USERNAME) });
      const error = 'Enter your username and password.';
      sendLoginPage(settings, req, res, 400, { returnTo, error, username: username.slice(0, MAX_USERNAME) });
      return;
    }
    const address = req.ip ?? req.socket.remoteAddress ?? '';
    const decision = await throttle.attempt({ username, address, deviceTokens: readDeviceCookie(req) });
    if (!decision.allowed) {
      events?.emit(
        'request.throttled',
        { reason: THROTTLE_LIMITS[decision.scope], method: 'password', username, retryAfterSeconds: decision.retryAfterSeconds },
        req,
      );
      attempt.failed(undefined);
      res.setHeader('Retry-After', String(decision.retryAfterSeconds));
      sendLoginPage(settings, req, res, 429, { returnTo, error: tooManyAttempts(decision.retryAfterSeconds), username });
      return;
    }
    const user = await settings.users.verifyPassword(username, password);
    if (!user) {
      debug('refused a password login from a %s browser: wrong password, or no such enabled user', decision.trusted ? 'known' : 'new');
      attempt.failed('bad_credentials', { username });
      sendLoginPage(settings, req, res, 401, { returnTo, error: GENERIC_FAILURE, username });
      return;
    }
    const issued = await throttle.recordSuccess(decision);
    await establishLogin(req, {
      source: settings.directorySource,
      subject: user.id,
      name: user.name,
      roles: user.roles,
      method: 'password',
      ...(user.attributes ? { attributes: user.attributes } : {}),
    });
    attempt.succeeded({ username });
    writeDeviceCookie(req, res, issued);
    await settings.accounts?.notices.signedIn(req, user.id, decision.trusted);
    // 302, as the kit's login contract states; browsers follow it with a GET, like a 303.
    res.redirect(302, returnTo || ssoContext(req).redirects.defaultUrl);
  };
}
