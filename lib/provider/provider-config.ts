import type { Request } from 'express';
import type { ClientMetadata, Configuration, KoaContextWithOIDC } from 'oidc-provider' with { 'resolution-mode': 'import' };
import type * as OidcModule from 'oidc-provider' with { 'resolution-mode': 'import' };
import { extendFormAction } from '../portal/login-page';
import { authenticationOf } from '../session/authentication';
import { backchannelFetch } from './backchannel-fetch';
import { renderLogoutConfirmPage, renderNoticePage } from './provider-pages';
import type { ProviderClient, ResolvedProviderOptions } from './provider-options';
import { INTERACTION_TTL_SECONDS, type ProviderRecords } from './provider-records';
import { storeAdapter } from './store-adapter';
import { HttpError } from '../http/errors';

/** The oidc-provider module, loaded lazily (it is an optional peer dependency and ESM-only). */
export type OidcProviderModule = typeof OidcModule;

function clientMetadata(client: ProviderClient, idTokenAlg: string): ClientMetadata {
  const grants = [...(client.grantTypes ?? ['authorization_code', 'refresh_token'])];
  const interactive = grants.includes('authorization_code');
  return {
    client_id: client.clientId,
    ...(client.clientSecret === undefined
      ? { token_endpoint_auth_method: 'none' }
      : { client_secret: client.clientSecret, token_endpoint_auth_method: 'client_secret_basic' }),
    redirect_uris: [...(client.redirectUris ?? [])],
    post_logout_redirect_uris: [...(client.postLogoutRedirectUris ?? [])],
    grant_types: grants,
    response_types: interactive ? ['code'] : [],
    id_token_signed_response_alg: idTokenAlg as ClientMetadata['id_token_signed_response_alg'],
    ...(client.scopes ? { scope: client.scopes.join(' ') } : {}),
    ...(client.backchannelLogoutUri
      ? { backchannel_logout_uri: client.backchannelLogoutUri, backchannel_logout_session_required: true }
      : {}),
  };
}

/** The portal session's user on the request oidc-provider is serving (Express ran `ssoSession` before it). */
export function portalUserOf(ctx: KoaContextWithOIDC): Request['user'] {
  return (ctx.req as unknown as Request).user;
}

function interactionPolicy(oidc: OidcProviderModule): NonNullable<NonNullable<Configuration['interactions']>['policy']> {
  const { Check, base } = oidc.interactionPolicy;
  const policy = base();
  const login = policy.get('login');
  if (!login) throw new HttpError(500, { code: 'provider_misconfigured', detail: 'openidProvider: oidc-provider has no login prompt' });
  // One session, not two: the provider's own session counts only while it is the portal session's login.
  login.checks.add(
    new Check('portal_session', 'the portal session is not the one the provider remembers', 'login_required', (ctx) => {
      const user = portalUserOf(ctx);
      if (!user) return Check.REQUEST_PROMPT;
      const { session } = ctx.oidc;
      if (session?.accountId !== user.id) return Check.REQUEST_PROMPT;
      return session.authTime() === authenticationOf(user).authTime ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
    }),
    0,
  );
  login.checks.add(
    new Check('acr_values', 'none of the requested ACRs is met', 'login_required', (ctx) => {
      const wanted = ctx.oidc.params?.acr_values;
      if (typeof wanted !== 'string' || wanted === '' || ctx.oidc.result?.login) return Check.NO_NEED_TO_PROMPT;
      return wanted.split(' ').includes(String(ctx.oidc.acr)) ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
    }),
  );
  return policy;
}

/**
 * The oidc-provider configuration of `openidProvider`: the kit's key, store, clients and pages; PKCE S256 for every
 * client; refresh tokens rotated on each use (a reused one revokes its grant); `client_credentials`, introspection,
 * revocation, RP-initiated and back-channel logout; grants loaded per the client's first- or third-party status.
 *
 * @example
 * const provider = new oidc.default(settings.issuer, providerConfiguration(oidc, settings, records));
 */
export function providerConfiguration(
  oidc: OidcProviderModule,
  settings: ResolvedProviderOptions,
  records: ProviderRecords,
): Configuration {
  const { keys, pathPrefix: prefix, assetsPath, lifetimes, thirdParty } = settings;
  const signing = keys.signingKey;
  const jwk = { ...signing.key.export({ format: 'jwk' }), kid: signing.kid, alg: signing.alg, use: 'sig' };
  const serviceScopes = settings.serviceScopes;
  return {
    adapter: storeAdapter(settings.store, (detail) => new oidc.errors.InvalidGrant(detail)),
    clients: settings.clients.map((client) => clientMetadata(client, signing.alg)),
    jwks: { keys: [jwk as never] },
    cookies: { keys: settings.cookieSecrets },
    scopes: ['openid', 'offline_access', 'profile', 'email', ...serviceScopes],
    // acr, amr and auth_time always: relying parties decide on them (step-up, max age) without asking for them.
    claims: {
      acr: null,
      amr: null,
      auth_time: null,
      sid: null,
      openid: ['sub', 'acr', 'amr', 'auth_time'],
      profile: ['name', 'roles'],
      email: ['email', 'email_verified'],
    },
    pkce: { required: () => true },
    acrValues: ['1fa', '2fa', 'phr'],
    routes: {
      authorization: `${prefix}/auth`,
      end_session: `${prefix}/session/end`,
      introspection: `${prefix}/token/introspection`,
      jwks: `${prefix}/jwks`,
      revocation: `${prefix}/token/revocation`,
      token: `${prefix}/token`,
      userinfo: `${prefix}/me`,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // A client learns about its own tokens only; a public client (no secret) about none.
        allowedPolicy: async (_ctx, client, token) => client.clientAuthMethod !== 'none' && token.clientId === client.clientId,
      },
      revocation: { enabled: true },
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: async (ctx, form) => {
          // Confirming redirects to the client's registered post-logout URI: its origin is allowed as a form target.
          const target = ctx.oidc.params?.post_logout_redirect_uri;
          if (typeof target === 'string') extendFormAction(ctx.res, [new URL(target).origin]);
          ctx.type = 'html';
          ctx.body = renderLogoutConfirmPage(assetsPath, form);
        },
        postLogoutSuccessSource: async (ctx) => {
          ctx.type = 'html';
          ctx.body = renderNoticePage(assetsPath, 'Signed out', 'You are signed out of the portal and its apps.');
        },
      },
    },
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      ctx.body = renderNoticePage(assetsPath, 'Sign-in failed', String(out.error_description ?? out.error));
    },
    ttl: {
      AccessToken: lifetimes.accessToken,
      ClientCredentials: lifetimes.accessToken,
      AuthorizationCode: lifetimes.authorizationCode,
      IdToken: lifetimes.idToken,
      RefreshToken: lifetimes.refreshToken,
      Grant: lifetimes.refreshToken,
      Session: settings.sessions.context.absoluteLifetimeSeconds,
      Interaction: INTERACTION_TTL_SECONDS,
    },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    conformIdTokenClaims: true,
    findAccount: async (_ctx, accountId) => {
      const account = await records.account(accountId);
      if (!account) return undefined;
      return { accountId, claims: async () => ({ sub: accountId, ...account }) };
    },
    loadExistingGrant: async (ctx) => {
      const client = ctx.oidc.client;
      const session = ctx.oidc.session;
      if (!client || !session?.accountId) return undefined;
      const { Grant } = ctx.oidc.provider;
      const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId);
      const found = grantId ? await Grant.find(grantId) : undefined;
      const grant =
        found && found.accountId === session.accountId ? found : new Grant({ clientId: client.clientId, accountId: session.accountId });
      const requested = [...(ctx.oidc.requestParamScopes ?? [])];
      // First-party clients need no consent; a third party gets what this user allowed it before, the rest is asked.
      const allowed = thirdParty.has(client.clientId) ? await records.consentedScopes(session.accountId, client.clientId) : requested;
      const scopes = requested.filter((scope) => allowed.includes(scope));
      if (scopes.length > 0) grant.addOIDCScope(scopes.join(' '));
      if (!thirdParty.has(client.clientId)) {
        const claims = ctx.oidc.claims ?? {};
        const names = [...Object.keys(claims.id_token ?? {}), ...Object.keys(claims.userinfo ?? {})];
        if (names.length > 0) grant.addOIDCClaims(names);
      }
      await grant.save();
      return grant;
    },
    interactions: {
      url: async (_ctx, interaction) => `${prefix}/interaction/${interaction.uid}`,
      policy: interactionPolicy(oidc),
    },
    // Browsers may call the token endpoints only from the origin of one of the client's own redirect URIs.
    clientBasedCORS: (_ctx, origin, client) => (client.redirectUris ?? []).some((uri) => new URL(uri).origin === origin),
    enabledJWA: { idTokenSigningAlgValues: [signing.alg] as never },
    // The provider's only outgoing calls go to its clients' back-channel logout endpoints.
    fetch: backchannelFetch(settings.allowPrivateNetworkBackchannel) as Configuration['fetch'],
  };
}
