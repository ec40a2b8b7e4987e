import type { ClientMetadata } from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { ProviderClient, ResolvedProviderOptions } from './provider-options';

/** The OpenID Connect scopes every interactive client may ask for. */
export const OPENID_SCOPES: readonly string[] = ['openid', 'offline_access', 'profile', 'email'];

/** Algorithms a client may sign its `private_key_jwt` assertion with: asymmetric only (a shared secret is not a key). */
export const CLIENT_ASSERTION_ALGORITHMS = ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA', 'Ed25519'] as const;

/** How the client proves who it is at the token, PAR, introspection and revocation endpoints. */
export function authenticationOf(client: ProviderClient): Omit<ClientMetadata, 'client_id'> {
  // A copy made of plain JSON: oidc-provider accepts only plain objects as keys, and the caller's stay the caller's.
  if (client.jwks !== undefined)
    return { token_endpoint_auth_method: 'private_key_jwt', jwks: JSON.parse(JSON.stringify(client.jwks)) as ClientMetadata['jwks'] };
  if (client.jwksUri !== undefined) return { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: client.jwksUri };
  if (client.clientSecret !== undefined) return { client_secret: client.clientSecret, token_endpoint_auth_method: 'client_secret_basic' };
  return { token_endpoint_auth_method: 'none' };
}

/**
 * Whether the user is asked to consent at every authorization request of this client, the consent never
 * remembered (ASVS 10.7.1): a third-party public client (`token_endpoint_auth_method` `none`), whose identity the
 * provider cannot vouch for, since any app can send its client id and redirect URI. A confidential third party's
 * consent is remembered per scope; a first-party client is not asked.
 *
 * @example
 * asksConsentEveryTime({ clientId: 'partner-spa', thirdParty: true, redirectUris }); // true
 */
export function asksConsentEveryTime(client: ProviderClient | undefined): boolean {
  return client?.thirdParty === true && authenticationOf(client).token_endpoint_auth_method === 'none';
}

/**
 * The scopes a client may obtain, whatever it asks for: an interactive client the OpenID scopes and its resource
 * scopes, a service its own `scopes`. oidc-provider refuses any other scope it knows (`invalid_scope`).
 */
export function allowedScopesOf(client: ProviderClient): string[] {
  const grants = client.grantTypes ?? ['authorization_code', 'refresh_token'];
  const own = [...(client.scopes ?? [])];
  return grants.includes('authorization_code') ? [...OPENID_SCOPES, ...own] : own;
}

/**
 * oidc-provider's metadata for one registered client: its grants, its authentication, its one response mode, its
 * scope allowlist, and whether it must push its authorization requests and bind its tokens with DPoP.
 *
 * @example
 * const clients = settings.clients.map((client) => clientMetadata(client, settings, 'ES256'));
 */
export function clientMetadata(client: ProviderClient, settings: ResolvedProviderOptions, idTokenAlg: string): ClientMetadata {
  const grants = [...(client.grantTypes ?? ['authorization_code', 'refresh_token'])];
  const interactive = grants.includes('authorization_code');
  // oidc-provider's allowlist holds the scopes it knows (OpenID and service scopes); resource scopes are allowed per
  // resource (getResourceServerInfo).
  const scopes = allowedScopesOf(client).filter((scope) => OPENID_SCOPES.includes(scope) || settings.serviceScopes.includes(scope));
  const dpop = settings.dpop === 'required' ? 'required' : (client.dpop ?? 'allowed');
  return {
    client_id: client.clientId,
    ...authenticationOf(client),
    redirect_uris: [...(client.redirectUris ?? [])],
    post_logout_redirect_uris: [...(client.postLogoutRedirectUris ?? [])],
    grant_types: grants,
    response_types: interactive ? ['code'] : [],
    ...(interactive ? { response_modes: [client.responseMode ?? 'query'] } : {}),
    id_token_signed_response_alg: idTokenAlg as ClientMetadata['id_token_signed_response_alg'],
    // Always an allowlist: without one oidc-provider lets a client ask for every scope it knows.
    scope: scopes.join(' '),
    require_pushed_authorization_requests:
      settings.requirePushedAuthorizationRequests || client.requirePushedAuthorizationRequests === true,
    dpop_bound_access_tokens: dpop === 'required',
    ...(client.backchannelLogoutUri
      ? { backchannel_logout_uri: client.backchannelLogoutUri, backchannel_logout_session_required: true }
      : {}),
  };
}
