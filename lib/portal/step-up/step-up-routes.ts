import type { Request, Response, Router, RequestHandler } from 'express';
import { eventsFor } from '../../events/event-source';
import { BadRequestError } from '../../http/errors';
import { authenticationOf } from '../../session/authentication';
import { raiseSessionAuthentication } from '../../session/raise-authentication';
import { levelRank, meetsRequirement, type AuthenticationRequirement } from '../../session/step-up';
import type { SessionUser } from '../../session/types';
import { debugChannel } from '../../util/debug';
import { requestOrigin } from '../../util/request-origin';
import { allowSameOriginReferrer, extendFormAction } from '../login-page';
import type { PortalSettings } from '../portal-options';
import { tooManyAttempts } from '../password-login';
import { oneString, requireSameOrigin, safeReturnTo, ssoContext } from '../portal-request';
import { asyncRoute, hereUrl, needsPassword, portalUrl, requirementOf } from './step-up-request';
import type { SecondFactor } from '../two-factor/second-factor';
import type { TwoFactorSettings } from '../two-factor/two-factor-options';
import { renderStepUpPage, type StepUpMethodView } from '../two-factor/two-factor-pages';
import { resumeOf, sendResumedForm } from './step-up-resume';

const debug = debugChannel('portal');
const WRONG = 'That did not work. Check the code and try again.';
const WRONG_PASSWORD = 'Wrong username or password, or that code did not work.';

async function availableMethods(
  twoFactor: TwoFactorSettings,
  userId: string,
  requirement: AuthenticationRequirement,
): Promise<SecondFactor[]> {
  const needed = levelRank(requirement.acr ?? '2fa');
  const usable = await Promise.all(
    twoFactor.methods.map(async (method) => (levelRank(method.level) >= needed && (await method.isAvailable(userId)) ? method : undefined)),
  );
  return usable.filter((method): method is SecondFactor => method !== undefined);
}

/** A step-up method as events name the factor: the recovery-code method is `recovery_code`. */
export function factorName(methodId: string): string {
  return methodId === 'recovery' ? 'recovery_code' : methodId;
}

const PASSWORD_ONLY: StepUpMethodView = { id: 'password', label: 'Enter your password', fields: '' };

/**
 * Mounts the step-up page: `GET /step-up?return_to&acr&max_age` shows only what is missing (a second factor; the
 * password too when the login is older than `max_age`), `POST /step-up` checks it (same origin, throttled like
 * passwords), raises the *current* session's level with a new session id, and redirects to `return_to`. The password
 * typed here must be the session user's own: a step-up never changes who is signed in. A user without a second
 * factor is sent to enrolment first, then back. With `resume` (the id `requireSession` gave a form that waited for
 * this step-up), the page sends that form on once the factor is given, instead of only returning to its page.
 *
 * @example
 * mountStepUp(router, settings, twoFactor, parseForm);
 */
export function mountStepUp(router: Router, settings: PortalSettings, twoFactor: TwoFactorSettings, parseForm: RequestHandler): void {
  async function show(
    req: Request,
    res: Response,
    status: number,
    requirement: AuthenticationRequirement,
    returnTo: string,
    resume: string,
    error?: string,
  ) {
    const user = req.user as SessionUser;
    const now = Math.floor(Date.now() / 1000);
    const password = needsPassword(user, requirement, now);
    const methods = levelRank(requirement.acr ?? '2fa') <= 1 ? [] : await availableMethods(twoFactor, user.id, requirement);
    const views: StepUpMethodView[] =
      levelRank(requirement.acr ?? '2fa') <= 1
        ? [PASSWORD_ONLY]
        : await Promise.all(
            methods.map(async (method) => ({
              id: method.id,
              label: method.label,
              fields: await method.renderFields(user.id, req),
              scripts: method.scripts ?? [],
            })),
          );
    const { redirects } = ssoContext(req);
    const own = requestOrigin(req);
    extendFormAction(
      res,
      [new URL(returnTo || redirects.defaultUrl).origin].filter((origin) => origin !== own),
    );
    allowSameOriginReferrer(res);
    res.status(status).setHeader('Cache-Control', 'no-store');
    res.type('html').send(
      renderStepUpPage({
        assetsPath: settings.assetsPath,
        action: `${req.baseUrl}/step-up`,
        returnTo,
        acr: requirement.acr ?? '2fa',
        maxAge: requirement.maxAgeSeconds === undefined ? '' : String(requirement.maxAgeSeconds),
        needsPassword: password,
        methods: views,
        ...(resume ? { resume } : {}),
        ...(error ? { error } : {}),
      }),
    );
  }

  /** Where to send a request the page cannot serve yet; undefined when the page can be shown. */
  async function detour(req: Request, requirement: AuthenticationRequirement, returnTo: string): Promise<string | undefined> {
    const user = req.user;
    if (!user) return portalUrl(req, '/login', { return_to: hereUrl(req) });
    const now = Math.floor(Date.now() / 1000);
    if (meetsRequirement(authenticationOf(user), requirement, now)) return returnTo || ssoContext(req).redirects.defaultUrl;
    if (needsPassword(user, requirement, now) && user.source !== settings.directorySource) {
      // Only the directory's users have a password here; others sign in again with their own provider.
      return portalUrl(req, '/login', { return_to: hereUrl(req), prompt: 'login' });
    }
    if (levelRank(requirement.acr ?? '2fa') >= 2 && (await availableMethods(twoFactor, user.id, requirement)).length === 0) {
      if (requirement.acr === 'phr') return undefined;
      debug('step-up for a user without a second factor: sent to enrolment');
      return portalUrl(req, '/two-factor/totp', { return_to: hereUrl(req) });
    }
    return undefined;
  }

  router.get(
    '/step-up',
    asyncRoute(async function showStepUp(req, res) {
      const requirement = requirementOf(req.query.acr, req.query.max_age);
      const returnTo = safeReturnTo(req, req.query.return_to);
      const resume = resumeOf(req.query.resume);
      // Met already (back from enrolment, or stepped up in another tab): the waiting form goes on now.
      const met = req.user !== undefined && meetsRequirement(authenticationOf(req.user), requirement, Math.floor(Date.now() / 1000));
      if (met && resume && (await sendResumedForm(settings, req, res, resume))) return;
      const elsewhere = await detour(req, requirement, returnTo);
      if (elsewhere !== undefined) {
        res.setHeader('Cache-Control', 'no-store');
        res.redirect(303, elsewhere);
        return;
      }
      await show(req, res, 200, requirement, returnTo, resume);
    }),
  );

  router.post(
    '/step-up',
    parseForm,
    asyncRoute(async function submitStepUp(req, res) {
      requireSameOrigin(req, settings.allowedOrigins);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const requirement = requirementOf(body.acr, body.max_age);
      const returnTo = safeReturnTo(req, body.return_to);
      const resume = resumeOf(body.resume);
      const user = req.user;
      if (!user) {
        res.redirect(303, portalUrl(req, '/login', { return_to: returnTo }));
        return;
      }
      const methodId = oneString(body.method) ?? '';
      const now = Math.floor(Date.now() / 1000);
      const password = needsPassword(user, requirement, now);
      const passwordOnly = levelRank(requirement.acr ?? '2fa') <= 1;
      const method = passwordOnly ? undefined : (await availableMethods(twoFactor, user.id, requirement)).find((m) => m.id === methodId);
      if ((!passwordOnly && method === undefined) || (passwordOnly && !password)) {
        throw new BadRequestError({ code: 'invalid_request', detail: 'Choose one of the offered ways to confirm it is you.' });
      }
      // Counted before anything is checked, so parallel guesses cannot slip past the limit.
      const events = eventsFor(req, settings.events);
      const factor = method === undefined ? 'password' : factorName(method.id);
      const decision = await twoFactor.attempt(req, user.id);
      if (!decision.allowed) {
        events?.emit(
          'request.throttled',
          { reason: 'second_factor', method: 'stepup', retryAfterSeconds: decision.retryAfterSeconds },
          req,
        );
        res.setHeader('Retry-After', String(decision.retryAfterSeconds));
        await show(req, res, 429, requirement, returnTo, resume, tooManyAttempts(decision.retryAfterSeconds));
        return;
      }
      if (password) {
        const username = oneString(body.username)?.trim() ?? '';
        const typed = oneString(body.password) ?? '';
        const verified = username && typed.length <= 1024 ? await settings.users.verifyPassword(username, typed) : null;
        // The password must be this session's user's: a step-up never turns one user's session into another's.
        if (verified === null || verified.id !== user.subject || user.source !== settings.directorySource) {
          debug('refused a step-up: the password is wrong or not the signed-in user’s');
          events?.emit('stepup.failed', { reason: 'wrong_password', factor: 'password' }, req);
          await show(req, res, 401, requirement, returnTo, resume, WRONG_PASSWORD);
          return;
        }
      }
      const proof = method === undefined ? true : await method.verify(user.id, body, req);
      if (method !== undefined && !proof) {
        debug('refused a step-up: the %s factor did not verify', method.id);
        events?.emit('stepup.failed', { reason: method.id === 'passkey' ? 'passkey_rejected' : 'wrong_code', factor }, req);
        await show(req, res, 401, requirement, returnTo, resume, password ? WRONG_PASSWORD : WRONG);
        return;
      }
      await twoFactor.recordSuccess(req, res, decision);
      const methodAmr = method === undefined ? [] : typeof proof === 'object' ? proof.amr : [method.amr];
      await raiseSessionAuthentication(req, [...(password ? ['pwd'] : []), ...methodAmr], now);
      if (events !== undefined) {
        const acr = requirement.acr ?? '2fa';
        events.emit('stepup.succeeded', { reason: 'authenticated', factor, acr }, req);
        if (method !== undefined) {
          const remaining = method.id === 'recovery' ? { remaining: await twoFactor.recovery.remaining(user.id) } : {};
          events.emit('factor.used', { reason: 'stepup', factor, ...remaining }, req);
        }
      }
      if (await sendResumedForm(settings, req, res, resume)) return;
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(303, returnTo || ssoContext(req).redirects.defaultUrl);
    }),
  );
}
