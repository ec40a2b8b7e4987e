import { KeySet } from '../tokens';
import type { KeyValueStore } from '../store';
import type { SessionManager, SsoRequestContext } from '../session';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';

/** The grants a registered client may use. */
export type ProviderGrantType = 'authorization_code' | 'refresh_token' | 'client_credentials';

/** A client (relying party) registered at the provider. */
export interface ProviderClient {
  clientId: string;
  /** Confidential clients authenticate with it (`client_secret_basic` or `_post`); without it the client is public. */
  clientSecret?: string;
  /** Exact redirect URIs (no wildcards, compared character for character). Required unless only `client_credentials`. */
  redirectUris?: readonly string[];
  /** Exact URIs the provider may send the browser to after RP-initiated logout. */
  postLogoutRedirectUris?: readonly string[];
  /** The client's OpenID back-channel logout endpoint; it receives a logout token when the user's session ends. */
  backchannelLogoutUri?: string;
  /** Default `['authorization_code', 'refresh_token']`. A service uses `['client_credentials']`. */
  grantTypes?: readonly ProviderGrantType[];
  /** For `client_credentials`: the scopes this service may ask for (from `serviceScopes`). */
  scopes?: readonly string[];
  /** A client of another organisation: the user is asked to consent (remembered per user and scope). Default false. */
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
}

/** {@link OpenidProviderOptions} checked and completed. */
export interface ResolvedProviderOptions {
  issuer: string;
  keys: KeySet;
  store: KeyValueStore;
  sessions: ProviderSessions;
  clients: readonly ProviderClient[];
  thirdParty: ReadonlySet<string>;
  cookieSecrets: string[];
  stepUpUrl: string;
  pathPrefix: string;
  assetsPath: string;
  serviceScopes: string[];
  lifetimes: { accessToken: number; idToken: number; refreshToken: number; authorizationCode: number };
  allowPrivateNetworkBackchannel: boolean;
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
  accessTokenLifetimeSeconds: { type: 'integer', check: within(30, 86400) },
  idTokenLifetimeSeconds: { type: 'integer', check: within(30, 86400) },
  refreshTokenLifetimeSeconds: { type: 'integer', check: within(60, 365 * 86400) },
  authorizationCodeLifetimeSeconds: { type: 'integer', check: within(10, 600) },
  allowPrivateNetworkBackchannel: { type: 'boolean' },
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

function checkClient(client: ProviderClient, index: number, serviceScopes: readonly string[]): void {
  const label = typeof client?.clientId === 'string' ? `client "${client.clientId}"` : `clients[${index}]`;
  checkOptions(`${FACTORY}: ${label}`, client as unknown, CLIENT_SCHEMA);
  const grants = client.grantTypes ?? ['authorization_code', 'refresh_token'];
  const interactive = grants.includes('authorization_code');
  if (interactive && (client.redirectUris ?? []).length === 0) fail(`${label} needs redirectUris for authorization_code`);
  if (!interactive && grants.includes('refresh_token')) fail(`${label}: refresh_token needs authorization_code`);
  if (grants.includes('client_credentials') && client.clientSecret === undefined) {
    fail(`${label}: client_credentials needs a clientSecret (a public client cannot prove it is the service)`);
  }
  for (const uri of client.redirectUris ?? []) absoluteUrl(uri, `${label} redirect URI`, true);
  for (const uri of client.postLogoutRedirectUris ?? []) absoluteUrl(uri, `${label} post-logout redirect URI`, true);
  if (client.backchannelLogoutUri !== undefined) absoluteUrl(client.backchannelLogoutUri, `${label} backchannelLogoutUri`, true);
  for (const scope of client.scopes ?? []) {
    if (!serviceScopes.includes(scope))
      fail(`${label}: scope "${scope}" is not one of serviceScopes (${serviceScopes.join(', ') || 'none'})`);
  }
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
  const seen = new Set<string>();
  options.clients.forEach((client, index) => {
    checkClient(client, index, serviceScopes);
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
  };
}
