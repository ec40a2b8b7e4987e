import type { Request, RequestHandler, Response, Router } from 'express';
import type { AccountTokenRefusal } from '../../accounts/account-tokens';
import type { Account } from '../../accounts/writable-user-directory';
import { eventsFor } from '../../events/event-source';
import { identityId } from '../../session/identity';
import { logout } from '../../session/logout';
import { sha256 } from '../../util/digest';
import { hashPassword } from '../../util/password-hash';
import { allowSameOriginReferrer } from '../login-page';
import { tooManyAttempts } from '../password-login';
import type { PortalSettings } from '../portal-options';
import { oneString, requireSameOrigin, ssoContext } from '../portal-request';
import { asyncRoute } from '../step-up/step-up-request';
import { clientNetwork } from '../throttle/client-network';
import { renderForgotPasswordPage, renderMessagePage, renderResetPasswordPage } from './account-pages';
import type { AccountRuntime } from './account-runtime';
import { clearLinkCookie, readLinkCookie, writeLinkCookie } from './link-cookie';
import type { PasswordResetLinks } from './password-reset-links';
import { resetFactors } from './reset-factors';

const MAX_PASSWORD = 1024;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

const LINK_PROBLEMS: Record<AccountTokenRefusal | 'missing', { status: number; title: string; message: string }> = {
  missing: { status: 400, title: 'Open the link from your mail', message: 'This page works from the link we mailed you.' },
  invalid: {
    status: 400,
    title: 'This link does not work',
    message: 'The link is incomplete, was changed, or a newer link replaced it. Ask for a new one.',
  },
  expired: { status: 410, title: 'This link has expired', message: 'Reset links work for a short time only. Ask for a new one.' },
  used: { status: 410, title: 'This link was used already', message: 'Each reset link works once. Ask for a new one if you need it.' },
  stale: {
    status: 410,
    title: 'This link is no longer valid',
    message: 'Your password or email address changed after the link was sent. Ask for a new one if you need it.',
  },
};

const REFUSAL_EVENT = {
  missing: 'invalid_link',
  invalid: 'invalid_link',
  expired: 'expired_link',
  used: 'used_link',
  stale: 'used_link',
} as const;

/**
 * Mounts the forgotten-password pages (ASVS 6.4.1 to 6.4.3, 6.3.8): `GET|POST /password/forgot` (the same answer,
 * at once, whether or not the address has an account; throttled per address and per network; the lookup and mail
 * happen after the answer), and `GET|POST /password/reset`, which the mailed link opens: the token moves into a
 * cookie of that page and the browser is sent on to the clean URL, the new password is checked by the policy, a
 * user with a second factor proves it first, and the change is one write conditional on the account being as the
 * link found it. Every session of the user ends.
 *
 * @example
 * mountPasswordReset(router, settings, accounts, resets, parseForm);
 */
export function mountPasswordReset(
  router: Router,
  settings: PortalSettings,
  accounts: AccountRuntime,
  resets: PasswordResetLinks,
  parseForm: RequestHandler,
): void {
  const { policy, users } = accounts.settings;
  const page = (req: Request) => `${req.baseUrl}/password/reset`;

  function sendPage(res: Response, status: number, html: string) {
    allowSameOriginReferrer(res);
    res.status(status).setHeader('Cache-Control', 'no-store');
    res.type('html').send(html);
  }

  function linkProblem(req: Request, res: Response, reason: AccountTokenRefusal | 'missing') {
    const problem = LINK_PROBLEMS[reason];
    clearLinkCookie(res, 'reset', page(req));
    eventsFor(req, settings.events)?.emit('password.reset_refused', { reason: REFUSAL_EVENT[reason] }, req);
    const link = { href: `${req.baseUrl}/password/forgot`, label: 'Ask for a new link' };
    sendPage(
      res,
      problem.status,
      renderMessagePage({ assetsPath: settings.assetsPath, title: problem.title, message: problem.message, link }),
    );
  }

  async function showReset(req: Request, res: Response, status: number, account: Account, errors: readonly string[] = []) {
    const factors = await resetFactors(settings, req, account, accounts.settings.linkLifetimeSeconds);
    const chosen = oneString(req.query.method ?? (req.body as Record<string, unknown> | undefined)?.method);
    const methods = factors.satisfied ? [] : [...factors.methods].sort((a, b) => Number(b.id === chosen) - Number(a.id === chosen));
    const views = await Promise.all(
      methods.map(async (m) => ({ id: m.id, label: m.label, fields: await m.renderFields(factors.userKey, req) })),
    );
    const passkeySignIn = !factors.satisfied && factors.hasPasskey && methods.length === 0;
    const back = `${accounts.settings.portalUrl}/password/reset`;
    sendPage(
      res,
      status,
      renderResetPasswordPage({
        assetsPath: settings.assetsPath,
        action: page(req),
        hint: policy.hint,
        factors: views,
        errors,
        ...(passkeySignIn ? { passkeySignInUrl: `${req.baseUrl}/login?return_to=${encodeURIComponent(back)}` } : {}),
      }),
    );
  }

  router.get(
    '/password/forgot',
    asyncRoute(async function showForgot(req, res) {
      const html = renderForgotPasswordPage({
        assetsPath: settings.assetsPath,
        action: `${req.baseUrl}/password/forgot`,
        loginUrl: `${req.baseUrl}/login`,
      });
      sendPage(res, 200, html);
    }),
  );

  router.post(
    '/password/forgot',
    parseForm,
    asyncRoute(async function requestReset(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const email = oneString((req.body as Record<string, unknown> | undefined)?.email)?.trim() ?? '';
      const base = { assetsPath: settings.assetsPath, action: `${req.baseUrl}/password/forgot`, loginUrl: `${req.baseUrl}/login` };
      if (!EMAIL.test(email)) {
        sendPage(
          res,
          400,
          renderForgotPasswordPage({ ...base, errors: ['Enter the email address of your account, like name@example.com.'] }),
        );
        return;
      }
      // Keyed on what was typed and where from, never on whether an account exists: the answer says nothing either way.
      const { perAddress, perNetwork } = accounts.requestThrottles;
      const network = await perNetwork.attempt([`reset-network:${clientNetwork(req.ip ?? req.socket.remoteAddress ?? '')}`]);
      const address = network.allowed ? await perAddress.attempt([`reset-address:${sha256(email.toLowerCase(), 'base64url')}`]) : network;
      if (!address.allowed) {
        res.setHeader('Retry-After', String(address.retryAfterSeconds));
        eventsFor(req, settings.events)?.emit(
          'request.throttled',
          {
            reason: network.allowed ? 'password_reset_per_address' : 'password_reset_per_network',
            retryAfterSeconds: address.retryAfterSeconds,
          },
          req,
        );
        sendPage(
          res,
          429,
          renderForgotPasswordPage({
            ...base,
            errors: [tooManyAttempts(address.retryAfterSeconds).replace('failed attempts', 'requests')],
          }),
        );
        return;
      }
      // The lookup, the token and the mail happen after the answer, so its time is the same for every address.
      setImmediate(() => void resets.requestByEmail(email, req));
      sendPage(res, 200, renderForgotPasswordPage({ ...base, sent: true }));
    }),
  );

  router.get(
    '/password/reset',
    asyncRoute(async function openResetLink(req, res) {
      res.setHeader('Referrer-Policy', 'no-referrer');
      const fromLink = req.query.token;
      if (fromLink !== undefined) {
        // The token leaves the URL at once: the page itself is only ever shown at the clean address.
        const token = typeof fromLink === 'string' && fromLink.length <= 100 ? fromLink : '';
        if (token) writeLinkCookie(res, 'reset', page(req), token, accounts.settings.linkLifetimeSeconds);
        res.setHeader('Cache-Control', 'no-store');
        res.redirect(303, page(req));
        return;
      }
      const token = readLinkCookie(req, 'reset');
      if (!token) return linkProblem(req, res, 'missing');
      const check = await resets.tokens.check(token);
      if (!check.ok) return linkProblem(req, res, check.reason);
      await showReset(req, res, 200, check.account);
    }),
  );

  router.post(
    '/password/reset',
    parseForm,
    asyncRoute(async function submitReset(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const events = eventsFor(req, settings.events);
      const token = readLinkCookie(req, 'reset');
      if (!token) return linkProblem(req, res, 'missing');
      const check = await resets.tokens.check(token);
      if (!check.ok) return linkProblem(req, res, check.reason);
      const account = check.account;
      const body = (req.body ?? {}) as Record<string, unknown>;
      const next = oneString(body.new_password) ?? '';
      if (next === '' || next.length > MAX_PASSWORD) return showReset(req, res, 400, account, ['Enter a new password.']);
      const verdict = await policy.check(next, {
        username: account.username,
        name: account.name,
        ...(account.email ? { email: account.email } : {}),
      });
      if (!verdict.accepted) {
        events?.emit(
          'password.reset_refused',
          { reason: 'policy', userId: identityId({ source: settings.directorySource, subject: account.id }) },
          req,
        );
        return showReset(
          req,
          res,
          422,
          account,
          verdict.refusals.map((refusal) => refusal.message),
        );
      }
      const factors = await resetFactors(settings, req, account, accounts.settings.linkLifetimeSeconds);
      if (!factors.satisfied) {
        const method = factors.methods.find((m) => m.id === oneString(body.method));
        const twoFactor = settings.twoFactor;
        if (!method || !twoFactor) {
          events?.emit('password.reset_refused', { reason: 'second_factor_required', userId: factors.userKey }, req);
          return showReset(req, res, 401, account, ['Your account has a second factor: prove it to set a new password.']);
        }
        const decision = await twoFactor.attempt(req, factors.userKey);
        if (!decision.allowed) {
          res.setHeader('Retry-After', String(decision.retryAfterSeconds));
          return showReset(req, res, 429, account, [tooManyAttempts(decision.retryAfterSeconds)]);
        }
        if (!(await method.verify(factors.userKey, body, req))) {
          events?.emit('password.reset_refused', { reason: 'second_factor_required', userId: factors.userKey }, req);
          return showReset(req, res, 401, account, ['That code did not work. Check it and try again.']);
        }
        await twoFactor.recordSuccess(req, res, decision);
      }
      const hash = await hashPassword(next);
      const redeemed = await resets.tokens.redeem(token);
      if (!redeemed.ok) return linkProblem(req, res, redeemed.reason);
      // Conditional on the account as the link found it: nothing moved since, or nothing changes.
      const updated = await users.setPasswordHash(account.id, hash, { ifCredentialVersion: redeemed.account.credentialVersion });
      if (!updated) return linkProblem(req, res, 'stale');
      // Whoever held the old password (or a session opened with it) is out: every session of the user ends.
      if (req.user?.id === factors.userKey) await logout(req, res);
      const ended = await ssoContext(req).manager.logoutEverywhere(factors.userKey);
      if (ended > 0) events?.emit('session.ended', { reason: 'password_changed', userId: factors.userKey, count: ended }, req);
      clearLinkCookie(res, 'reset', page(req));
      events?.emit('password.reset', { reason: 'link', userId: factors.userKey }, req);
      await accounts.notices.send(req, 'passwordChanged', updated, {});
      const link = { href: `${req.baseUrl}/login`, label: 'Sign in' };
      sendPage(
        res,
        200,
        renderMessagePage({
          assetsPath: settings.assetsPath,
          title: 'Your password was changed',
          message: 'Sign in with your new password.',
          link,
        }),
      );
    }),
  );
}
