import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { eventsFor } from '../events/event-source';
import { signInAttempt } from '../events/sign-in-attempt';
import type { SecurityEvents } from '../events/security-events';
import type { SecurityEventReason } from '../events/vocabulary';
import { ForbiddenError, HttpError } from '../http/errors';
import { debugChannel } from '../util/debug';
import { checkOptions, type OptionSchema } from '../util/options';
import type { OidcSessionState } from './types';
import { loginRejected, providerMisbehaved } from './errors';
import { IdTokenRejectedError, validateIdToken } from './id-token';
import { assertProvider, type OidcProvider, type OidcProviderMetadata } from './provider';
import { OidcGrantError, redeemAuthorizationCode, requestUserinfo, type TokenSet } from './token-client';
import { TRANSACTION_TTL_MS, takeTransaction, type OidcTransaction } from './transaction';
import { establishOidcLogin, requireSessionSupport, saveSession } from './session-bridge';
import { loginUserOf } from './callback-user';
import { loginTags } from './session-tags';
import { endSessionUrl } from './logout';

/** Options of {@link oidcCallback}. */
export interface OidcCallbackOptions {
  /**
   * The login route of this provider, offered as "start again" on every error page (`loginUrl` in problem+json).
   * Default `/login/<provider name>`.
   */
  loginPath?: string;
}

const debug = debugChannel('oidc');
// OAuth error codes are ASCII words; anything else from the query is not echoed into a page.
const ERROR_CODE = /^[a-z_]{1,64}$/;
const PATH = /^\/(?!\/)[\x21-\x7e]*$/;

const CALLBACK_OPTIONS: OptionSchema = {
  loginPath: {
    type: 'string',
    expected: 'a path like "/login/corp"',
    check: (value: string) => (PATH.test(value) ? undefined : `must be a path like "/login/corp", got "${value}"`),
  },
};

// The sign-in failure each refusal of the callback is recorded as.
const FAILURES: Readonly<Record<string, SecurityEventReason<'signin.failed'>>> = {
  invalid_state: 'state_mismatch',
  login_expired: 'login_expired',
  invalid_issuer: 'invalid_issuer',
  invalid_request: 'invalid_request',
  invalid_grant: 'invalid_grant',
  invalid_id_token: 'invalid_id_token',
  oidc_access_denied: 'provider_denied',
  account_not_linked: 'account_not_linked',
  idp_bad_response: 'provider_misbehaved',
  // The provider did not answer: the person could not sign in, and the outage shows on their account and in the counts.
  idp_unavailable: 'provider_unavailable',
};

/** The reason a refused callback is recorded with; undefined for outages and faults (the error handler records those). */
function failureReason(error: unknown): SecurityEventReason<'signin.failed'> | undefined {
  if (!(error instanceof HttpError)) return undefined;
  const known = FAILURES[error.code];
  if (known !== undefined) return known;
  return error.status < 500 && error.code.startsWith('oidc_') ? 'provider_error' : undefined;
}

function single(req: Request, name: string): string | undefined {
  const value = req.query[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The callback's middleware under a factory name of the caller's (`oidcCallback`, or `oidc` for the router).
 *
 * @example
 * router.get('/callback/corp', createCallback('oidc', corp, { loginPath: '/login/corp' }));
 */
export function createCallback(
  who: string,
  provider: OidcProvider,
  options: OidcCallbackOptions = {},
  ownEvents?: SecurityEvents,
): RequestHandler {
  assertProvider(who, provider);
  checkOptions(who, options as unknown, CALLBACK_OPTIONS);
  const loginUrl = options.loginPath ?? `/login/${provider.name}`;

  /** Logs why the callback refused (never the state, code or a token) and builds the 4xx. */
  function refuse(code: string, detail: string, reason: string, cause?: unknown): HttpError {
    debug('callback of provider "%s" refused (%s): %s', provider.name, code, reason);
    return loginRejected(code, detail, loginUrl, cause);
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

  /** Everything the browser brought back, checked before the provider is called. Returns the code. */
  function checkResponse(req: Request, metadata: OidcProviderMetadata, transaction: OidcTransaction | undefined): string {
    const providerError = single(req, 'error');
    if (providerError !== undefined) {
      const code = ERROR_CODE.test(providerError) ? providerError : 'login_failed';
      const detail = `The identity provider "${provider.name}" did not log you in (${code}).`;
      debug('callback of provider "%s": the provider answered error=%s', provider.name, code);
      if (code === 'access_denied') {
        throw new ForbiddenError({ code: 'oidc_access_denied', detail: `${detail} Start again at ${loginUrl}.`, extensions: { loginUrl } });
      }
      throw loginRejected(`oidc_${code}`, detail, loginUrl);
    }
    const why = 'This login response does not belong to a login started in this browser, or it was already used.';
    if (!transaction) throw refuse('invalid_state', why, 'no login transaction of this browser has this state');
    if (Date.now() - transaction.createdAt > TRANSACTION_TTL_MS)
      throw refuse('login_expired', 'The login took too long.', 'the transaction is older than 10 minutes');
    if (transaction.provider !== provider.name)
      throw refuse(
        'invalid_state',
        'This login was started with another provider.',
        `the login was started with "${transaction.provider}"`,
      );
    // RFC 9207: the `iss` parameter tells which provider answered, defeating mix-up attacks.
    const iss = single(req, 'iss');
    if (iss !== undefined ? iss !== metadata.issuer : metadata.issParameterSupported) {
      throw refuse(
        'invalid_issuer',
        'The login response came from an unexpected issuer.',
        iss === undefined ? 'iss is missing' : 'iss is another issuer',
      );
    }
    const code = single(req, 'code');
    if (!code || code.length > 2048)
      throw refuse('invalid_request', 'The login response carries no authorization code.', 'code is missing or too long');
    return code;
  }

  async function exchange(code: string, transaction: OidcTransaction): Promise<{ tokens: TokenSet; claims: Record<string, unknown> }> {
    let tokens: TokenSet;
    try {
      tokens = await redeemAuthorizationCode(provider, { code, codeVerifier: transaction.codeVerifier });
    } catch (error) {
      if (!(error instanceof OidcGrantError)) throw error;
      throw refuse(
        'invalid_grant',
        'The identity provider refused the authorization code (used, expired or not ours).',
        `the token endpoint answered ${error.error}`,
        error,
      );
    }
    try {
      const claims = await validateIdToken(provider, tokens.idToken as string, {
        nonce: transaction.nonce,
        ...(transaction.maxAge === undefined ? {} : { maxAgeSeconds: transaction.maxAge }),
        ...(transaction.acrValues === undefined ? {} : { acrValues: transaction.acrValues }),
      });
      return { tokens, claims };
    } catch (error) {
      if (!(error instanceof IdTokenRejectedError)) throw error;
      throw refuse('invalid_id_token', `The identity provider's ID token was refused: ${error.reason}.`, error.reason, error);
    }
  }

  /** The provider's end-session URL for this client, kept with the login so any app's sign-out can use it. */
  function endSessionOf(req: Request, metadata: OidcProviderMetadata): Pick<OidcSessionState, 'endSessionUrl'> {
    if (metadata.endSessionEndpoint === undefined) return {};
    const postLogout = provider.postLogoutRedirectUri;
    // The same rule as oidcLogout: the provider sends the browser back only where the redirect policy allows.
    const back = postLogout !== undefined && req.sso?.redirects.isSafe(postLogout) === true ? postLogout : undefined;
    return { endSessionUrl: endSessionUrl(metadata.endSessionEndpoint, provider.clientId, back) };
  }

  return async function oidcCallbackMiddleware(req: Request, res: Response, next: NextFunction) {
    const attempt = signInAttempt(req, eventsFor(req, ownEvents), 'oidc', { provider: provider.name });
    try {
      requireSessionSupport(req, who);
      const metadata = await provider.metadata();
      const transaction = await consumeTransaction(req, single(req, 'state'));
      const code = checkResponse(req, metadata, transaction);
      const { tokens, claims } = await exchange(code, transaction as OidcTransaction);

      let userinfo: Record<string, unknown> | undefined;
      if (provider.fetchUserinfo) {
        userinfo = await requestUserinfo(provider, tokens.accessToken);
        // OIDC Core §5.3.4: a userinfo answer about another subject must not be used (token substitution).
        if (userinfo.sub !== claims.sub) {
          debug('callback of provider "%s" refused: userinfo is about another subject', provider.name);
          throw providerMisbehaved(provider.name, 'userinfo sub differs from the ID token sub');
        }
      }

      const user = loginUserOf(provider, claims, userinfo);
      const sid = typeof claims.sid === 'string' ? claims.sid : undefined;
      const oidc: OidcSessionState = {
        provider: provider.name,
        issuer: provider.issuer,
        idToken: tokens.idToken as string,
        accessToken: tokens.accessToken,
        ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
        ...(tokens.expiresAt ? { expiresAt: tokens.expiresAt } : {}),
        ...(sid ? { sid } : {}),
        ...endSessionOf(req, metadata),
      };
      await establishOidcLogin(req, user, loginTags(provider.issuer, user.subject, sid), oidc);
      attempt.succeeded();

      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, (transaction as OidcTransaction).returnTo);
    } catch (error) {
      attempt.failed(failureReason(error));
      next(error);
    }
  };
}

/**
 * Finishes an OpenID Connect login at the redirect URI: takes the transaction of the returned `state` out of the
 * session (single use, constant-time comparison), checks the RFC 9207 `iss` parameter, exchanges the code (with
 * the PKCE verifier), validates the ID token (OIDC Core §3.1.3.7), optionally reads userinfo, then logs the
 * browser in through `establishLogin` (new session id) as the identity `oidc:<issuer>|<sub>`, with issuer-scoped
 * tags for back-channel logout, keeps the tokens in `req.session.oidc` (server side only) and redirects to the
 * transaction's `return_to`. Every refusal is passed to `next(err)`: 400/403 for what the browser brought back,
 * 502/503 when the provider misbehaves or is down; no user is logged in by a refused callback.
 *
 * @example
 * app.get('/callback/corp', oidcCallback(corp));
 */
export function oidcCallback(provider: OidcProvider, options: OidcCallbackOptions = {}): RequestHandler {
  return createCallback('oidcCallback', provider, options);
}
