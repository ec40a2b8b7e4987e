import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { eventsFor } from '../events/event-source';
import { signInAttempt } from '../events/sign-in-attempt';
import type { SecurityEventReason } from '../events/vocabulary';
import { BadRequestError, HttpError, UnauthorizedError } from '../http/errors';
import { establishLogin } from '../session/establish-login';
import type { LoginUser } from '../session/types';
import { OptionsError } from '../util/options';
import { exchangeCode, fetchUserinfo, refreshTokens, type QrUserinfo } from './qr-login-client';
import { resolveQrLoginOptions, type QrLoginOptions, type QrUserProfile } from './qr-login-options';
import { randomToken } from '../util/random-token';
import type { QrLoginSessionState, QrProviderTokens } from './types';
import { sha256Bytes } from '../util/digest';

export type { QrLoginOptions, QrUserProfile } from './qr-login-options';

/** What {@link qrLogin} returns. */
export interface QrLoginHandlers {
  /** `GET /login/qr?return_to=…`: redirects to the provider's QR page. */
  login: RequestHandler;
  /** `GET <redirectUri path>?code&state`: completes the login and redirects to return_to. */
  callback: RequestHandler;
  /** Renews the provider's access token of this session with its refresh token; resolves to the new access token. */
  refresh(req: Request): Promise<string>;
}

/**
 * Takes the pending login whose state equals `presented` out of the session: compared in constant time over
 * equal-length digests, removed whether or not the login then succeeds, so a state is good for one callback only.
 */
function takePending(state: QrLoginSessionState, presented: string, lifetimeMs: number, now: number): { returnTo: string } | undefined {
  const pending = state.pending ?? {};
  const wanted = sha256Bytes(presented);
  let found: { returnTo: string; createdAt: number } | undefined;
  for (const [candidate, entry] of Object.entries(pending)) {
    if (timingSafeEqual(sha256Bytes(candidate), wanted)) {
      found = entry;
      delete pending[candidate];
    } else if (now - entry.createdAt > lifetimeMs) {
      delete pending[candidate];
    }
  }
  if (!found || now - found.createdAt > lifetimeMs) return undefined;
  return { returnTo: found.returnTo };
}

// The sign-in failure each refusal of the callback is recorded as; outages are the error handler's to record.
const FAILURES: Readonly<Record<string, SecurityEventReason<'signin.failed'>>> = {
  state_mismatch: 'state_mismatch',
  qr_login_cancelled: 'cancelled',
  qr_provider_refused: 'invalid_grant',
  qr_provider_bad_response: 'provider_misbehaved',
  account_not_linked: 'account_not_linked',
};

function defaultMapUser() {
  return (info: QrUserinfo): QrUserProfile => ({
    name: typeof info.nickname === 'string' && info.nickname !== '' ? info.nickname : 'QR user',
    roles: [],
    attributes: {
      openid: info.openid,
      ...(typeof info.unionid === 'string' ? { unionid: info.unionid } : {}),
      // Only from a provider that counts this app as its own (`releaseUserId`): the key `linkAccount` links on.
      ...(typeof info.user_id === 'string' ? { user_id: info.user_id } : {}),
    },
  });
}

function saveSession(req: Request): Promise<void> {
  return new Promise((resolve, reject) => req.session.save((error?: unknown) => (error ? reject(error) : resolve())));
}

/**
 * The relying app's side of QR login: `login` sends the browser to the provider's QR page with a single-use state
 * bound to the session, `callback` checks it, exchanges the code, reads the profile and logs the user in on the
 * shared session (`establishLogin`), and `refresh` renews the provider's access token. Needs `ssoSession` first.
 *
 * @example
 * const qr = qrLogin({ providerUrl: 'https://idp.example.test', appid: 'shop', secret: process.env.QR_SECRET!,
 *                      redirectUri: 'https://auth.example.test/callback/qr' });
 * portal.get('/login/qr', qr.login);
 * portal.get('/callback/qr', qr.callback);
 */
export function qrLogin(options: QrLoginOptions): QrLoginHandlers {
  // eslint-disable-next-line prefer-rest-params
  if (arguments.length === 3 && typeof arguments[2] === 'function') {
    throw new OptionsError('qrLogin: it is a factory; write app.get("/login/qr", qrLogin({ … }).login), not qrLogin itself');
  }
  // An openid is only unique within one app of one provider, so both name the source.
  const { settings, stateLifetimeMs, maxPending, redirectUri, source, events: ownEvents } = resolveQrLoginOptions(options);
  const mapUser = options.mapUser ?? defaultMapUser();
  const qrconnectBase = `${settings.providerUrl}/sns/oauth2/qrconnect`;

  const requireSession = (req: Request, caller: string): void => {
    if (!req.session || !req.sso)
      throw new HttpError(500, {
        code: 'middleware_order',
        detail: `qrLogin.${caller}: no shared session on this request; mount app.use(ssoSession({...})) first`,
      });
  };

  const login = async function qrLoginStart(req: Request, res: Response, next: NextFunction): Promise<void> {
    try {
      requireSession(req, 'login');
      const now = Date.now();
      const returnTo = req.sso!.redirects.sanitize(req.query.return_to);
      const state = randomToken(16);
      const current = req.session.qrLogin?.pending ?? {};
      const kept = Object.entries(current)
        .filter(([, entry]) => now - entry.createdAt <= stateLifetimeMs)
        .sort(([, a], [, b]) => b.createdAt - a.createdAt)
        .slice(0, maxPending - 1);
      req.session.qrLogin = { ...req.session.qrLogin, pending: { ...Object.fromEntries(kept), [state]: { returnTo, createdAt: now } } };
      await saveSession(req);
      const query = new URLSearchParams({
        appid: settings.appid,
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: 'snsapi_login',
        state,
      });
      res.set('Cache-Control', 'no-store').redirect(302, `${qrconnectBase}?${query}`);
    } catch (error) {
      next(error);
    }
  };

  const callback = async function qrLoginCallback(req: Request, res: Response, next: NextFunction): Promise<void> {
    const attempt = signInAttempt(req, eventsFor(req, ownEvents), 'qr', { provider: settings.appid });
    try {
      requireSession(req, 'callback');
      const { code, state } = req.query;
      const stale = new BadRequestError({
        code: 'state_mismatch',
        detail: 'This sign-in was not started in this browser or has expired. Please start the sign-in again.',
      });
      if (typeof state !== 'string' || state === '' || state.length > 128) throw stale;
      const sessionState: QrLoginSessionState = req.session.qrLogin ?? {};
      const pending = takePending(sessionState, state, stateLifetimeMs, Date.now());
      req.session.qrLogin = sessionState;
      if (!pending) {
        await saveSession(req);
        throw stale;
      }
      await saveSession(req);
      if (typeof code !== 'string' || code === '' || code.length > 256) {
        throw new BadRequestError({ code: 'qr_login_cancelled', detail: 'The sign-in was not completed. Please start again.' });
      }
      const tokens = await exchangeCode(settings, code);
      const userinfo = await fetchUserinfo(settings, tokens);
      const profile = await mapUser(userinfo);
      if (profile === null || typeof profile !== 'object' || 'id' in profile || 'source' in profile || 'subject' in profile) {
        throw new TypeError('qrLogin: mapUser must return { name, roles?, attributes? }; link accounts with ssoSession({ linkAccount })');
      }
      const user: LoginUser = {
        source,
        subject: userinfo.openid,
        name: typeof profile.name === 'string' ? profile.name : 'QR user',
        roles: Array.isArray(profile.roles) ? [...profile.roles] : [],
        method: 'qr',
        ...(profile.attributes ? { attributes: profile.attributes } : {}),
      };
      // Only the provider tokens are carried into the new session; the pending states die with the old one.
      await establishLogin(req, user, { data: { qrLogin: { tokens } } });
      attempt.succeeded();
      res.set('Cache-Control', 'no-store').redirect(302, pending.returnTo);
    } catch (error) {
      attempt.failed(error instanceof HttpError ? FAILURES[error.code] : undefined);
      next(error);
    }
  };

  const refresh = async function qrLoginRefresh(req: Request): Promise<string> {
    requireSession(req, 'refresh');
    const current: QrProviderTokens | undefined = req.session.qrLogin?.tokens;
    if (!current) throw new UnauthorizedError({ code: 'qr_login_required', detail: 'This session did not sign in with QR login.' });
    let renewed: QrProviderTokens;
    try {
      renewed = await refreshTokens(settings, current);
    } catch (error) {
      // A refused refresh token is spent for good; drop it so the app asks for a new login instead of retrying.
      if ((error as { code?: unknown }).code === 'qr_refresh_rejected') {
        req.session.qrLogin = { ...req.session.qrLogin, tokens: undefined };
        await saveSession(req);
      }
      throw error;
    }
    req.session.qrLogin = { ...req.session.qrLogin, tokens: renewed };
    await saveSession(req);
    return renewed.accessToken;
  };

  return { login, callback, refresh };
}
