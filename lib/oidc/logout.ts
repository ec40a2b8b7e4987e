import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { BadRequestError, MethodNotAllowedError } from '../http/errors';
import type { KeyValueStore } from '../store/port';
import type { SessionManager } from '../session/types';
import { OidcProvider } from './provider';
import { LogoutTokenRejectedError, validateLogoutToken } from './logout-token';
import { endLocalSession, redirectPolicyOf, requireSessionSupport, sessionManagerOf, type RedirectTargetPolicy } from './session-bridge';

/** Options of {@link oidcLogout}. */
export interface OidcLogoutOptions {
  /** The redirect policy the post-logout target must pass. Default: `req.sso.redirects` from `ssoSession`. */
  redirects?: RedirectTargetPolicy;
}

/** Options of {@link backchannelLogout}. */
export interface BackchannelLogoutOptions {
  /** Where `jti` replay marks are kept. Default: the provider's `store`. */
  store?: KeyValueStore;
  /** The session manager whose tag index ends the sessions. Default: `req.sso.manager` from `ssoSession`. */
  sessions?: SessionManager;
}

function checkProvider(who: string, provider: unknown): asserts provider is OidcProvider {
  if (provider instanceof OidcProvider) return;
  if (provider && typeof provider === 'object' && 'method' in provider && 'headers' in provider) {
    throw new TypeError(`${who}: call the factory with a provider: ${who}(corp), not ${who} itself`);
  }
  throw new TypeError(`${who}: the first argument must be a provider from oidcProvider({ … })`);
}

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): ends the local shared session first (so a failure
 * at the provider never leaves the user logged in here), then redirects to the provider's `end_session_endpoint`
 * with `id_token_hint`, `client_id` and the `post_logout_redirect_uri` (which must pass the redirect policy), or
 * straight to the post-logout page when the provider has no such endpoint. Mount it on POST: SameSite=Lax keeps
 * the session cookie off cross-site POSTs, so another site cannot log users out.
 *
 * @example
 * app.post('/logout/corp', oidcLogout(corp));
 */
export function oidcLogout(provider: OidcProvider, options: OidcLogoutOptions = {}): RequestHandler {
  checkProvider('oidcLogout', provider);
  if (options === null || typeof options !== 'object') throw new TypeError('oidcLogout: options must be an object');
  if (options.redirects !== undefined && typeof options.redirects?.sanitize !== 'function') {
    throw new TypeError('oidcLogout: redirects must be a redirect policy from createRedirectPolicy()');
  }

  return async function oidcLogoutMiddleware(req: Request, res: Response, next: NextFunction) {
    try {
      requireSessionSupport(req, 'oidcLogout');
      const redirects = redirectPolicyOf(req, options.redirects, 'oidcLogout');
      const postLogout = provider.postLogoutRedirectUri;
      if (postLogout !== undefined && !redirects.isSafe(postLogout)) {
        throw new Error(`oidcLogout: postLogoutRedirectUri "${postLogout}" is not allowed by the redirect policy`);
      }
      const state = req.session.oidc;
      const idToken = state?.provider === provider.name ? state.idToken : undefined;

      await endLocalSession(req, res);

      res.setHeader('Cache-Control', 'no-store');
      // The user is logged out here already; a provider that cannot be reached only loses its own logout.
      const metadata = await provider.metadata().catch(() => undefined);
      if (!metadata?.endSessionEndpoint) {
        res.redirect(303, postLogout ?? redirects.defaultUrl);
        return;
      }
      const url = new URL(metadata.endSessionEndpoint);
      url.searchParams.set('client_id', provider.clientId);
      if (idToken) url.searchParams.set('id_token_hint', idToken);
      if (postLogout) url.searchParams.set('post_logout_redirect_uri', postLogout);
      res.redirect(303, url.href);
    } catch (error) {
      next(error);
    }
  };
}

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
 * The back-channel logout endpoint (OpenID Connect Back-Channel Logout 1.0): the provider POSTs a form with
 * `logout_token`; once it is valid (see {@link validateLogoutToken}) every shared session tagged with its `sid`
 * (or, without `sid`, its `sub`) at login is destroyed through the session manager's tag index, on every
 * subdomain at once since the session is shared. Answers 200 with `Cache-Control: no-store`; a bad token gives
 * 400 with `error: "invalid_request"`; a store outage 503. Needs `errorHandler()` to render the errors.
 *
 * @example
 * app.post('/backchannel-logout/corp', backchannelLogout(corp));
 */
export function backchannelLogout(provider: OidcProvider, options: BackchannelLogoutOptions = {}): RequestHandler {
  checkProvider('backchannelLogout', provider);
  if (options === null || typeof options !== 'object') throw new TypeError('backchannelLogout: options must be an object');
  const store = options.store ?? provider.store;
  if (!store) {
    throw new TypeError(
      `backchannelLogout: provider "${provider.name}" has no store for logout-token replay marks; pass oidcProvider({ store }) or backchannelLogout(p, { store })`,
    );
  }
  if (options.sessions !== undefined && typeof options.sessions?.destroyByTag !== 'function') {
    throw new TypeError('backchannelLogout: sessions must be the session manager (ssoSession(...).manager)');
  }
  // Logout tokens are small; a large body is not one.
  const parseForm = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 10 });

  async function endSessions(req: Request, res: Response): Promise<void> {
    if (!req.is('application/x-www-form-urlencoded')) throw invalidLogoutRequest('the body must be application/x-www-form-urlencoded');
    const body = (req.body ?? {}) as Record<string, unknown>;
    const token = body.logout_token;
    if (typeof token !== 'string' || token.length === 0) throw invalidLogoutRequest('logout_token is missing');
    const manager = sessionManagerOf(req, options.sessions, 'backchannelLogout');
    let request;
    try {
      request = await validateLogoutToken(provider, store as KeyValueStore, token);
    } catch (error) {
      if (error instanceof LogoutTokenRejectedError) throw invalidLogoutRequest(error.reason, error);
      throw error;
    }
    const tag = request.sid ? `oidc-sid:${request.issuer}|${request.sid}` : `oidc-sub:${request.issuer}|${request.sub}`;
    await manager.destroyByTag(tag);
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
        next(invalidLogoutRequest('the body could not be read', parseError));
        return;
      }
      endSessions(req, res).catch(next);
    });
  };
}
