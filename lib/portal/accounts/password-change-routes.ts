import type { Request, RequestHandler, Response, Router } from 'express';
import type { PasswordRefusal } from '../../accounts/password-policy';
import { eventsFor } from '../../events/event-source';
import { ForbiddenError, UnauthorizedError } from '../../http/errors';
import { raiseSessionAuthentication } from '../../session/raise-authentication';
import type { SessionUser } from '../../session/types';
import { debugChannel } from '../../util/debug';
import { hashPassword } from '../../util/password-hash';
import { allowSameOriginReferrer } from '../login-page';
import { tooManyAttempts } from '../password-login';
import type { PortalSettings } from '../portal-options';
import { oneString, requireSameOrigin, ssoContext } from '../portal-request';
import { asyncRoute, hereUrl, portalUrl } from '../step-up/step-up-request';
import { renderMessagePage, renderPasswordChangePage } from './account-pages';
import type { AccountRuntime } from './account-runtime';

const debug = debugChannel('portal');
const MAX_PASSWORD = 1024;

/** The event reason of a refused new password: `breached` when a breach lookup found it, else `policy`. */
export function refusalReason(refusals: readonly PasswordRefusal[]): 'breached' | 'policy' {
  return refusals.some((refusal) => refusal.code === 'breached') ? 'breached' : 'policy';
}

/**
 * Mounts the password change (ASVS 6.2.2, 6.2.3): `GET /password` shows the form to a signed-in user of the
 * portal's directory; `POST /password` (same origin) checks the current password (throttled per user), the new one
 * against the password policy (each broken rule named), writes the new hash in one conditional write, renews the
 * session id, and, unless the user unticks it, ends every other session of the user (and with them the OpenID
 * Provider grants opened from them). The change is recorded (`password.changed`) and mailed to the user.
 *
 * @example
 * mountPasswordChange(router, settings, accounts, parseForm);
 */
export function mountPasswordChange(router: Router, settings: PortalSettings, accounts: AccountRuntime, parseForm: RequestHandler): void {
  const { users, policy } = accounts.settings;

  function show(req: Request, res: Response, status: number, user: SessionUser, errors: readonly string[] = [], notice?: string) {
    allowSameOriginReferrer(res);
    res.status(status).setHeader('Cache-Control', 'no-store');
    res.type('html').send(
      renderPasswordChangePage({
        assetsPath: settings.assetsPath,
        action: `${req.baseUrl}/password`,
        hint: policy.hint,
        endOthers: accounts.settings.endOtherSessionsByDefault,
        sessionsUrl: `${req.baseUrl}/sessions`,
        username: user.name,
        errors,
        ...(notice ? { notice } : {}),
      }),
    );
  }

  router.get(
    '/password',
    asyncRoute(async function showPasswordChange(req, res) {
      if (!req.user) {
        res.redirect(303, portalUrl(req, '/login', { return_to: hereUrl(req) }));
        return;
      }
      if (req.user.source !== settings.directorySource) {
        res
          .status(403)
          .type('html')
          .send(
            renderMessagePage({
              assetsPath: settings.assetsPath,
              title: 'Your password is kept elsewhere',
              message: 'You signed in through another service; change your password there.',
              link: { href: `${req.baseUrl}/sessions`, label: 'Back to your sessions' },
            }),
          );
        return;
      }
      show(req, res, 200, req.user, [], req.query.changed === '1' ? 'Your password was changed.' : undefined);
    }),
  );

  router.post(
    '/password',
    parseForm,
    asyncRoute(async function changePassword(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const user = req.user;
      if (!user) throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in to change your password.' });
      if (user.source !== settings.directorySource) {
        throw new ForbiddenError({ code: 'password_not_managed', detail: 'This account has no password here.' });
      }
      const events = eventsFor(req, settings.events);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const current = oneString(body.current_password) ?? '';
      const next = oneString(body.new_password) ?? '';
      const endOthers = oneString(body.end_other_sessions) === '1';
      if (current === '' || next === '' || current.length > MAX_PASSWORD || next.length > MAX_PASSWORD) {
        show(req, res, 400, user, ['Enter your current password and a new one.']);
        return;
      }
      // Counted before the current password is checked, so a stolen session cannot guess it quickly.
      const attempt = await accounts.changeThrottle.attempt([`password-change:${user.id}`]);
      if (!attempt.allowed) {
        res.setHeader('Retry-After', String(attempt.retryAfterSeconds));
        show(req, res, 429, user, [tooManyAttempts(attempt.retryAfterSeconds)]);
        return;
      }
      const account = await users.findById(user.subject);
      const verified = account && !account.disabled ? await users.verifyPassword(account.username, current) : null;
      if (!account || !verified || verified.id !== account.id) {
        debug('refused a password change: the current password is wrong');
        events?.emit('password.change_refused', { reason: 'wrong_current_password' }, req);
        show(req, res, 401, user, ['Your current password is not right.']);
        return;
      }
      await attempt.succeeded();
      const verdict = await policy.check(next, {
        username: account.username,
        name: account.name,
        ...(account.email ? { email: account.email } : {}),
      });
      if (!verdict.accepted) {
        events?.emit('password.change_refused', { reason: refusalReason(verdict.refusals) }, req);
        show(
          req,
          res,
          422,
          user,
          verdict.refusals.map((refusal) => refusal.message),
        );
        return;
      }
      const hash = await hashPassword(next);
      // Conditional on the version read above: a reset or another change in between wins, this one changes nothing.
      const updated = await users.setPasswordHash(account.id, hash, { ifCredentialVersion: account.credentialVersion });
      if (!updated) {
        events?.emit('password.change_refused', { reason: 'other' }, req);
        show(req, res, 409, user, ['Your account changed while you were typing. Try again.']);
        return;
      }
      await raiseSessionAuthentication(req, 'pwd', Math.floor(Date.now() / 1000), 'password_changed');
      if (endOthers) await endOtherSessions(req, events);
      events?.emit('password.changed', { reason: 'self_service' }, req);
      await accounts.notices.send(req, 'passwordChanged', updated, {});
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(303, `${req.baseUrl}/password?changed=1`);
    }),
  );
}

/**
 * Ends every session of the signed-in user but this one (each is announced, so the OpenID Provider revokes the
 * grants opened from it); answers how many ended.
 *
 * @example
 * await endOtherSessions(req);
 */
export async function endOtherSessions(req: Request, events = eventsFor(req)): Promise<number> {
  const user = req.user;
  if (!user) return 0;
  const { manager } = ssoContext(req);
  const sessions = await manager.listSessions(user.id, req.sessionID);
  let ended = 0;
  for (const session of sessions) {
    if (!session.current && (await manager.revokeSession(user.id, session.id))) ended += 1;
  }
  if (ended > 0) events?.emit('session.ended', { reason: 'password_changed', userId: user.id, count: ended }, req);
  return ended;
}
