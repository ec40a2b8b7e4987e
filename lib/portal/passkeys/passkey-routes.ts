import express, { Router, type Request, type Response } from 'express';
import { eventsFor } from '../../events/event-source';
import { BadRequestError, ForbiddenError, UnauthorizedError } from '../../http/errors';
import { authenticationOf } from '../../session/authentication';
import { meetsRequirement } from '../../session/step-up';
import type { SessionUser } from '../../session/types';
import { guarded } from '../../http/handlers';
import { requestOrigin } from '../../util/request-origin';
import { allowSameOriginReferrer } from '../login-page';
import type { PasskeySettings } from './passkey-options';
import { passkeyScript, renderPasskeysPage } from './passkey-pages';
import { mountPasskeySignIn, refusedProblem } from './passkey-sign-in-routes';
import type { PortalSettings } from '../portal-options';
import { hasSecondFactor, secondFactorUrl } from '../two-factor/fresh-second-factor';
import { oneString, requireSameOrigin, ssoContext } from '../portal-request';

/** What a credential change needs a recent authentication for. */
type PasskeyChange = 'add' | 'rename' | 'remove';

const CHANGE_WORDS: Record<PasskeyChange, string> = { add: 'add a passkey', rename: 'rename a passkey', remove: 'remove a passkey' };

/** Why a passkey cannot be added, renamed or removed now, and where the user can fix it. */
interface AddRefusal {
  code: 'recent_login_required' | 'second_factor_required';
  detail: string;
  url: string;
  label: string;
}

const NOTICES: Record<string, string> = {
  added: 'The passkey was added.',
  renamed: 'The passkey was renamed.',
  removed: 'The passkey was removed.',
};

function passkeyName(raw: unknown): string | undefined {
  const name = (oneString(raw) ?? '').trim();
  // Control characters would let a name break the page's layout or a log line; the form limits the length too.
  if (name.length > 64 || /[\p{Cc}\p{Cf}]/u.test(name)) return undefined;
  return name === '' ? 'Passkey' : name;
}

/**
 * The portal's passkey routes (`loginPortal({ passkeys })` mounts them): `GET /passkeys` (the user's passkeys),
 * `POST /passkeys/registration/options` and `POST /passkeys/registration` (add one, after a recent login),
 * `POST /passkeys/rename` and `POST /passkeys/remove` (forms, after a recent login or second factor as for adding), `POST /passkeys/sign-in/options` and
 * `POST /passkeys/sign-in` (passwordless, throttled per network), `POST /passkeys/step-up/options` (the signed-in
 * user's passkeys, for the step-up page) and the page script. Every POST is same-origin only.
 *
 * @example
 * router.use(passkeyRoutes(portalSettings, resolvePasskeyOptions({ credentials: new KeyValueCredentialStore(store) }, store)));
 */
export function passkeyRoutes(portal: PortalSettings, settings: PasskeySettings): Router {
  const router = Router();
  const json = express.json({ limit: '32kb', strict: true });
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 4 });
  const { assetsPath, allowedOrigins } = portal;
  const ceremonies = (req: Request) => settings.ceremonies(ssoContext(req).cookie.domain);

  /** The signed-in directory user; passkeys belong to the portal's own users, whom it can look up again. */
  function directoryUser(req: Request): SessionUser {
    if (!req.user) throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in to manage your passkeys.' });
    if (req.user.source !== portal.directorySource) {
      throw new ForbiddenError({ code: 'passkeys_unavailable', detail: 'Passkeys are for accounts of this portal.' });
    }
    return req.user;
  }

  function reauthenticateUrl(req: Request): string {
    const origin = requestOrigin(req);
    const back = origin === undefined ? '' : `&return_to=${encodeURIComponent(`${origin}${req.baseUrl}/passkeys`)}`;
    return `${req.baseUrl}/login?prompt=login${back}`;
  }

  /**
   * Why the user may not add, rename or remove a passkey now, or undefined. A passkey is a strong factor (a
   * passwordless sign-in is `phr`), so it must not be planted with less than the account already takes: a recent
   * login for a user without a second factor, and a recent second factor for a user who has one (a passkey, an
   * authenticator app, recovery codes); otherwise a stolen password, or a stolen session, would buy a
   * phishing-resistant factor. Removing or renaming one is a credential change too (ASVS 7.5.1): a stolen session
   * must not strip the account of its factor, or disguise one it planted.
   */
  async function refusalToChange(req: Request, user: SessionUser, change: PasskeyChange = 'add'): Promise<AddRefusal | undefined> {
    const now = Math.floor(Date.now() / 1000);
    const authentication = authenticationOf(user);
    if (now - authentication.authTime > settings.recentLoginSeconds) {
      return {
        code: 'recent_login_required',
        detail: `Sign in again to ${CHANGE_WORDS[change]}.`,
        url: reauthenticateUrl(req),
        label: 'sign in again',
      };
    }
    if (!(await hasSecondFactor({ methods: portal.twoFactor?.methods, passkeys: settings }, user.id))) return undefined;
    if (meetsRequirement(authentication, { acr: '2fa', maxAgeSeconds: settings.recentLoginSeconds }, now)) return undefined;
    const origin = requestOrigin(req);
    const back = origin === undefined ? '' : `${origin}${req.baseUrl}/passkeys`;
    return {
      code: 'second_factor_required',
      detail: `Confirm it is you with your second factor to ${CHANGE_WORDS[change]}.`,
      url: secondFactorUrl(req, portal, back, settings.recentLoginSeconds),
      label: portal.twoFactor ? 'confirm it is you with your second factor' : 'sign in again with your passkey',
    };
  }

  async function requireMayChange(req: Request, user: SessionUser, change: PasskeyChange): Promise<void> {
    const refusal = await refusalToChange(req, user, change);
    if (refusal !== undefined) throw new UnauthorizedError({ code: refusal.code, detail: refusal.detail });
  }

  router.get(`${assetsPath}/passkeys.js`, function passkeyPageScript(_req: Request, res: Response) {
    res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(passkeyScript());
  });

  router.get(
    '/passkeys',
    guarded(async function showPasskeys(req: Request, res: Response) {
      if (!req.user) {
        res.redirect(303, reauthenticateUrl(req).replace('prompt=login&', ''));
        return;
      }
      const user = directoryUser(req);
      const passkeys = await settings.credentials.listPasskeys(user.id);
      const refusal = await refusalToChange(req, user);
      const notice = NOTICES[Object.keys(NOTICES).find((key) => req.query[key] === '1') ?? ''];
      allowSameOriginReferrer(res);
      res.setHeader('Cache-Control', 'no-store');
      res.type('html').send(
        renderPasskeysPage({
          assetsPath,
          userName: user.name,
          basePath: req.baseUrl,
          passkeys: passkeys.map((p) => ({
            credentialId: p.credentialId,
            name: p.name,
            createdAt: p.createdAt,
            synced: p.deviceType === 'multiDevice',
            ...(p.lastUsedAt === undefined ? {} : { lastUsedAt: p.lastUsedAt }),
          })),
          ...(refusal === undefined ? {} : { reauthenticate: { url: refusal.url, label: refusal.label } }),
          ...(notice ? { notice } : {}),
        }),
      );
    }),
  );

  router.post(
    '/passkeys/registration/options',
    guarded(async function registrationOptions(req: Request, res: Response) {
      requireSameOrigin(req, allowedOrigins);
      const user = directoryUser(req);
      // A stolen session alone must not be able to plant a lasting credential: adding one needs a fresh login.
      await requireMayChange(req, user, 'add');
      res.setHeader('Cache-Control', 'no-store');
      res.json(await ceremonies(req).registrationOptions({ id: user.id, name: user.name, displayName: user.name }));
    }),
  );

  router.post(
    '/passkeys/registration',
    json,
    guarded(async function register(req: Request, res: Response) {
      requireSameOrigin(req, allowedOrigins);
      const user = directoryUser(req);
      await requireMayChange(req, user, 'add');
      const body = (req.body ?? {}) as Record<string, unknown>;
      const name = passkeyName(body.name);
      if (name === undefined)
        throw new BadRequestError({ code: 'invalid_passkey_name', detail: 'Give the passkey a name of at most 64 characters.' });
      const passkey = await ceremonies(req)
        .verifyRegistration(user.id, body.response, name)
        .catch((error: unknown) => {
          throw refusedProblem(error);
        });
      eventsFor(req, portal.events)?.emit('factor.added', { reason: 'enrolled', factor: 'passkey' }, req);
      await portal.accounts?.notices.factorChanged(req, 'passkey', 'added');
      res.status(201).json({ credentialId: passkey.credentialId, name: passkey.name });
    }),
  );

  router.post(
    '/passkeys/rename',
    form,
    guarded(async function renamePasskey(req: Request, res: Response) {
      requireSameOrigin(req, allowedOrigins);
      const user = directoryUser(req);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const credential = oneString(body.credential);
      const name = passkeyName(body.name);
      if (!credential || credential.length > 1024 || name === undefined)
        throw new BadRequestError({ detail: 'Name the passkey and its new name.' });
      await requireMayChange(req, user, 'rename');
      const renamed = await settings.credentials.renamePasskey(user.id, credential, name);
      if (renamed) eventsFor(req, portal.events)?.emit('factor.renamed', { reason: 'self_service', factor: 'passkey' }, req);
      if (renamed) await portal.accounts?.notices.factorChanged(req, 'passkey', 'renamed');
      res.redirect(303, `${req.baseUrl}/passkeys${renamed ? '?renamed=1' : ''}`);
    }),
  );

  router.post(
    '/passkeys/remove',
    form,
    guarded(async function removePasskey(req: Request, res: Response) {
      requireSameOrigin(req, allowedOrigins);
      const user = directoryUser(req);
      const credential = oneString((req.body as Record<string, unknown> | undefined)?.credential);
      if (!credential || credential.length > 1024) throw new BadRequestError({ detail: 'Name the passkey to remove.' });
      await requireMayChange(req, user, 'remove');
      const removed = await settings.credentials.removePasskey(user.id, credential);
      if (removed) eventsFor(req, portal.events)?.emit('factor.removed', { reason: 'self_service', factor: 'passkey' }, req);
      if (removed) await portal.accounts?.notices.factorChanged(req, 'passkey', 'removed');
      res.redirect(303, `${req.baseUrl}/passkeys${removed ? '?removed=1' : ''}`);
    }),
  );

  mountPasskeySignIn(router, portal, settings);

  return router;
}
