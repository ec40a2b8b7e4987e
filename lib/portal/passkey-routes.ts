import express, { Router, type Request, type Response } from 'express';
import { BadRequestError, ForbiddenError, UnauthorizedError } from '../http/errors';
import { authenticationOf } from '../session/authentication';
import { meetsRequirement } from '../session/step-up';
import type { SessionUser } from '../session/types';
import { guarded } from '../http/handlers';
import { requestOrigin } from '../util/request-origin';
import { allowSameOriginReferrer } from './login-page';
import type { PasskeySettings } from './passkey-options';
import { passkeyScript, renderPasskeysPage } from './passkey-pages';
import { mountPasskeySignIn, refusedProblem } from './passkey-sign-in-routes';
import type { PortalSettings } from './portal-options';
import { oneString, requireSameOrigin, ssoContext } from './portal-request';

/** Why a passkey cannot be added now, and where the user can fix it. */
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
 * `POST /passkeys/rename` and `POST /passkeys/remove` (forms), `POST /passkeys/sign-in/options` and
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
    const origin = requestOrigin(req) ?? '';
    return `${req.baseUrl}/login?prompt=login&return_to=${encodeURIComponent(`${origin}${req.baseUrl}/passkeys`)}`;
  }

  async function hasSecondFactor(userId: string): Promise<boolean> {
    if ((await settings.credentials.listPasskeys(userId)).length > 0) return true;
    for (const method of portal.twoFactor?.methods ?? []) {
      if (method.id !== 'passkey' && (await method.isAvailable(userId))) return true;
    }
    return false;
  }

  /**
   * Why the user may not add a passkey now, or undefined. A passkey is a strong factor (a passwordless sign-in is
   * `phr`), so it must not be planted with less than the account already takes: a recent login for a user without a
   * second factor, and a recent second factor for a user who has one (a passkey, an authenticator app, recovery
   * codes); otherwise a stolen password, or a stolen session, would buy a phishing-resistant factor.
   */
  async function refusalToAdd(req: Request, user: SessionUser): Promise<AddRefusal | undefined> {
    const now = Math.floor(Date.now() / 1000);
    const authentication = authenticationOf(user);
    if (now - authentication.authTime > settings.recentLoginSeconds) {
      return {
        code: 'recent_login_required',
        detail: 'Sign in again to add a passkey.',
        url: reauthenticateUrl(req),
        label: 'sign in again',
      };
    }
    if (!(await hasSecondFactor(user.id))) return undefined;
    if (meetsRequirement(authentication, { acr: '2fa', maxAgeSeconds: settings.recentLoginSeconds }, now)) return undefined;
    const back = encodeURIComponent(`${requestOrigin(req) ?? ''}${req.baseUrl}/passkeys`);
    return {
      code: 'second_factor_required',
      detail: 'Confirm it is you with your second factor to add a passkey.',
      url: portal.twoFactor
        ? `${req.baseUrl}/step-up?acr=2fa&max_age=${settings.recentLoginSeconds}&return_to=${back}`
        : reauthenticateUrl(req),
      label: portal.twoFactor ? 'confirm it is you with your second factor' : 'sign in again with your passkey',
    };
  }

  async function requireMayAdd(req: Request, user: SessionUser): Promise<void> {
    const refusal = await refusalToAdd(req, user);
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
      const refusal = await refusalToAdd(req, user);
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
      await requireMayAdd(req, user);
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
      await requireMayAdd(req, user);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const name = passkeyName(body.name);
      if (name === undefined)
        throw new BadRequestError({ code: 'invalid_passkey_name', detail: 'Give the passkey a name of at most 64 characters.' });
      const passkey = await ceremonies(req)
        .verifyRegistration(user.id, body.response, name)
        .catch((error: unknown) => {
          throw refusedProblem(error);
        });
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
      const renamed = await settings.credentials.renamePasskey(user.id, credential, name);
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
      const removed = await settings.credentials.removePasskey(user.id, credential);
      res.redirect(303, `${req.baseUrl}/passkeys${removed ? '?removed=1' : ''}`);
    }),
  );

  mountPasskeySignIn(router, portal, settings);

  return router;
}
