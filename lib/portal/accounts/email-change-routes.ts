import type { Request, RequestHandler, Response, Router } from 'express';
import { AccountTokens, type AccountTokenRefusal } from '../../accounts/account-tokens';
import { normalizeEmail } from '../../accounts/account-record';
import type { Account } from '../../accounts/writable-user-directory';
import { eventsFor } from '../../events/event-source';
import { ConflictError, ForbiddenError, UnauthorizedError } from '../../http/errors';
import type { Mailer } from '../../mail/mailer';
import { identityId } from '../../session/identity';
import type { SessionUser } from '../../session/types';
import { allowSameOriginReferrer } from '../login-page';
import { tooManyAttempts } from '../password-login';
import type { PortalSettings } from '../portal-options';
import { oneString, requireSameOrigin } from '../portal-request';
import { asyncRoute, hereUrl, portalUrl } from '../step-up/step-up-request';
import { needsFreshSecondFactor, recentFactorSeconds, secondFactorUrl } from '../two-factor/fresh-second-factor';
import { requestOrigin } from '../../util/request-origin';
import { renderConfirmEmailPage, renderEmailPage, renderMessagePage } from './account-pages';
import type { AccountRuntime } from './account-runtime';
import { clearLinkCookie, readLinkCookie, writeLinkCookie } from './link-cookie';

const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;
const LINK_TITLES: Record<AccountTokenRefusal | 'missing', [number, string]> = {
  missing: [400, 'Open the link from your mail'],
  invalid: [400, 'This link does not work'],
  expired: [410, 'This link has expired'],
  used: [410, 'This link was used already'],
  stale: [410, 'This link is no longer valid'],
};

/**
 * Mounts the address change (a verification link to the new address; the change applies when it is opened, and
 * the old address is told): `GET|POST /email` for the signed-in user of the directory (the password is asked
 * again, and a fresh second factor from a user who has one), `GET|POST /email/verify` for the link, whose token moves out of the URL into a cookie of that page. The
 * link is opened with a button, so a mail scanner fetching it changes nothing.
 *
 * @example
 * mountEmailChange(router, settings, accounts, mailer, parseForm);
 */
export function mountEmailChange(
  router: Router,
  settings: PortalSettings,
  accounts: AccountRuntime,
  mailer: Mailer,
  parseForm: RequestHandler,
): void {
  const { users, linkLifetimeSeconds, portalUrl: base } = accounts.settings;
  const verifications = new AccountTokens({
    store: settings.store,
    users,
    purpose: 'email-verification',
    lifetimeSeconds: linkLifetimeSeconds,
  });
  const verifyPage = (req: Request) => `${req.baseUrl}/email/verify`;
  const recent = recentFactorSeconds(settings);

  /**
   * Where a user with a second factor proves it first, or undefined: the address is where reset links go, so
   * changing it is a change to how the account authenticates (ASVS 7.5.1), and the password alone is not full
   * re-authentication for a user who has more. The user comes back to the form.
   */
  async function secondFactorDetour(req: Request, user: SessionUser): Promise<string | undefined> {
    if (!(await needsFreshSecondFactor(settings, user, recent))) return undefined;
    const origin = requestOrigin(req);
    return secondFactorUrl(req, settings, origin === undefined ? '' : `${origin}${req.baseUrl}/email`, recent);
  }

  function send(res: Response, status: number, html: string) {
    allowSameOriginReferrer(res);
    res.status(status).setHeader('Cache-Control', 'no-store');
    res.type('html').send(html);
  }

  async function show(req: Request, res: Response, status: number, user: SessionUser, errors: string[] = [], notice?: string) {
    const account = await users.findById(user.subject);
    send(
      res,
      status,
      renderEmailPage({
        assetsPath: settings.assetsPath,
        action: `${req.baseUrl}/email`,
        ...(account?.email ? { current: account.email } : {}),
        verified: account?.emailVerified ?? false,
        sessionsUrl: `${req.baseUrl}/sessions`,
        mailConfigured: true,
        errors,
        ...(notice ? { notice } : {}),
      }),
    );
  }

  function message(req: Request, res: Response, status: number, title: string, text: string) {
    send(
      res,
      status,
      renderMessagePage({
        assetsPath: settings.assetsPath,
        title,
        message: text,
        link: { href: `${req.baseUrl}/email`, label: 'Your email address' },
      }),
    );
  }

  function linkProblem(req: Request, res: Response, reason: AccountTokenRefusal | 'missing') {
    clearLinkCookie(res, 'verify', verifyPage(req));
    const [status, title] = LINK_TITLES[reason];
    message(req, res, status, title, 'Ask for a new confirmation link on your account page if you still want to change your address.');
  }

  router.get(
    '/email',
    asyncRoute(async function showEmail(req, res) {
      if (!req.user) return void res.redirect(303, portalUrl(req, '/login', { return_to: hereUrl(req) }));
      if (req.user.source !== settings.directorySource)
        return message(req, res, 403, 'Your address is kept elsewhere', 'Change it where you signed in.');
      const detour = await secondFactorDetour(req, req.user);
      if (detour !== undefined) return void res.redirect(303, detour);
      await show(req, res, 200, req.user, [], req.query.sent === '1' ? 'We sent a confirmation link to your new address.' : undefined);
    }),
  );

  router.post(
    '/email',
    parseForm,
    asyncRoute(async function requestEmailChange(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const user = req.user;
      if (!user) throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in to change your address.' });
      if (user.source !== settings.directorySource)
        throw new ForbiddenError({ code: 'email_not_managed', detail: 'This account has no address here.' });
      // Checked before the password, so a session without the second factor cannot test passwords here either.
      const detour = await secondFactorDetour(req, user);
      if (detour !== undefined) return void res.redirect(303, detour);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const email = oneString(body.email)?.trim() ?? '';
      const password = oneString(body.current_password) ?? '';
      if (!EMAIL.test(email) || email.length > 320 || password === '' || password.length > 1024) {
        return show(req, res, 400, user, ['Enter the new address, like name@example.com, and your password.']);
      }
      const attempt = await accounts.changeThrottle.attempt([`password-change:${user.id}`]);
      if (!attempt.allowed) {
        res.setHeader('Retry-After', String(attempt.retryAfterSeconds));
        return show(req, res, 429, user, [tooManyAttempts(attempt.retryAfterSeconds)]);
      }
      const account = await users.findById(user.subject);
      const verified = account && !account.disabled ? await users.verifyPassword(account.username, password) : null;
      if (!account || verified?.id !== account.id) return show(req, res, 401, user, ['Your password is not right.']);
      await attempt.succeeded();
      if (account.email && normalizeEmail(account.email) === normalizeEmail(email)) {
        return show(req, res, 422, user, ['That is your address already.']);
      }
      const issued = await verifications.issue(account.id, { email });
      if (!issued) throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in again.' });
      try {
        const link = `${base}/email/verify?token=${encodeURIComponent(issued.token)}`;
        await mailer.send('emailVerification', email, {
          name: account.name,
          email,
          link,
          expiresInMinutes: Math.round(linkLifetimeSeconds / 60),
        });
      } catch {
        await verifications.revoke(account.id);
        return show(req, res, 503, user, ['We could not send mail just now, so nothing changed. Try again in a few minutes.']);
      }
      res.redirect(303, `${req.baseUrl}/email?sent=1`);
    }),
  );

  router.get(
    '/email/verify',
    asyncRoute(async function openVerifyLink(req, res) {
      res.setHeader('Referrer-Policy', 'no-referrer');
      if (req.query.token !== undefined) {
        const token = typeof req.query.token === 'string' && req.query.token.length <= 100 ? req.query.token : '';
        if (token) writeLinkCookie(res, 'verify', verifyPage(req), token, linkLifetimeSeconds);
        res.setHeader('Cache-Control', 'no-store');
        return void res.redirect(303, verifyPage(req));
      }
      const token = readLinkCookie(req, 'verify');
      const check = token ? await verifications.check(token) : ({ ok: false, reason: 'missing' } as const);
      if (!check.ok) return linkProblem(req, res, check.reason);
      send(res, 200, renderConfirmEmailPage({ assetsPath: settings.assetsPath, action: verifyPage(req), email: check.data.email ?? '' }));
    }),
  );

  router.post(
    '/email/verify',
    parseForm,
    asyncRoute(async function confirmEmail(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const token = readLinkCookie(req, 'verify');
      const redeemed = token ? await verifications.redeem(token) : ({ ok: false, reason: 'missing' } as const);
      if (!redeemed.ok) return linkProblem(req, res, redeemed.reason);
      const before: Account = redeemed.account;
      const email = redeemed.data.email ?? '';
      let updated: Account | null;
      try {
        updated = await users.setEmail(before.id, email, { verified: true, ifCredentialVersion: before.credentialVersion });
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
        clearLinkCookie(res, 'verify', verifyPage(req));
        return message(req, res, 409, 'That address is taken', 'Another account uses that address now, so yours did not change.');
      }
      if (!updated) return linkProblem(req, res, 'stale');
      clearLinkCookie(res, 'verify', verifyPage(req));
      const userId = identityId({ source: settings.directorySource, subject: before.id });
      eventsFor(req, settings.events)?.emit('email.changed', { reason: 'verified', userId }, req);
      if (before.email) await accounts.notices.send(req, 'emailChanged', updated, { newEmail: email }, before.email);
      message(req, res, 200, 'Your address was changed', `Mail about your account now goes to ${email}.`);
    }),
  );
}
