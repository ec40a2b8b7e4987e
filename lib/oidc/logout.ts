import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { debugChannel } from '../util/debug';
import { checkOptions, type OptionSchema } from '../util/options';
import { assertProvider, type OidcProvider } from './provider';
import { misconfigured } from './errors';
import { endLocalSession, redirectPolicyOf, requireSessionSupport } from './session-bridge';
import type { RedirectPolicy } from '../session/types';

/** Options of {@link oidcLogout}. */
export interface OidcLogoutOptions {
  /** The redirect policy the post-logout target must pass. Default: `req.sso.redirects` from `ssoSession`. */
  redirects?: RedirectPolicy;
}

const debug = debugChannel('oidc');

const LOGOUT_OPTIONS: OptionSchema = {
  redirects: {
    type: 'object',
    expected: 'a redirect policy from createRedirectPolicy()',
    check: (value: { sanitize?: unknown; isSafe?: unknown }) =>
      typeof value.sanitize === 'function' && typeof value.isSafe === 'function'
        ? undefined
        : 'must be a redirect policy from createRedirectPolicy()',
  },
};

/**
 * The provider's end-session URL (OpenID Connect RP-Initiated Logout 1.0): its `end_session_endpoint` with
 * `client_id`, the `post_logout_redirect_uri` when there is one, and the `id_token_hint` when given.
 *
 * @example
 * endSessionUrl(metadata.endSessionEndpoint, 'shop', 'https://shop.example.test/signed-out', idToken);
 */
export function endSessionUrl(endpoint: string, clientId: string, postLogout: string | undefined, idToken?: string): string {
  const url = new URL(endpoint);
  url.searchParams.set('client_id', clientId);
  if (idToken) url.searchParams.set('id_token_hint', idToken);
  if (postLogout) url.searchParams.set('post_logout_redirect_uri', postLogout);
  return url.href;
}

/**
 * Where to send the browser after signing it out, so the identity provider it logged in through ends its own
 * session too (RP-initiated logout): the provider's end-session URL kept in the session at login, with the ID token
 * as hint; undefined when the session did not log in through a provider that offers one. Read it *before* ending the
 * session (the ID token is kept there); any app of the domain can, since the session is shared. Without this, the
 * next "Sign in with …" would pass silently on the provider's session.
 *
 * @example
 * app.post('/logout', async (req, res, next) => {
 *   try {
 *     const upstream = upstreamLogoutUrl(req);
 *     await logoutEverywhere(req);
 *     res.redirect(303, upstream ?? 'https://auth.example.test/login');
 *   } catch (err) { next(err); }
 * });
 */
export function upstreamLogoutUrl(req: Request): string | undefined {
  const state = req.session?.oidc;
  if (req.session?.user === undefined || typeof state?.endSessionUrl !== 'string') return undefined;
  const url = new URL(state.endSessionUrl);
  if (state.idToken) url.searchParams.set('id_token_hint', state.idToken);
  return url.href;
}

/**
 * The RP-initiated logout middleware under a factory name of the caller's (`oidcLogout`, or `oidc` for the
 * router).
 *
 * @example
 * router.post('/logout/corp', createLogout('oidc', corp));
 */
export function createLogout(who: string, provider: OidcProvider, options: OidcLogoutOptions = {}): RequestHandler {
  assertProvider(who, provider);
  checkOptions(who, options as unknown, LOGOUT_OPTIONS);
  const explicitPolicy = options.redirects;

  return async function oidcLogoutMiddleware(req: Request, res: Response, next: NextFunction) {
    try {
      requireSessionSupport(req, who);
      const redirects = redirectPolicyOf(req, explicitPolicy, who);
      const postLogout = provider.postLogoutRedirectUri;
      if (postLogout !== undefined && !redirects.isSafe(postLogout)) {
        throw misconfigured(`${who}: postLogoutRedirectUri "${postLogout}" is not allowed by the redirect policy`);
      }
      const state = req.session.oidc;
      // The ID token goes back only to the provider (name and issuer) that issued it: never hint another issuer.
      const ours = state !== undefined && state.provider === provider.name && state.issuer === provider.issuer;
      if (state !== undefined && !ours) debug('logout through "%s" sends no id_token_hint: the session logged in elsewhere', provider.name);
      const idToken = ours ? state.idToken : undefined;

      await endLocalSession(req, res);

      res.setHeader('Cache-Control', 'no-store');
      // The user is logged out here already; a provider that cannot be reached only loses its own logout.
      const metadata = await provider.metadata().catch(() => undefined);
      if (!metadata?.endSessionEndpoint) {
        res.redirect(303, postLogout ?? redirects.defaultUrl);
        return;
      }
      res.redirect(303, endSessionUrl(metadata.endSessionEndpoint, provider.clientId, postLogout, idToken));
    } catch (error) {
      next(error);
    }
  };
}

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): ends the local shared session first (so a failure
 * at the provider never leaves the user logged in here), then redirects to the provider's `end_session_endpoint`
 * with `id_token_hint` (only when the session logged in through this provider), `client_id` and the
 * `post_logout_redirect_uri` (which must pass the redirect policy), or straight to the post-logout page when the
 * provider has no such endpoint. Mount it on POST. Cross-origin posts are refused by `ssoSession`, where the session
 * cookie authenticates — not by SameSite=Lax, which lets sibling subdomains (same site) post with the cookie.
 *
 * @example
 * app.post('/logout/corp', oidcLogout(corp));
 */
export function oidcLogout(provider: OidcProvider, options: OidcLogoutOptions = {}): RequestHandler {
  return createLogout('oidcLogout', provider, options);
}
