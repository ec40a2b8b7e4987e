import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { KeySet } from '../tokens';
import type { KeyValueStore } from '../store';
import type { SessionManager, SsoRequestContext } from '../session';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';

/** The grants a registered client may use. */
export type ProviderGrantType = 'authorization_code' | 'refresh_token' | 'client_credentials';

/** Whether a client may, or must, bind its tokens to a DPoP key (RFC 9449). */
export type ProviderDpopMode = 'allowed' | 'required';

/** A client's public keys for `private_key_jwt` (a JWK Set by value). */
export interface ProviderClientJwks {
  keys: readonly Record<string, unknown>[];
}

/**
 * A resource server (an API) the provider issues JWT access tokens for (RFC 9068, `typ` `at+jwt`, signed with the
 * kit's key): a client names it with `resource` (RFC 8707), or gets it by default when its `scopes` name one
 * resource's scopes only.
 */
export interface ProviderResource {
  /** The resource indicator, an absolute https URL: the tokens' `aud`, e.g. `https://notes.example.test/api`. */
  indicator: string;
  /** The scopes users may delegate to clients for it, e.g. `['notes:read', 'notes:write']`. */
  scopes: readonly string[];
  /** Lifetime of its access tokens. Default the provider's `accessTokenLifetimeSeconds`. */
  accessTokenLifetimeSeconds?: number;
}

/** A client (relying party) registered at the provider. */
export interface ProviderClient {
  clientId: string;
  /** Confidential clients authenticate with it (`client_secret_basic` only); without it (and without keys) the client is public. */
  clientSecret?: string;
  /**
   * The client authenticates with `private_key_jwt` (RFC 7523): a signed, single-use client assertion whose keys
   * are these (by value). Not with `clientSecret` or `jwksUri`.
   */
  jwks?: ProviderClientJwks;
  /**
   * `private_key_jwt` with the client's keys fetched from this https URL (cached, refetched for an unknown `kid`),
   * through the same fetch guard as back-channel logout calls (no loopback or private-network address unless
   * `allowPrivateNetworkBackchannel`).
   */
  jwksUri?: string;
  /** Only pushed authorization requests (RFC 9126) for this client: a plain authorization request is refused. Default false. */
  requirePushedAuthorizationRequests?: boolean;
  /** `'required'`: every access token of this client is DPoP-bound; a token request without a proof is refused. Default the provider's `dpop`. */
  dpop?: ProviderDpopMode;
  /** The one `response_mode` this client may use. Default `'query'`. */
  responseMode?: 'query' | 'form_post';
  /** Exact redirect URIs (no wildcards, compared character for character). Required unless only `client_credentials`. */
  redirectUris?: readonly string[];
  /** Exact URIs the provider may send the browser to after RP-initiated logout. */
  postLogoutRedirectUris?: readonly string[];
  /** The client's OpenID back-channel logout endpoint; it receives a logout token when the user's session ends. */
  backchannelLogoutUri?: string;
  /** Default `['authorization_code', 'refresh_token']`. A service uses `['client_credentials']`. */
  grantTypes?: readonly ProviderGrantType[];
  /**
   * The scopes this client may ask for besides `openid`, `profile`, `email` and `offline_access`: for a
   * `client_credentials` service, scopes of `serviceScopes`; for an interactive (authorization code) client, scopes
   * of `resources` only, never a service scope. Anything else it asks for is refused (`invalid_scope`).
   */
  scopes?: readonly string[];
  /**
   * A client of another organisation: the user is asked to consent, remembered per user and scope for a confidential
   * client, asked at every authorization request for a public one (no client authentication). Default false.
   */
  thirdParty?: boolean;
  /** Shown on the consent page. Default the client id. */
  name?: string;
}

/** The session the provider shares: `ssoSession(...)`'s middleware (its `manager` and `context`). */
export interface ProviderSessions {
  readonly manager: SessionManager;
  readonly context: SsoRequestContext;
}

/** Options of `openidProvider`. */
export interface OpenidProviderOptions {
  /** The issuer: the https origin of the portal host, e.g. `https://auth.example.test` (no path, no trailing slash). */
  issuer: string;
  /** The kit's signing keys (the token service's `KeySet`); the active key must be RS256, PS256 or ES256. */
  keys: KeySet;
  /** Where codes, tokens, grants and the provider's sessions live: the kit store (Redis; memory for one process). */
  store: KeyValueStore;
  /** The portal's shared session: the value `ssoSession(...)` returned. */
  sessions: ProviderSessions;
  clients: readonly ProviderClient[];
  /** Secrets that sign the provider's own cookies, each at least 32 characters; the first signs (rotation). */
  cookieSecrets: readonly string[];
  /**
   * Where the user goes when the session is not strong or fresh enough (`prompt=login`, `max_age`, `acr_values`);
   * `return_to` (and `acr_values` when asked) are appended. Default the portal login URL with `prompt=login`.
   */
  stepUpUrl?: string;
  /** Path prefix of the provider's endpoints. Default `/oidc`. */
  pathPrefix?: string;
  /** Where the portal serves the kit's stylesheet. Default `/portal-assets`. */
  assetsPath?: string;
  /** Scopes services may ask for with `client_credentials`, e.g. `['reports:read']`. Default none. */
  serviceScopes?: readonly string[];
  /** APIs the provider issues JWT access tokens for (see {@link ProviderResource}). Default none (opaque access tokens). */
  resources?: readonly ProviderResource[];
  /** Every client must use pushed authorization requests (RFC 9126). Default false (each client decides). */
  requirePushedAuthorizationRequests?: boolean;
  /** `'required'`: every client's access tokens are DPoP-bound. Default `'allowed'` (bound when the client sends a proof). */
  dpop?: ProviderDpopMode;
  /**
   * `'fapi2'`: the FAPI 2.0 Security Profile's rules for every client, checked when the factory is called and at each
   * request: pushed authorization requests only, PKCE S256, DPoP-bound tokens only, `private_key_jwt` only (no
   * secrets, no public clients) with the issuer as the assertion's audience, the code flow with `response_mode`
   * `query` (no token in a front channel), and the `iss` authorization response parameter.
   */
  profile?: 'fapi2';
  /** Default 600. */
  accessTokenLifetimeSeconds?: number;
  /** Default 3600. */
  idTokenLifetimeSeconds?: number;
  /** Lifetime of a refresh token (each rotation issues a new one). Default 1209600 (14 days). */
  refreshTokenLifetimeSeconds?: number;
  /** Default 60. */
  authorizationCodeLifetimeSeconds?: number;
  /**
   * Deliver back-channel logout tokens to clients whose `backchannelLogoutUri` is, or resolves to, a loopback or
   * private-network address (127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, ::1, fc00::/7, …). Default
   * false: such calls are refused (SSRF), so a client registration cannot make the provider reach into the portal's
   * own network. Turn it on only when the clients' back-channel endpoints live on the same private network as the
   * portal (a cluster, a local demo).
   */
  allowPrivateNetworkBackchannel?: boolean;
  /**
   * Where tokens issued and refused, consents, revocations and failed back-channel deliveries are recorded.
   * Default the events of `sessions` (`ssoSession({ events })`).
   */
  events?: SecurityEvents;
}

/** {@link OpenidProviderOptions} checked and completed. */
export interface ResolvedProviderOptions {
  issuer: string;
  keys: KeySet;
  store: KeyValueStore;
  sessions: ProviderSessions;
  clients: readonly ProviderClient[];
  thirdParty: ReadonlySet<string>;
  resources: readonly ProviderResource[];
  requirePushedAuthorizationRequests: boolean;
  dpop: ProviderDpopMode;
  profile: 'fapi2' | undefined;
  cookieSecrets: string[];
  stepUpUrl: string;
  pathPrefix: string;
  assetsPath: string;
  serviceScopes: string[];
  lifetimes: { accessToken: number; idToken: number; refreshToken: number; authorizationCode: number };
  allowPrivateNetworkBackchannel: boolean;
  events: SecurityEvents | undefined;
}

const FACTORY = 'openidProvider';
const GRANTS: readonly ProviderGrantType[] = ['authorization_code', 'refresh_token', 'client_credentials'];

const CLIENT_SCHEMA: OptionSchema = {
  clientId: {
    type: 'string',
    required: true,
    check: (id: string) => (/^[\x21-\x7e]{1,128}$/.test(id) ? undefined : 'must be 1–128 printable characters'),
  },
  clientSecret: { type: 'string', check: (secret: string) => (secret.length >= 32 ? undefined : 'must have at least 32 characters') },
  redirectUris: { type: 'string[]' },
  postLogoutRedirectUris: { type: 'string[]' },
  backchannelLogoutUri: { type: 'string' },
  grantTypes: {
    type: 'string[]',
    check: (grants: string[]) =>
      grants.length > 0 && grants.every((grant) => (GRANTS as readonly string[]).includes(grant))
        ? undefined
        : `must list some of ${GRANTS.join(', ')}`,
  },
  scopes: { type: 'string[]' },
  thirdParty: { type: 'boolean' },
  name: { type: 'string' },
  jwks: {
    type: 'object',
    expected: 'a JWK Set { keys: [...] } of public keys',
    check: (jwks: { keys?: unknown }) =>
      Array.isArray(jwks.keys) && jwks.keys.length > 0 && jwks.keys.every((key) => typeof key === 'object' && key !== null && !('d' in key))
        ? undefined
        : 'must be a JWK Set { keys: [...] } of public keys (no private members)',
  },
  jwksUri: { type: 'string' },
  requirePushedAuthorizationRequests: { type: 'boolean' },
  dpop: {
    type: 'string',
    check: (mode: string) => (mode === 'allowed' || mode === 'required' ? undefined : "must be 'allowed' or 'required'"),
  },
  responseMode: {
    type: 'string',
    check: (mode: string) => (mode === 'query' || mode === 'form_post' ? undefined : "must be 'query' or 'form_post'"),
  },
};

const RESOURCE_SCHEMA: OptionSchema = {
  indicator: { type: 'string', required: true },
  scopes: { type: 'string[]', required: true },
  accessTokenLifetimeSeconds: { type: 'integer', check: within(30, 86400) },
};

const SCHEMA: OptionSchema = {
  issuer: { type: 'string', required: true, expected: 'the https origin of the portal, e.g. "https://auth.example.test"' },
  keys: { type: 'object', required: true, expected: 'a KeySet, e.g. new KeySet([{ kid, alg: "ES256", privateKey }])' },
  store: { type: 'object', required: true, expected: 'a kit store (RedisStore or MemoryStore)' },
  sessions: {
    type: ['function', 'object'],
    required: true,
    expected: 'the middleware ssoSession(...) returned',
    check: (value: { manager?: unknown; context?: unknown }) =>
      typeof value.manager === 'object' && typeof value.context === 'object'
        ? undefined
        : 'must be the middleware ssoSession(...) returned',
  },
  clients: { type: 'array', required: true, expected: 'an array of clients { clientId, clientSecret?, redirectUris, ... }' },
  cookieSecrets: {
    type: 'string[]',
    required: true,
    check: (secrets: string[]) =>
      secrets.length > 0 && secrets.every((secret) => secret.length >= 32) ? undefined : 'must be secrets of at least 32 characters',
  },
  stepUpUrl: { type: 'string' },
  pathPrefix: {
    type: 'string',
    check: (path: string) => (/^\/[a-z0-9/_-]*[a-z0-9_-]$/i.test(path) ? undefined : 'must be a path like "/oidc"'),
  },
  assetsPath: { type: 'string' },
  serviceScopes: { type: 'string[]' },
  resources: { type: 'array', expected: 'an array of resources { indicator, scopes }' },
  requirePushedAuthorizationRequests: { type: 'boolean' },
  dpop: {
    type: 'string',
    check: (mode: string) => (mode === 'allowed' || mode === 'required' ? undefined : "must be 'allowed' or 'required'"),
  },
  profile: { type: 'string', check: (profile: string) => (profile === 'fapi2' ? undefined : "must be 'fapi2'") },
  accessTokenLifetimeSeconds: { type: 'integer', check: within(30, 86400) },
  idTokenLifetimeSeconds: { type: 'integer', check: within(30, 86400) },
  refreshTokenLifetimeSeconds: { type: 'integer', check: within(60, 365 * 86400) },
  authorizationCodeLifetimeSeconds: { type: 'integer', check: within(10, 600) },
  allowPrivateNetworkBackchannel: { type: 'boolean' },
  events: EVENTS_OPTION,
};

function fail(message: string): never {
  throw new OptionsError(`${FACTORY}: ${message}`);
}

function absoluteUrl(value: string, what: string, allowHttpLoopback: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(`${what} must be an absolute URL, got ${JSON.stringify(value)}`);
  }
  // *.localhost names resolve to loopback in browsers (RFC 6761), so plain http there never leaves the machine.
  const loopback =
    url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost' || url.hostname.endsWith('.localhost');
  if (url.protocol !== 'https:' && !(allowHttpLoopback && loopback && url.protocol === 'http:')) {
    fail(`${what} must use https (http only on 127.0.0.1, localhost or *.localhost), got ${JSON.stringify(value)}`);
  }
  if (url.hash) fail(`${what} must not have a fragment, got ${JSON.stringify(value)}`);
  return url;
}

/** The scopes each kind of client may hold, and the profile every client must meet. */
interface ClientRules {
  serviceScopes: readonly string[];
  resourceScopes: ReadonlySet<string>;
  profile: 'fapi2' | undefined;
}

function checkClientScopes(client: ProviderClient, label: string, interactive: boolean, rules: ClientRules): void {
  for (const scope of client.scopes ?? []) {
    const service = rules.serviceScopes.includes(scope);
    // An interactive client acts for a user; a service scope is a service's own authority, never a user's to delegate.
    if (interactive && service) fail(`${label}: scope "${scope}" is a service scope; an authorization_code client cannot hold one`);
    if (!service && !rules.resourceScopes.has(scope)) {
      const known = interactive ? 'the scopes of resources' : 'serviceScopes or the scopes of resources';
      fail(
        `${label}: scope "${scope}" is not one of ${known} (${[...(interactive ? [] : rules.serviceScopes), ...rules.resourceScopes].join(', ') || 'none'})`,
      );
    }
  }
}

function checkFapi2(client: ProviderClient, label: string, interactive: boolean): void {
  if (client.clientSecret !== undefined || (client.jwks === undefined && client.jwksUri === undefined)) {
    fail(`${label}: profile 'fapi2' needs private_key_jwt: give the client jwks or jwksUri (no clientSecret, no public clients)`);
  }
  if (client.dpop === 'allowed') fail(`${label}: profile 'fapi2' binds every token (DPoP): remove dpop: 'allowed'`);
  if (client.requirePushedAuthorizationRequests === false) fail(`${label}: profile 'fapi2' requires pushed authorization requests`);
  if (interactive && client.responseMode === 'form_post') fail(`${label}: profile 'fapi2' answers with response_mode query only`);
}

function checkClient(client: ProviderClient, index: number, rules: ClientRules): void {
  const label = typeof client?.clientId === 'string' ? `client "${client.clientId}"` : `clients[${index}]`;
  checkOptions(`${FACTORY}: ${label}`, client as unknown, CLIENT_SCHEMA);
  const grants = client.grantTypes ?? ['authorization_code', 'refresh_token'];
  const interactive = grants.includes('authorization_code');
  const keyed = client.jwks !== undefined || client.jwksUri !== undefined;
  if (interactive && (client.redirectUris ?? []).length === 0) fail(`${label} needs redirectUris for authorization_code`);
  if (!interactive && grants.includes('refresh_token')) fail(`${label}: refresh_token needs authorization_code`);
  if ([client.clientSecret, client.jwks, client.jwksUri].filter((value) => value !== undefined).length > 1) {
    fail(`${label}: give one way to authenticate: clientSecret, jwks or jwksUri`);
  }
  if (grants.includes('client_credentials') && client.clientSecret === undefined && !keyed) {
    fail(`${label}: client_credentials needs a clientSecret or keys (a public client cannot prove it is the service)`);
  }
  // oidc-provider reads an empty allowlist as none at all: a service without scopes could ask for any service's.
  if (grants.includes('client_credentials') && !interactive && (client.scopes ?? []).length === 0) {
    fail(`${label}: client_credentials needs scopes (the service scopes it may ask for)`);
  }
  for (const uri of client.redirectUris ?? []) absoluteUrl(uri, `${label} redirect URI`, true);
  for (const uri of client.postLogoutRedirectUris ?? []) absoluteUrl(uri, `${label} post-logout redirect URI`, true);
  if (client.backchannelLogoutUri !== undefined) absoluteUrl(client.backchannelLogoutUri, `${label} backchannelLogoutUri`, true);
  if (client.jwksUri !== undefined) absoluteUrl(client.jwksUri, `${label} jwksUri`, true);
  checkClientScopes(client, label, interactive, rules);
  if (rules.profile === 'fapi2') checkFapi2(client, label, interactive);
}

function checkResources(resources: readonly ProviderResource[], serviceScopes: readonly string[]): Set<string> {
  const scopes = new Set<string>();
  const indicators = new Set<string>();
  resources.forEach((resource, index) => {
    checkOptions(`${FACTORY}: resources[${index}]`, resource as unknown, RESOURCE_SCHEMA);
    const url = absoluteUrl(resource.indicator, `resources[${index}].indicator`, true);
    if (url.search) fail(`resources[${index}].indicator must not have a query, got ${JSON.stringify(resource.indicator)}`);
    if (indicators.has(url.href)) fail(`resource "${resource.indicator}" appears twice`);
    indicators.add(url.href);
    if (url.href !== resource.indicator) fail(`resources[${index}].indicator must be written as ${JSON.stringify(url.href)}`);
    for (const scope of resource.scopes) {
      if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope))
        fail(`resources[${index}]: scope ${JSON.stringify(scope)} has characters a scope cannot hold`);
      if (['openid', 'offline_access', 'profile', 'email', ...serviceScopes].includes(scope) || scopes.has(scope)) {
        fail(`resources[${index}]: scope "${scope}" is already an OpenID, service or other resource's scope`);
      }
      scopes.add(scope);
    }
  });
  return scopes;
}

/**
 * Checks `openidProvider`'s options when the factory is called and fills in the defaults.
 *
 * @example
 * const settings = resolveProviderOptions({ issuer, keys, store, sessions, clients, cookieSecrets });
 */
export function resolveProviderOptions(options: OpenidProviderOptions): ResolvedProviderOptions {
  checkOptions(FACTORY, options, SCHEMA);
  if (!(options.keys instanceof KeySet)) fail('keys must be a KeySet, e.g. new KeySet([{ kid, alg: "ES256", privateKey }])');
  const alg = options.keys.signingKey.alg;
  if (!['RS256', 'PS256', 'ES256'].includes(alg))
    fail(`the active key signs with ${alg}; ID tokens need RS256, PS256 or ES256 (a public key)`);
  const issuer = absoluteUrl(options.issuer, 'issuer', true);
  if (issuer.pathname !== '/' || issuer.search || options.issuer.endsWith('/')) {
    fail(
      `issuer must be an origin without path or trailing slash, e.g. "https://auth.example.test", got ${JSON.stringify(options.issuer)}`,
    );
  }
  const serviceScopes = [...(options.serviceScopes ?? [])];
  const resources = (options.resources ?? []).map((resource) => ({ ...resource, scopes: [...resource.scopes] }));
  const rules: ClientRules = { serviceScopes, resourceScopes: checkResources(resources, serviceScopes), profile: options.profile };
  if (options.profile === 'fapi2') {
    if (options.requirePushedAuthorizationRequests === false) fail("profile 'fapi2' requires pushed authorization requests");
    if (options.dpop === 'allowed') fail("profile 'fapi2' binds every token (DPoP): remove dpop: 'allowed'");
  }
  const seen = new Set<string>();
  options.clients.forEach((client, index) => {
    checkClient(client, index, rules);
    if (seen.has(client.clientId)) fail(`client "${client.clientId}" appears twice`);
    seen.add(client.clientId);
  });
  const loginUrl = options.sessions.context.loginUrl;
  const stepUpUrl = options.stepUpUrl ?? `${loginUrl}${new URL(loginUrl).search ? '&' : '?'}prompt=login`;
  return {
    issuer: options.issuer,
    keys: options.keys,
    store: options.store,
    sessions: options.sessions,
    clients: options.clients.map((client) => ({ ...client })),
    thirdParty: new Set(options.clients.filter((client) => client.thirdParty === true).map((client) => client.clientId)),
    resources,
    requirePushedAuthorizationRequests: options.requirePushedAuthorizationRequests === true || options.profile === 'fapi2',
    dpop: options.profile === 'fapi2' ? 'required' : (options.dpop ?? 'allowed'),
    profile: options.profile,
    cookieSecrets: [...options.cookieSecrets],
    stepUpUrl,
    pathPrefix: options.pathPrefix ?? '/oidc',
    assetsPath: options.assetsPath ?? '/portal-assets',
    serviceScopes,
    lifetimes: {
      accessToken: options.accessTokenLifetimeSeconds ?? 600,
      idToken: options.idTokenLifetimeSeconds ?? 3600,
      refreshToken: options.refreshTokenLifetimeSeconds ?? 14 * 86400,
      authorizationCode: options.authorizationCodeLifetimeSeconds ?? 60,
    },
    allowPrivateNetworkBackchannel: options.allowPrivateNetworkBackchannel === true,
    events: eventsOption(FACTORY, options.events) ?? options.sessions.context.events,
  };
}
