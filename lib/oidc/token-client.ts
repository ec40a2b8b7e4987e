import { asObject, requestJson } from './http-client';
import { providerMisbehaved } from './errors';
import type { OidcProvider } from './provider';

/** A token-endpoint answer after its shape was checked. */
export interface TokenSet {
  accessToken: string;
  tokenType: string;
  idToken?: string;
  refreshToken?: string;
  /** Epoch seconds when the access token expires, when the provider said so. */
  expiresAt?: number;
  scope?: string;
}

/**
 * The provider refused the grant with an OAuth error (`invalid_grant` for a used, expired or stolen code or a
 * revoked refresh token). Callers map it to our own answer: 400 `invalid_grant` at the callback, 401
 * `oidc_refresh_refused` on refresh. `providerStatus` is the token endpoint's HTTP status, not ours, so the error
 * carries no `status` an error handler could mistake for the answer.
 */
export class OidcGrantError extends Error {
  override readonly name = 'OidcGrantError';
  readonly code = 'oidc_grant_refused';
  constructor(
    /** The OAuth `error` of the token endpoint's answer, e.g. `invalid_grant`. */
    readonly error: string,
    /** The HTTP status the token endpoint answered with. */
    readonly providerStatus: number,
  ) {
    super(`the token endpoint refused the grant: ${error}`);
  }
}

async function tokenRequest(provider: OidcProvider, params: Record<string, string>, what: string): Promise<TokenSet> {
  const { tokenEndpoint } = await provider.metadata();
  const auth = provider.clientAuthentication();
  const { status, body } = await requestJson(
    tokenEndpoint,
    {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...auth.headers },
      body: new URLSearchParams({ ...params, ...auth.body }).toString(),
    },
    { provider: provider.name, what, timeoutMs: provider.timeoutMs },
  );
  const answer = asObject(body);
  if (status === 400 && answer && (answer.error === 'invalid_grant' || answer.error === 'invalid_request')) {
    throw new OidcGrantError(String(answer.error), status);
  }
  if (status !== 200 || !answer) throw providerMisbehaved(provider.name, `${what} answered ${status}`);
  const { access_token: accessToken, token_type: tokenType, id_token: idToken, refresh_token: refreshToken } = answer;
  if (typeof accessToken !== 'string' || accessToken.length === 0) throw providerMisbehaved(provider.name, `${what} sent no access_token`);
  if (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer') {
    throw providerMisbehaved(provider.name, `${what} sent token_type ${JSON.stringify(tokenType)}, expected Bearer`);
  }
  if (idToken !== undefined && typeof idToken !== 'string') throw providerMisbehaved(provider.name, `${what} sent a malformed id_token`);
  if (refreshToken !== undefined && typeof refreshToken !== 'string')
    throw providerMisbehaved(provider.name, `${what} sent a malformed refresh_token`);
  const expiresIn = Number(answer.expires_in);
  return {
    accessToken,
    tokenType,
    ...(idToken ? { idToken } : {}),
    ...(refreshToken ? { refreshToken } : {}),
    ...(answer.expires_in !== undefined && Number.isFinite(expiresIn) && expiresIn > 0
      ? { expiresAt: Math.floor(Date.now() / 1000) + Math.floor(expiresIn) }
      : {}),
    ...(typeof answer.scope === 'string' ? { scope: answer.scope } : {}),
  };
}

/**
 * Exchanges an authorization code at the token endpoint (OIDC Core §3.1.3.1, RFC 7636): POST, form-encoded,
 * client authentication, the PKCE verifier, and the same redirect_uri as the authorization request.
 *
 * @example
 * const tokens = await redeemAuthorizationCode(corp, { code, codeVerifier });
 */
export async function redeemAuthorizationCode(provider: OidcProvider, input: { code: string; codeVerifier: string }): Promise<TokenSet> {
  const tokens = await tokenRequest(
    provider,
    { grant_type: 'authorization_code', code: input.code, redirect_uri: provider.redirectUri, code_verifier: input.codeVerifier },
    'token endpoint',
  );
  if (!tokens.idToken) throw providerMisbehaved(provider.name, 'token endpoint sent no id_token');
  return tokens;
}

/**
 * Uses a refresh token (RFC 6749 §6). The answer may omit `refresh_token`; the caller keeps the old one then.
 *
 * @example
 * const tokens = await refreshTokenGrant(corp, session.oidc.refreshToken);
 */
export function refreshTokenGrant(provider: OidcProvider, refreshToken: string): Promise<TokenSet> {
  return tokenRequest(provider, { grant_type: 'refresh_token', refresh_token: refreshToken }, 'refresh');
}

/**
 * Reads the userinfo endpoint with the access token in the Authorization header (never in the URL).
 *
 * @example
 * const claims = await requestUserinfo(corp, tokens.accessToken);
 */
export async function requestUserinfo(provider: OidcProvider, accessToken: string): Promise<Record<string, unknown>> {
  const { userinfoEndpoint } = await provider.metadata();
  if (!userinfoEndpoint) throw providerMisbehaved(provider.name, 'the provider has no userinfo endpoint');
  const { status, body } = await requestJson(
    userinfoEndpoint,
    { method: 'GET', headers: { Authorization: `Bearer ${accessToken}` } },
    { provider: provider.name, what: 'userinfo', timeoutMs: provider.timeoutMs },
  );
  const claims = asObject(body);
  if (status !== 200 || !claims) throw providerMisbehaved(provider.name, `userinfo answered ${status}`);
  return claims;
}
