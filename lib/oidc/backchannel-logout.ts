import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { eventsFor } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { BadRequestError, MethodNotAllowedError } from '../http/errors';
import type { KeyValueStore } from '../store/port';
import type { SessionManager } from '../session/types';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { assertProvider, type OidcProvider } from './provider';
import { LogoutTokenRejectedError, validateLogoutToken } from './logout-token';
import { sessionManagerOf } from './session-bridge';
import { providerSessionTag, subjectTag } from './session-tags';

/** Options of {@link backchannelLogout}. */
export interface BackchannelLogoutOptions {
  /** Where `jti` replay marks are kept. Default: the provider's `store`. */
  store?: KeyValueStore;
  /** The session manager whose tag index ends the sessions. Default: `req.sso.manager` from `ssoSession`. */
  sessions?: SessionManager;
}

const debug = debugChannel('oidc');

const BACKCHANNEL_OPTIONS: OptionSchema = {
  store: {
    type: 'object',
    expected: 'a KeyValueStore such as new RedisStore(url)',
    check: (value: { setIfAbsent?: unknown }) =>
      typeof value.setIfAbsent === 'function' ? undefined : 'must be a KeyValueStore such as new RedisStore(url)',
  },
  sessions: {
    type: 'object',
    expected: 'the session manager (ssoSession(...).manager)',
    check: (value: { destroyByTag?: unknown }) =>
      typeof value.destroyByTag === 'function' ? undefined : 'must be the session manager (ssoSession(...).manager)',
  },
};

function invalidLogoutRequest(description: string, cause?: unknown): BadRequestError {
  // Back-Channel Logout §2.8 asks for an OAuth-style `error` member; problem+json carries it as an extension.
  return new BadRequestError({
    code: 'invalid_logout_token',
    detail: `The logout token was refused: ${description}.`,
    extensions: { error: 'invalid_request', error_description: description },
    cause,
  });
}

/**
 * The back-channel logout endpoint under a factory name of the caller's (`backchannelLogout`, or `oidc` for the
 * router).
 *
 * @example
 * router.post('/backchannel-logout/corp', createBackchannelLogout('oidc', corp));
 */
export function createBackchannelLogout(
  who: string,
  provider: OidcProvider,
  options: BackchannelLogoutOptions = {},
  events?: SecurityEvents,
): RequestHandler {
  assertProvider(who, provider);
  checkOptions(who, options as unknown, BACKCHANNEL_OPTIONS);
  const store = options.store ?? provider.store;
  if (!store) {
    throw new OptionsError(
      `${who}: provider "${provider.name}" has no store for logout-token replay marks; pass oidcProvider({ store }) or backchannelLogout(p, { store })`,
    );
  }
  const explicitSessions = options.sessions;
  // Logout tokens are small; a large body is not one.
  const parseForm = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 10 });

  function refuse(description: string, cause?: unknown): BadRequestError {
    debug('back-channel logout of provider "%s" refused: %s', provider.name, description);
    return invalidLogoutRequest(description, cause);
  }

  async function endSessions(req: Request, res: Response): Promise<void> {
    if (!req.is('application/x-www-form-urlencoded')) throw refuse('the body must be application/x-www-form-urlencoded');
    const body = (req.body ?? {}) as Record<string, unknown>;
    const token = body.logout_token;
    if (typeof token !== 'string' || token.length === 0) throw refuse('logout_token is missing');
    const manager = sessionManagerOf(req, explicitSessions, who);
    let request;
    try {
      request = await validateLogoutToken(provider, store as KeyValueStore, token);
    } catch (error) {
      if (error instanceof LogoutTokenRejectedError) throw refuse(error.reason, error);
      throw error;
    }
    // Only this issuer's sessions: the tags are issuer-scoped, so a `sub` of this provider never names the user of
    // another provider who happens to have the same `sub`.
    const tag = request.sid ? providerSessionTag(provider.issuer, request.sid) : subjectTag(provider.issuer, request.sub as string);
    const ended = await manager.destroyByTag(tag);
    debug('back-channel logout of provider "%s" ended %d session(s) by %s', provider.name, ended, request.sid ? 'sid' : 'sub');
    eventsFor(req, events)?.emit('session.ended', { reason: 'backchannel', provider: provider.name, count: ended }, req);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).end();
  }

  return function backchannelLogoutMiddleware(req: Request, res: Response, next: NextFunction) {
    if (req.method !== 'POST') {
      next(new MethodNotAllowedError(['POST']));
      return;
    }
    parseForm(req, res, (parseError?: unknown) => {
      if (parseError) {
        next(refuse('the body could not be read', parseError));
        return;
      }
      endSessions(req, res).catch(next);
    });
  };
}

/**
 * The back-channel logout endpoint (OpenID Connect Back-Channel Logout 1.0): the provider POSTs a form with
 * `logout_token`; once it is valid (see `validateLogoutToken`: signed by this provider, `iss` this issuer) every
 * shared session of **this issuer** tagged at login with its `sid` (or, without `sid`, its `sub`) is destroyed
 * through the session manager's tag index, on every subdomain at once since the session is shared. Answers 200
 * with `Cache-Control: no-store`; a bad token gives 400 with `error: "invalid_request"`; a store outage 503. Needs
 * `errorHandler()` to render the errors.
 *
 * @example
 * app.post('/backchannel-logout/corp', backchannelLogout(corp));
 */
export function backchannelLogout(provider: OidcProvider, options: BackchannelLogoutOptions = {}): RequestHandler {
  return createBackchannelLogout('backchannelLogout', provider, options);
}
