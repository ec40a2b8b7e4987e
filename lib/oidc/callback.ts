import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ForbiddenError } from '../http/errors';
import type { LoginUser } from '../session/types';
import type { OidcSessionState } from './types';
import { loginRejected, providerMisbehaved } from './errors';
import { IdTokenRejectedError, validateIdToken } from './id-token';
import { OidcProvider } from './provider';
import { OidcGrantError, redeemAuthorizationCode, requestUserinfo } from './token-client';
import { TRANSACTION_TTL_MS, takeTransaction, type OidcTransaction } from './transaction';
import { establishOidcLogin, requireSessionSupport, saveSession } from './session-bridge';

/** Options of {@link oidcCallback}. */
export interface OidcCallbackOptions {
  /**
   * The login route of this provider, offered as "start again" on every error page (`loginUrl` in problem+json).
   * Default `/login/<provider name>`.
   */
  loginPath?: string;
}

// OAuth error codes are ASCII words; anything else from the query is not echoed into a page.
const ERROR_CODE = /^[a-z_]{1,64}$/;

function single(req: Request, name: string): string | undefined {
  const value = req.query[name];
  return typeof value === 'string' ? value : undefined;
}

function buildUser(provider: OidcProvider, claims: Record<string, unknown>, userinfo: Record<string, unknown> | undefined): LoginUser {
  const profile = provider.claimsToUser(claims, userinfo);
  if (
    !profile ||
    'id' in profile ||
    typeof profile.name !== 'string' ||
    !Array.isArray(profile.roles) ||
    !profile.roles.every((role) => typeof role === 'string')
  ) {
    throw new TypeError(
      `oidcProvider "${provider.name}": claimsToUser must return { name: string, roles: string[] } (no id: the identity is (issuer, sub); map it to a local account with ssoSession({ linkAccount }))`,
    );
  }
  const sid = typeof claims.sid === 'string' ? claims.sid : undefined;
  const authTime = typeof claims.auth_time === 'number' && Number.isFinite(claims.auth_time) ? claims.auth_time * 1000 : undefined;
  return {
    // The identity is (issuer, sub): another provider's user with the same sub is someone else.
    source: `oidc:${provider.issuer}`,
    subject: String(claims.sub),
    name: profile.name,
    roles: [...profile.roles],
    method: 'oidc',
    ...(authTime === undefined ? {} : { authenticatedAt: authTime }),
    attributes: {
      ...profile.attributes,
      provider: provider.name,
      issuer: provider.issuer,
      subject: String(claims.sub),
      ...(sid ? { sid } : {}),
    },
  };
}

/**
 * Finishes an OpenID Connect login at the redirect URI: takes the transaction of the returned `state` out of the
 * session (single use, constant-time comparison), checks the RFC 9207 `iss` parameter, exchanges the code (with
 * the PKCE verifier), validates the ID token (OIDC Core §3.1.3.7), optionally reads userinfo, then logs the
 * browser in through `establishLogin` (new session id) with tags for back-channel logout, keeps the tokens in
 * `req.session.oidc` (server side only) and redirects to the transaction's `return_to`. Every refusal is passed to
 * `next(err)`: 400/403 for what the browser brought back, 502/503 when the provider misbehaves or is down; no
 * user is logged in by a refused callback.
 *
 * @example
 * app.get('/callback/corp', oidcCallback(corp));
 */
export function oidcCallback(provider: OidcProvider, options: OidcCallbackOptions = {}): RequestHandler {
  if (!(provider instanceof OidcProvider)) {
    if (provider && typeof provider === 'object' && 'method' in provider && 'headers' in provider) {
      throw new TypeError('oidcCallback: call the factory with a provider: app.get("/callback/corp", oidcCallback(corp))');
    }
    throw new TypeError('oidcCallback: the first argument must be a provider from oidcProvider({ … })');
  }
  if (options === null || typeof options !== 'object') throw new TypeError('oidcCallback: options must be an object');
  const loginUrl = options.loginPath ?? `/login/${provider.name}`;
  if (typeof loginUrl !== 'string' || !/^\/(?!\/)[\x21-\x7e]*$/.test(loginUrl)) {
    throw new TypeError(`oidcCallback: loginPath must be a path like "/login/${provider.name}", got ${JSON.stringify(options.loginPath)}`);
  }

  /** Removes and returns the transaction of `state`, saving the session at once so a replay finds nothing. */
  async function consumeTransaction(req: Request, state: string | undefined): Promise<OidcTransaction | undefined> {
    if (state === undefined || state.length === 0 || state.length > 512) return undefined;
    const { transaction, remaining } = takeTransaction(req.session.oidcTransactions, state);
    if (!transaction) return undefined;
    req.session.oidcTransactions = remaining;
    await saveSession(req);
    return transaction;
  }

  return async function oidcCallbackMiddleware(req: Request, res: Response, next: NextFunction) {
    try {
      requireSessionSupport(req, 'oidcCallback');
      const metadata = await provider.metadata();
      const state = single(req, 'state');
      const transaction = await consumeTransaction(req, state);

      const providerError = single(req, 'error');
      if (providerError !== undefined) {
        const code = ERROR_CODE.test(providerError) ? providerError : 'login_failed';
        const detail = `The identity provider "${provider.name}" did not log you in (${code}).`;
        if (code === 'access_denied') {
          throw new ForbiddenError({
            code: 'oidc_access_denied',
            detail: `${detail} Start again at ${loginUrl}.`,
            extensions: { loginUrl },
          });
        }
        throw loginRejected(`oidc_${code}`, detail, loginUrl);
      }
      if (!transaction) {
        throw loginRejected(
          'invalid_state',
          'This login response does not belong to a login started in this browser, or it was already used.',
          loginUrl,
        );
      }
      if (Date.now() - transaction.createdAt > TRANSACTION_TTL_MS)
        throw loginRejected('login_expired', 'The login took too long.', loginUrl);
      if (transaction.provider !== provider.name)
        throw loginRejected('invalid_state', 'This login was started with another provider.', loginUrl);

      // RFC 9207: the `iss` parameter tells which provider answered, defeating mix-up attacks.
      const iss = single(req, 'iss');
      if (iss !== undefined ? iss !== metadata.issuer : metadata.issParameterSupported) {
        throw loginRejected('invalid_issuer', 'The login response came from an unexpected issuer.', loginUrl);
      }
      const code = single(req, 'code');
      if (!code || code.length > 2048)
        throw loginRejected('invalid_request', 'The login response carries no authorization code.', loginUrl);

      let tokens;
      try {
        tokens = await redeemAuthorizationCode(provider, { code, codeVerifier: transaction.codeVerifier });
      } catch (error) {
        if (error instanceof OidcGrantError) {
          throw loginRejected(
            'invalid_grant',
            'The identity provider refused the authorization code (used, expired or not ours).',
            loginUrl,
            error,
          );
        }
        throw error;
      }

      let claims: Record<string, unknown>;
      try {
        claims = await validateIdToken(provider, tokens.idToken as string, {
          nonce: transaction.nonce,
          ...(transaction.maxAge === undefined ? {} : { maxAge: transaction.maxAge }),
        });
      } catch (error) {
        if (error instanceof IdTokenRejectedError) {
          throw loginRejected('invalid_id_token', `The identity provider's ID token was refused: ${error.reason}.`, loginUrl, error);
        }
        throw error;
      }

      let userinfo: Record<string, unknown> | undefined;
      if (provider.fetchUserinfo) {
        userinfo = await requestUserinfo(provider, tokens.accessToken);
        // OIDC Core §5.3.4: a userinfo answer about another subject must not be used (token substitution).
        if (userinfo.sub !== claims.sub) throw providerMisbehaved(provider.name, 'userinfo sub differs from the ID token sub');
      }

      const user = buildUser(provider, claims, userinfo);
      const sub = String(claims.sub);
      const sid = typeof claims.sid === 'string' ? claims.sid : undefined;
      const tags = [`oidc-sub:${metadata.issuer}|${sub}`, ...(sid ? [`oidc-sid:${metadata.issuer}|${sid}`] : [])];
      const oidc: OidcSessionState = {
        provider: provider.name,
        idToken: tokens.idToken as string,
        accessToken: tokens.accessToken,
        ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
        ...(tokens.expiresAt ? { expiresAt: tokens.expiresAt } : {}),
        ...(sid ? { sid } : {}),
      };
      await establishOidcLogin(req, user, tags, oidc);

      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, transaction.returnTo);
    } catch (error) {
      next(error);
    }
  };
}
