import express, { Router, type Request, type Response } from 'express';
import { BadRequestError, ForbiddenError, UnauthorizedError } from '../http/errors';
import { authenticationOf } from '../session/authentication';
import type { SessionUser } from '../session/types';
import { guarded } from '../http/handlers';
import { requestOrigin } from '../util/request-origin';
import { allowSameOriginReferrer } from './login-page';
import type { PasskeySettings } from './passkey-options';
import { passkeyScript, renderPasskeysPage } from './passkey-pages';
import { mountPasskeySignIn, refusedProblem } from './passkey-sign-in-routes';
import type { PortalSettings } from './portal-options';
import { oneString, requireSameOrigin, ssoContext } from './portal-request';

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

  function loginIsRecent(user: SessionUser): boolean {
    return Date.now() / 1000 - authenticationOf(user).authTime <= settings.recentLoginSeconds;
  }

  function reauthenticateUrl(req: Request): string {
    const origin = requestOrigin(req) ?? '';
    return `${req.baseUrl}/login?prompt=login&return_to=${encodeURIComponent(`${origin}${req.baseUrl}/passkeys`)}`;
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
          ...(loginIsRecent(user) ? {} : { reauthenticateUrl: reauthenticateUrl(req) }),
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
      if (!loginIsRecent(user)) {
        throw new UnauthorizedError({ code: 'recent_login_required', detail: 'Sign in again to add a passkey.' });
      }
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
      if (!loginIsRecent(user)) throw new UnauthorizedError({ code: 'recent_login_required', detail: 'Sign in again to add a passkey.' });
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
