import { asObject, requestJson } from './http-client';
import { providerMisbehaved } from './errors';
import { defaultClaimsToUser, rolesFromClaims, type ClaimsToUser } from './claims';
import { checkProviderUrl, resolveProviderOptions, type OidcProviderOptions } from './provider-options';
import type { KeyValueStore } from '../store/port';
import { debugChannel } from '../util/debug';
import { OptionsError } from '../util/options';

export type { OidcEndpoints, OidcProviderOptions } from './provider-options';

const debug = debugChannel('oidc');

/** The provider's endpoints and capabilities as the relying party uses them. */
export interface OidcProviderMetadata {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
  userinfoEndpoint?: string;
  endSessionEndpoint?: string;
  /** RFC 9207: when true, an authorization response without `iss` is refused. */
  issParameterSupported: boolean;
}

/**
 * The claims mapping of a provider: the app's own `claimsToUser` as given (its code decides roles), or the default
 * one with roles only from `rolesClaim` — a provider not trusted for roles grants none, whatever its tokens say.
 */
function effectiveClaimsMapping(name: string, custom: ClaimsToUser | undefined, rolesClaim: readonly string[] | undefined): ClaimsToUser {
  if (custom) return custom;
  return function claimsToUserWithTrustedRoles(claims, userinfo) {
    const profile = defaultClaimsToUser(claims, userinfo);
    if (rolesClaim) return { ...profile, roles: rolesFromClaims(claims, rolesClaim, userinfo) };
    if (claims.roles !== undefined || userinfo?.roles !== undefined) {
      debug('provider "%s": roles claim ignored, the provider is not trusted for roles (set rolesClaim to trust it)', name);
    }
    return profile;
  };
}

/**
 * A configured OpenID provider. Create it with {@link oidcProvider} (or the `oidc()` router); pass it to
 * `oidcLogin`, `oidcCallback`, `oidcContext`, `oidcLogout` and `backchannelLogout`.
 */
export class OidcProvider {
  readonly name: string;
  /** The issuer identifier; logins through this provider are the identities `oidc:<issuer>|<sub>`. */
  readonly issuer: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope: string;
  readonly idTokenSigningAlg: string;
  readonly clockToleranceSeconds: number;
  readonly timeoutSeconds: number;
  /** @internal `timeoutSeconds` in milliseconds, for fetch deadlines. */
  readonly timeoutMs: number;
  readonly fetchUserinfo: boolean;
  readonly postLogoutRedirectUri: string | undefined;
  /** The mapping of verified claims to the session user's name, roles and attributes. */
  readonly claimsToUser: ClaimsToUser;
  /** The claim path roles are read from when the provider is trusted for roles; undefined when it is not. */
  readonly rolesClaim: readonly string[] | undefined;
  /** Whether the ID token's `acr` and `amr` are believed (see `trustAuthenticationClaims`). */
  readonly trustAuthenticationClaims: boolean;
  /** @internal Whether logout tokens without `typ` `logout+jwt` are accepted. */
  readonly allowUntypedLogoutTokens: boolean;
  /** @internal How old a logout token may be, in seconds. */
  readonly logoutTokenMaxAgeSeconds: number;
  /** @internal Whether `allowInsecureLocalDevelopment` was given, so the provider's own URLs may be http. */
  readonly insecureHttp: boolean;
  readonly store: KeyValueStore | undefined;
  // A private field, so logging the provider object never prints the client secret.
  readonly #clientAuth: { headers: Record<string, string>; body: Record<string, string> };
  private readonly explicit: OidcProviderMetadata | undefined;
  private readonly discoveryCacheMs: number;
  private cached: { metadata: OidcProviderMetadata; until: number } | undefined;
  private inflight: Promise<OidcProviderMetadata> | undefined;

  /** @internal Use {@link oidcProvider}; `who` names the factory in option errors. */
  constructor(options: OidcProviderOptions, who = 'oidcProvider') {
    const resolved = resolveProviderOptions(who, options);
    this.name = resolved.name;
    this.issuer = resolved.issuer;
    this.clientId = resolved.clientId;
    this.redirectUri = resolved.redirectUri;
    this.scope = resolved.scope;
    this.idTokenSigningAlg = resolved.idTokenSigningAlg;
    this.clockToleranceSeconds = resolved.clockToleranceSeconds;
    this.timeoutSeconds = resolved.timeoutSeconds;
    this.timeoutMs = Math.ceil(resolved.timeoutSeconds * 1000);
    this.fetchUserinfo = resolved.fetchUserinfo;
    this.postLogoutRedirectUri = resolved.postLogoutRedirectUri;
    this.rolesClaim = resolved.rolesClaim;
    this.trustAuthenticationClaims = resolved.trustAuthenticationClaims;
    this.allowUntypedLogoutTokens = resolved.allowUntypedLogoutTokens;
    this.logoutTokenMaxAgeSeconds = resolved.logoutTokenMaxAgeSeconds;
    this.claimsToUser = effectiveClaimsMapping(resolved.name, resolved.claimsToUser, resolved.rolesClaim);
    this.insecureHttp = resolved.insecureHttp;
    this.store = resolved.store;
    this.discoveryCacheMs = resolved.discoveryCacheLifetimeSeconds * 1000;

    if (resolved.tokenEndpointAuthMethod === 'client_secret_basic') {
      // RFC 6749 §2.3.1: id and secret are form-urlencoded before Base64.
      const credentials = `${encodeURIComponent(resolved.clientId)}:${encodeURIComponent(resolved.clientSecret)}`;
      this.#clientAuth = { headers: { Authorization: `Basic ${Buffer.from(credentials).toString('base64')}` }, body: {} };
    } else {
      this.#clientAuth = { headers: {}, body: { client_id: resolved.clientId, client_secret: resolved.clientSecret } };
    }

    const endpoints = resolved.endpoints;
    this.explicit = endpoints && {
      issuer: this.issuer,
      authorizationEndpoint: endpoints.authorization,
      tokenEndpoint: endpoints.token,
      jwksUri: endpoints.jwks,
      ...(endpoints.userinfo === undefined ? {} : { userinfoEndpoint: endpoints.userinfo }),
      ...(endpoints.endSession === undefined ? {} : { endSessionEndpoint: endpoints.endSession }),
      issParameterSupported: endpoints.issParameterSupported,
    };
  }

  /** @internal Token-endpoint client authentication, built once in the constructor: headers and body fields. */
  clientAuthentication(): { headers: Record<string, string>; body: Record<string, string> } {
    return this.#clientAuth;
  }

  /**
   * The provider's metadata: the explicit endpoints, or the discovery document (fetched once, reused for
   * `discoveryCacheLifetimeSeconds`; concurrent callers share one fetch; a failure is not cached).
   */
  async metadata(): Promise<OidcProviderMetadata> {
    if (this.explicit) return this.explicit;
    if (this.cached && this.cached.until > Date.now()) return this.cached.metadata;
    if (!this.inflight) {
      this.inflight = this.discover().then(
        (metadata) => {
          this.cached = { metadata, until: Date.now() + this.discoveryCacheMs };
          this.inflight = undefined;
          return metadata;
        },
        (error: unknown) => {
          this.inflight = undefined;
          throw error;
        },
      );
    }
    return this.inflight;
  }

  private async discover(): Promise<OidcProviderMetadata> {
    const url = `${this.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const call = { provider: this.name, what: 'discovery', timeoutMs: this.timeoutMs };
    const { status, body } = await requestJson(url, { method: 'GET' }, call);
    const doc = asObject(body);
    if (status !== 200 || !doc) throw providerMisbehaved(this.name, `discovery answered ${status}`);
    // OIDC Discovery §4.3: the document's issuer must be exactly the configured one, or tokens could be mixed up.
    if (doc.issuer !== this.issuer) {
      throw providerMisbehaved(this.name, `discovery issuer ${JSON.stringify(doc.issuer)} differs from the configured "${this.issuer}"`);
    }
    const endpoint = (field: string, required: boolean): string | undefined => {
      const value = doc[field];
      if (value === undefined && !required) return undefined;
      try {
        return checkProviderUrl('discovery', field, value, this.insecureHttp);
      } catch (error) {
        throw providerMisbehaved(this.name, (error as Error).message);
      }
    };
    const algs = doc.id_token_signing_alg_values_supported;
    if (Array.isArray(algs) && !algs.includes(this.idTokenSigningAlg)) {
      throw providerMisbehaved(this.name, `the provider does not sign ID tokens with ${this.idTokenSigningAlg}`);
    }
    const userinfoEndpoint = endpoint('userinfo_endpoint', this.fetchUserinfo);
    const endSessionEndpoint = endpoint('end_session_endpoint', false);
    return {
      issuer: this.issuer,
      authorizationEndpoint: endpoint('authorization_endpoint', true)!,
      tokenEndpoint: endpoint('token_endpoint', true)!,
      jwksUri: endpoint('jwks_uri', true)!,
      ...(userinfoEndpoint ? { userinfoEndpoint } : {}),
      ...(endSessionEndpoint ? { endSessionEndpoint } : {}),
      issParameterSupported: doc.authorization_response_iss_parameter_supported === true,
    };
  }
}

/**
 * Configures an OpenID provider for the relying-party middlewares. Every option is checked here; nothing is fetched
 * until the first login (await `provider.metadata()` at startup to fail fast on a wrong issuer).
 *
 * @example
 * const corp = oidcProvider({
 *   name: 'corp', issuer: 'https://idp.example.test', clientId: 'shop', clientSecret: process.env.OIDC_SECRET!,
 *   redirectUri: 'https://auth.example.test/callback/corp', scopes: ['openid', 'profile', 'email'],
 * });
 */
export function oidcProvider(options: OidcProviderOptions): OidcProvider {
  return new OidcProvider(options);
}

/**
 * Checks the first argument of an OIDC middleware factory: a provider from {@link oidcProvider}, not the factory
 * used as a middleware (`app.get(path, oidcLogin)`) or anything else. Throws an `OptionsError`.
 *
 * @example
 * assertProvider('oidcLogin', provider);
 */
export function assertProvider(who: string, provider: unknown): asserts provider is OidcProvider {
  if (provider instanceof OidcProvider) return;
  if (provider && typeof provider === 'object' && 'method' in provider && 'headers' in provider) {
    throw new OptionsError(`${who}: it is a factory; call it with a provider: ${who}(corp), not ${who} itself`);
  }
  throw new OptionsError(`${who}: the first argument must be a provider from oidcProvider({ … })`);
}
