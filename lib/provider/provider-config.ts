import type { Request } from 'express';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider' with { 'resolution-mode': 'import' };
import type * as OidcModule from 'oidc-provider' with { 'resolution-mode': 'import' };
import { extendFormAction } from '../portal/login-page';
import { authenticationOf } from '../session/authentication';
import { backchannelFetch } from './backchannel-fetch';
import { renderLogoutConfirmPage, renderNoticePage } from './provider-pages';
import { asksConsentEveryTime, clientMetadata, OPENID_SCOPES } from './client-metadata';
import { levelThreeAlgorithms, levelThreeFeatures } from './provider-features';
import type { ResolvedProviderOptions } from './provider-options';
import { INTERACTION_TTL_SECONDS, type ProviderRecords } from './provider-records';
import { storeAdapter } from './store-adapter';
import { HttpError } from '../http/errors';

/** The oidc-provider module, loaded lazily (it is an optional peer dependency and ESM-only). */
export type OidcProviderModule = typeof OidcModule;

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
 * The oidc-provider configuration of `openidProvider`: the kit's key, store, clients and pages; the code flow only,
 * PKCE S256 for every client, `client_secret_basic` for confidential ones; refresh tokens rotated on each use (a reused one revokes its grant, and none outlives the first of its grant); `client_credentials`, introspection,
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
    clients: settings.clients.map((client) => clientMetadata(client, settings, signing.alg)),
    jwks: { keys: [jwk as never] },
    cookies: { keys: settings.cookieSecrets },
    // An API's scopes are not listed: they belong to its resource indicator, where getResourceServerInfo allows a client
    // only those of its own `scopes`.
    scopes: [...OPENID_SCOPES, ...serviceScopes],
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
    // The code flow only (no implicit or hybrid: no token in a URL), and a confidential client's secret only in the
    // Basic header (RFC 6749 §2.3.1), never in a form body a proxy or a log might keep: discovery publishes exactly
    // these, and a request of another kind is refused (unsupported_response_type, invalid_client).
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_basic', 'private_key_jwt', 'none'],
    acrValues: ['1fa', '2fa', 'phr'],
    routes: {
      authorization: `${prefix}/auth`,
      end_session: `${prefix}/session/end`,
      introspection: `${prefix}/token/introspection`,
      jwks: `${prefix}/jwks`,
      pushed_authorization_request: `${prefix}/request`,
      revocation: `${prefix}/token/revocation`,
      token: `${prefix}/token`,
      userinfo: `${prefix}/me`,
    },
    features: {
      // DPoP, PAR, resource indicators and FAPI 2.0: typed loosely by oidc-provider's types (a union per feature).
      ...(levelThreeFeatures(settings, (detail) => new oidc.errors.InvalidTarget(detail)) as object),
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
      // A rotated refresh token lives only as long as the one it replaces had left (ASVS 5.0 10.4.8): rotation
      // never slides a grant's refresh past the expiry of its first token.
      RefreshToken: (ctx) => ctx?.oidc?.entities.RotatedRefreshToken?.remainingTTL ?? lifetimes.refreshToken,
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
      // A third-party public client (no client authentication) cannot prove it is the client the user allowed: any
      // app can send its client id and a registered redirect URI it does not own (on a device, a claimed custom
      // scheme). Its consent is asked at every authorization request and never remembered (ASVS 10.7.1): only the
      // consent given in this request's own interaction counts, not an earlier grant of the session.
      const asksEveryTime = asksConsentEveryTime(settings.clients.find((candidate) => candidate.clientId === client.clientId));
      const givenNow = ctx.oidc.result?.consent?.grantId;
      const grantId = asksEveryTime ? givenNow : (givenNow ?? session.grantIdFor(client.clientId));
      const found = grantId ? await Grant.find(grantId) : undefined;
      const own = found && found.accountId === session.accountId && found.clientId === client.clientId ? found : undefined;
      const grant = own ?? new Grant({ clientId: client.clientId, accountId: session.accountId });
      const requested = [...(ctx.oidc.requestParamScopes ?? [])];
      // First-party clients need no consent; a third party gets what this user allowed it before (a public one: in
      // this request), the rest is asked.
      const allowed = !thirdParty.has(client.clientId)
        ? requested
        : asksEveryTime
          ? (own?.getOIDCScope() ?? '').split(' ').filter(Boolean)
          : await records.consentedScopes(session.accountId, client.clientId);
      const scopes = requested.filter((scope) => allowed.includes(scope));
      const openidScopes = scopes.filter((scope) => OPENID_SCOPES.includes(scope) || serviceScopes.includes(scope));
      if (openidScopes.length > 0) grant.addOIDCScope(openidScopes.join(' '));
      // An API's scopes go to its resource, as far as the client may hold them (getResourceServerInfo narrowed them).
      for (const [indicator, server] of Object.entries(ctx.oidc.resourceServers ?? {})) {
        const granted = scopes.filter((scope) => (server.scope ?? '').split(' ').includes(scope));
        if (granted.length > 0) grant.addResourceScope(indicator, granted.join(' '));
      }
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
    enabledJWA: { idTokenSigningAlgValues: [signing.alg] as never, ...levelThreeAlgorithms() },
    // The provider's only outgoing calls go to its clients' back-channel logout endpoints and jwks_uri.
    fetch: backchannelFetch(settings.allowPrivateNetworkBackchannel) as Configuration['fetch'],
  };
}
