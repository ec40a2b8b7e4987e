import { sourceProblem } from '../session/identity';
import type { KeyValueStore } from '../store/port';
import { asObject, requestJson } from './http-client';
import { providerMisbehaved } from './errors';
import { defaultClaimsToUser, type ClaimsToUser } from './claims';

/** Endpoints given explicitly instead of discovered. */
export interface OidcEndpoints {
  authorization: string;
  token: string;
  jwks: string;
  userinfo?: string;
  endSession?: string;
  /** Whether the provider sends the RFC 9207 `iss` parameter on every authorization response. Default false. */
  issParameterSupported?: boolean;
}

/** Options of {@link oidcProvider}. */
export interface OidcProviderOptions {
  /**
   * Names the provider so several live side by side (`/login/corp`, `/login/partner`); lowercase letters, digits
   * and dashes. It is stored with each login transaction and on the session. Default `oidc`.
   */
  name?: string;
  /** The issuer identifier, `https://…`. Discovery reads `${issuer}/.well-known/openid-configuration`. */
  issuer: string;
  /** Skip discovery and use these endpoints. Default: discovered. */
  endpoints?: OidcEndpoints;
  clientId: string;
  clientSecret: string;
  /** The absolute URL of the route where `oidcCallback` is mounted, as registered at the provider. */
  redirectUri: string;
  /** Requested scopes; must contain `openid`. Default `['openid', 'profile', 'email']`. */
  scopes?: readonly string[];
  /** How the client authenticates at the token endpoint. Default `client_secret_basic`. */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post';
  /** The one algorithm ID tokens must be signed with. Default `RS256`. Asymmetric algorithms only. */
  idTokenSigningAlg?: string;
  /** Clock skew allowed on `exp`, `iat` and `auth_time`, in seconds. Default 30. */
  clockToleranceSeconds?: number;
  /** Maps verified claims to the session user. Default {@link defaultClaimsToUser}. */
  claimsToUser?: ClaimsToUser;
  /** Call the userinfo endpoint after the code exchange (its `sub` must equal the ID token's). Default false. */
  fetchUserinfo?: boolean;
  /** Deadline of every call to the provider, in milliseconds. Default 5000. */
  timeoutMs?: number;
  /** Where the provider sends the browser after RP-initiated logout; must be registered there. Default: none. */
  postLogoutRedirectUri?: string;
  /** How long a discovery document is reused, in seconds. Default 3600. */
  discoveryCacheSeconds?: number;
  /**
   * The kit store for this provider's shared state: back-channel logout `jti` replay marks and the refresh lock
   * that lets one instance refresh a session's tokens while the others wait. Required by `backchannelLogout` and
   * `oidcContext` unless given to them directly. Default: none.
   */
  store?: KeyValueStore;
  /**
   * Accept `http:` URLs for the issuer and endpoints. Only for tests against a provider on 127.0.0.1; a real
   * deployment must use https, since codes and tokens travel on these connections. Default false.
   */
  allowInsecureHttpForTesting?: boolean;
}

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

// The asymmetric algorithms the kit's verifier supports; HMAC would make the client secret a signing key.
const ASYMMETRIC_ALGS = new Set(['RS256', 'PS256', 'ES256']);
const OPTION_KEYS = new Set([
  'name',
  'issuer',
  'endpoints',
  'clientId',
  'clientSecret',
  'redirectUri',
  'scopes',
  'tokenEndpointAuthMethod',
  'idTokenSigningAlg',
  'clockToleranceSeconds',
  'claimsToUser',
  'fetchUserinfo',
  'timeoutMs',
  'postLogoutRedirectUri',
  'discoveryCacheSeconds',
  'allowInsecureHttpForTesting',
  'store',
]);

function fail(message: string): never {
  throw new TypeError(`oidcProvider: ${message}`);
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * `http:` is accepted with `allowInsecureHttpForTesting`, and for server-to-server endpoints (`backChannel`) on a
 * loopback host, like the tokens module's JWKS cache: such traffic never leaves the machine (a sidecar, a local
 * proxy to the provider).
 */
function checkUrl(option: string, value: unknown, insecureAllowed: boolean, backChannel = false): string {
  if (typeof value !== 'string' || value.length === 0) fail(`${option} must be an absolute URL string, got ${JSON.stringify(value)}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(`${option} must be an absolute URL like "https://idp.example.test", got "${value}"`);
  }
  const loopback = backChannel && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (insecureAllowed || loopback))) {
    fail(
      `${option} must use https:, got "${value}" (http: only with allowInsecureHttpForTesting in tests${backChannel ? ', or on a loopback host' : ''})`,
    );
  }
  if (url.username || url.password) fail(`${option} must not carry credentials, got "${url.protocol}//…@${url.host}"`);
  if (url.hash) fail(`${option} must not contain a #fragment, got "${value}"`);
  return value;
}

function positiveNumber(option: string, value: unknown, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    fail(`${option} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * A configured OpenID provider. Create it with {@link oidcProvider}; pass it to `oidcLogin`, `oidcCallback`,
 * `oidcContext`, `oidcLogout` and `backchannelLogout`.
 */
export class OidcProvider {
  readonly name: string;
  readonly issuer: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope: string;
  readonly idTokenSigningAlg: string;
  readonly clockToleranceSeconds: number;
  readonly timeoutMs: number;
  readonly fetchUserinfo: boolean;
  readonly postLogoutRedirectUri: string | undefined;
  readonly claimsToUser: ClaimsToUser;
  readonly insecureHttp: boolean;
  readonly store: KeyValueStore | undefined;
  // A private field, so logging the provider object never prints the client secret.
  readonly #clientAuth: { headers: Record<string, string>; body: Record<string, string> };
  private readonly explicit: OidcProviderMetadata | undefined;
  private readonly discoveryCacheMs: number;
  private cached: { metadata: OidcProviderMetadata; until: number } | undefined;
  private inflight: Promise<OidcProviderMetadata> | undefined;

  /** @internal Use {@link oidcProvider}. */
  constructor(options: OidcProviderOptions) {
    if (options === null || typeof options !== 'object')
      fail('pass an options object, e.g. oidcProvider({ issuer, clientId, clientSecret, redirectUri })');
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) fail(`unknown option "${key}"`);
    }
    const insecure = options.allowInsecureHttpForTesting ?? false;
    if (typeof insecure !== 'boolean') fail('allowInsecureHttpForTesting must be a boolean');
    this.insecureHttp = insecure;

    const name = options.name ?? 'oidc';
    if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) {
      fail(`name must be lowercase letters, digits and dashes like "corp", got ${JSON.stringify(name)}`);
    }
    this.name = name;

    this.issuer = checkUrl('issuer', options.issuer, insecure);
    // The issuer names the identity source of every login (`oidc:<issuer>`): refuse one that cannot, now, not at the first login.
    if (sourceProblem(`oidc:${this.issuer}`) !== undefined) {
      fail(
        `issuer must be at most 512 printable ASCII characters without spaces or "|" (it names the identity source "oidc:<issuer>"), got "${this.issuer}"`,
      );
    }
    if (typeof options.clientId !== 'string' || options.clientId.length === 0) fail('clientId must be a non-empty string');
    this.clientId = options.clientId;
    if (typeof options.clientSecret !== 'string' || options.clientSecret.length === 0) {
      fail('clientSecret must be a non-empty string (is the environment variable holding it set?)');
    }
    this.redirectUri = checkUrl('redirectUri', options.redirectUri, insecure);

    const scopes = options.scopes ?? ['openid', 'profile', 'email'];
    if (!Array.isArray(scopes) || !scopes.every((scope) => typeof scope === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope))) {
      fail('scopes must be an array of scope tokens like ["openid", "profile"]');
    }
    if (!scopes.includes('openid')) fail(`scopes must include "openid" (this is an OpenID Connect login), got ${JSON.stringify(scopes)}`);
    this.scope = [...new Set(scopes)].join(' ');

    const method = options.tokenEndpointAuthMethod ?? 'client_secret_basic';
    if (method === 'client_secret_basic') {
      // RFC 6749 §2.3.1: id and secret are form-urlencoded before Base64.
      const credentials = `${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`;
      this.#clientAuth = { headers: { Authorization: `Basic ${Buffer.from(credentials).toString('base64')}` }, body: {} };
    } else if (method === 'client_secret_post') {
      this.#clientAuth = { headers: {}, body: { client_id: options.clientId, client_secret: options.clientSecret } };
    } else {
      fail(`tokenEndpointAuthMethod must be "client_secret_basic" or "client_secret_post", got ${JSON.stringify(method)}`);
    }

    const alg = options.idTokenSigningAlg ?? 'RS256';
    if (typeof alg !== 'string' || !ASYMMETRIC_ALGS.has(alg)) {
      fail(`idTokenSigningAlg must be one of ${[...ASYMMETRIC_ALGS].join(', ')} ("none" and HMAC are refused), got ${JSON.stringify(alg)}`);
    }
    this.idTokenSigningAlg = alg;
    this.clockToleranceSeconds = positiveNumber('clockToleranceSeconds', options.clockToleranceSeconds, 30, true);
    if (this.clockToleranceSeconds > 300) fail('clockToleranceSeconds above 300 would accept long-expired tokens; use at most 300');
    this.timeoutMs = positiveNumber('timeoutMs', options.timeoutMs, 5000);
    this.discoveryCacheMs = positiveNumber('discoveryCacheSeconds', options.discoveryCacheSeconds, 3600) * 1000;

    if (options.claimsToUser !== undefined && typeof options.claimsToUser !== 'function')
      fail('claimsToUser must be a function (claims, userinfo) => user');
    this.claimsToUser = options.claimsToUser ?? defaultClaimsToUser;
    if (options.fetchUserinfo !== undefined && typeof options.fetchUserinfo !== 'boolean') fail('fetchUserinfo must be a boolean');
    this.fetchUserinfo = options.fetchUserinfo ?? false;
    this.postLogoutRedirectUri =
      options.postLogoutRedirectUri === undefined ? undefined : checkUrl('postLogoutRedirectUri', options.postLogoutRedirectUri, insecure);

    if (options.store !== undefined && (options.store === null || typeof options.store.setIfAbsent !== 'function')) {
      fail('store must be a KeyValueStore such as new RedisStore(url)');
    }
    this.store = options.store;

    if (options.endpoints !== undefined) {
      const endpoints = options.endpoints;
      if (endpoints === null || typeof endpoints !== 'object') fail('endpoints must be an object { authorization, token, jwks }');
      this.explicit = {
        issuer: this.issuer,
        authorizationEndpoint: checkUrl('endpoints.authorization', endpoints.authorization, insecure),
        tokenEndpoint: checkUrl('endpoints.token', endpoints.token, insecure, true),
        jwksUri: checkUrl('endpoints.jwks', endpoints.jwks, insecure, true),
        ...(endpoints.userinfo === undefined
          ? {}
          : { userinfoEndpoint: checkUrl('endpoints.userinfo', endpoints.userinfo, insecure, true) }),
        ...(endpoints.endSession === undefined
          ? {}
          : { endSessionEndpoint: checkUrl('endpoints.endSession', endpoints.endSession, insecure) }),
        issParameterSupported: endpoints.issParameterSupported === true,
      };
    }
    if (this.fetchUserinfo && this.explicit && !this.explicit.userinfoEndpoint) fail('fetchUserinfo needs endpoints.userinfo');
  }

  /** @internal Token-endpoint client authentication, built once in the constructor: headers and body fields. */
  clientAuthentication(): { headers: Record<string, string>; body: Record<string, string> } {
    return this.#clientAuth;
  }

  /**
   * The provider's metadata: the explicit endpoints, or the discovery document (fetched once, reused for
   * `discoveryCacheSeconds`; concurrent callers share one fetch; a failure is not cached).
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
        return checkUrl(field, value, this.insecureHttp);
      } catch (error) {
        throw providerMisbehaved(this.name, `discovery ${field}: ${(error as Error).message}`);
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
