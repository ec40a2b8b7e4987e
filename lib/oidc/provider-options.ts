import { sourceProblem } from '../session/identity';
import type { KeyValueStore } from '../store/port';
import { checkOptions, OptionsError, refuseInProduction, within, type OptionSchema } from '../util/options';
import type { ClaimsToUser, RolesClaim } from './claims';

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

/** Options of `oidcProvider`. */
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
  /**
   * Trusts this provider for roles: the claim (or path into nested claims) its roles are read from, e.g. `'roles'`,
   * `'https://example.test/roles'` or `['realm_access', 'roles']`. Default: none — a provider's claims grant no
   * role, so a partner IdP cannot make its users admins here. Not together with `claimsToUser` (which decides roles
   * itself).
   */
  rolesClaim?: RolesClaim;
  /**
   * Believe the ID token's `acr` and `amr` (how the provider says the user authenticated), so step-up rules and
   * `requireAuth({ acr })` count a second factor it reports. Default: true for a provider trusted for roles
   * (`rolesClaim`), false otherwise: a partner IdP's login then counts as one factor (`amr: ['fed']`, `acr` `1fa`),
   * whatever it claims.
   */
  trustAuthenticationClaims?: boolean;
  /**
   * Accept back-channel logout tokens without the explicit `typ` `logout+jwt` (Back-Channel Logout 1.0 §2.4), for an
   * IdP that does not type them; a token typed as anything else (an ID or access token) is still refused. Default false.
   */
  allowUntypedLogoutTokens?: boolean;
  /** How old a logout token (its `iat`) may be, in seconds. Default 120; 10 to 600. */
  logoutTokenMaxAgeSeconds?: number;
  /**
   * The app's own mapping of verified claims to the session user's name, roles and attributes (never its id: that
   * is always `oidc:<issuer>|<sub>`). Default: name and email from the claims, roles from `rolesClaim` or none.
   */
  claimsToUser?: ClaimsToUser;
  /** Call the userinfo endpoint after the code exchange (its `sub` must equal the ID token's). Default false. */
  fetchUserinfo?: boolean;
  /** Deadline of every call to the provider, in seconds (fractions allowed). Default 5. */
  timeoutSeconds?: number;
  /** Where the provider sends the browser after RP-initiated logout; must be registered there. Default: none. */
  postLogoutRedirectUri?: string;
  /** How long a discovery document is reused, in seconds. Default 3600. */
  discoveryCacheLifetimeSeconds?: number;
  /**
   * The kit store for this provider's shared state: back-channel logout `jti` replay marks and the refresh lock
   * that lets one instance refresh a session's tokens while the others wait. Required by `backchannelLogout` and
   * `oidcContext` unless given to them directly. Default: none.
   */
  store?: KeyValueStore;
  /**
   * Accept `http:` URLs for the issuer and endpoints (a provider on this machine during development or tests).
   * Refused when `NODE_ENV=production`; warns once. Default false.
   */
  allowInsecureLocalDevelopment?: boolean;
}

/** The validated, normalized form of {@link OidcProviderOptions}. */
export interface ResolvedProviderOptions {
  name: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  scope: string;
  tokenEndpointAuthMethod: 'client_secret_basic' | 'client_secret_post';
  idTokenSigningAlg: string;
  clockToleranceSeconds: number;
  rolesClaim: readonly string[] | undefined;
  trustAuthenticationClaims: boolean;
  allowUntypedLogoutTokens: boolean;
  logoutTokenMaxAgeSeconds: number;
  claimsToUser: ClaimsToUser | undefined;
  fetchUserinfo: boolean;
  timeoutSeconds: number;
  postLogoutRedirectUri: string | undefined;
  discoveryCacheLifetimeSeconds: number;
  store: KeyValueStore | undefined;
  insecureHttp: boolean;
  endpoints: (OidcEndpoints & { issParameterSupported: boolean }) | undefined;
}

// The asymmetric algorithms the kit's verifier supports; HMAC would make the client secret a signing key.
const ASYMMETRIC_ALGS = ['RS256', 'PS256', 'ES256'];
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post'];
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const warnedInsecure = new Set<string>();

const nonEmpty = (value: string): string | undefined => (value.length === 0 ? 'must not be empty' : undefined);
const positiveAtMost =
  (max: number) =>
  (value: number): string | undefined =>
    value <= 0 || value > max ? `must be above 0 and at most ${max} seconds, got ${value}` : undefined;

/** Every option of `oidcProvider`, checked by the kit's one options rule (also reused by `oidc()`). */
export const PROVIDER_OPTION_SCHEMA: OptionSchema = {
  name: {
    type: 'string',
    check: (value: string) => (NAME.test(value) ? undefined : `must be lowercase letters, digits and dashes like "corp", got "${value}"`),
  },
  issuer: { type: 'string', required: true, expected: 'an https URL like "https://idp.example.test"' },
  endpoints: { type: 'object', expected: 'an object { authorization, token, jwks, userinfo?, endSession? }' },
  clientId: { type: 'string', required: true, check: nonEmpty },
  clientSecret: {
    type: 'string',
    required: true,
    expected: 'a non-empty string (is the environment variable holding it set?)',
    check: (value: string) => (value.length === 0 ? 'must be a non-empty string (is the environment variable holding it set?)' : undefined),
  },
  redirectUri: { type: 'string', required: true, expected: 'the absolute URL of the oidcCallback route' },
  scopes: {
    type: 'string[]',
    expected: 'an array of scope tokens like ["openid", "profile"]',
    check: (value: string[]) =>
      !value.every((scope) => SCOPE_TOKEN.test(scope))
        ? 'must be an array of scope tokens like ["openid", "profile"]'
        : !value.includes('openid')
          ? `must include "openid" (this is an OpenID Connect login), got ${JSON.stringify(value)}`
          : undefined,
  },
  tokenEndpointAuthMethod: {
    type: 'string',
    check: (value: string) =>
      AUTH_METHODS.includes(value) ? undefined : `must be "client_secret_basic" or "client_secret_post", got "${value}"`,
  },
  idTokenSigningAlg: {
    type: 'string',
    check: (value: string) =>
      ASYMMETRIC_ALGS.includes(value)
        ? undefined
        : `must be one of ${ASYMMETRIC_ALGS.join(', ')} ("none" and HMAC are refused), got "${value}"`,
  },
  clockToleranceSeconds: {
    type: 'number',
    check: (value: number) =>
      value < 0
        ? `must be 0 or more, got ${value}`
        : value > 300
          ? 'above 300 would accept long-expired tokens; use at most 300'
          : undefined,
  },
  rolesClaim: {
    type: ['string', 'string[]'],
    expected: 'a claim name like "roles" or a path like ["realm_access", "roles"]',
    check: (value: string | string[]) =>
      (typeof value === 'string' ? [value] : value).length === 0 ||
      (typeof value === 'string' ? [value] : value).some((name) => name === '')
        ? 'must name a claim ("roles") or a non-empty path of claim names (["realm_access", "roles"])'
        : undefined,
  },
  claimsToUser: { type: 'function', expected: 'a function (claims, userinfo) => ({ name, roles })' },
  trustAuthenticationClaims: { type: 'boolean' },
  allowUntypedLogoutTokens: { type: 'boolean' },
  logoutTokenMaxAgeSeconds: { type: 'integer', check: within(10, 600) },
  fetchUserinfo: { type: 'boolean' },
  timeoutSeconds: { type: 'number', check: positiveAtMost(300) },
  postLogoutRedirectUri: { type: 'string' },
  discoveryCacheLifetimeSeconds: { type: 'number', check: positiveAtMost(7 * 86400) },
  store: {
    type: 'object',
    expected: 'a KeyValueStore such as new RedisStore(url)',
    check: (value: { setIfAbsent?: unknown }) =>
      typeof value.setIfAbsent === 'function' ? undefined : 'must be a KeyValueStore such as new RedisStore(url)',
  },
  allowInsecureLocalDevelopment: { type: 'boolean' },
};

/**
 * Checks a URL option: absolute, https (http only with `allowInsecureLocalDevelopment`, or for a server-to-server
 * endpoint on a loopback host, like the tokens module's JWKS cache: such traffic never leaves the machine), no
 * credentials, no fragment. Throws an `OptionsError` naming `option`, prefixed with `who`.
 *
 * @example
 * checkProviderUrl('oidcProvider', 'issuer', 'https://idp.example.test', false);
 */
export function checkProviderUrl(who: string, option: string, value: unknown, insecureAllowed: boolean, backChannel = false): string {
  const fail = (message: string): never => {
    throw new OptionsError(`${who}: ${option} ${message}`);
  };
  if (typeof value !== 'string' || value.length === 0) fail(`must be an absolute URL string, got ${JSON.stringify(value)}`);
  let url: URL | undefined;
  try {
    url = new URL(value as string);
  } catch {
    fail(`must be an absolute URL like "https://idp.example.test", got "${String(value)}"`);
  }
  const parsed = url as URL;
  const loopback = backChannel && LOOPBACK_HOSTS.has(parsed.hostname);
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && (insecureAllowed || loopback))) {
    fail(
      `must use https:, got "${String(value)}" (http: only with allowInsecureLocalDevelopment${backChannel ? ', or on a loopback host' : ''})`,
    );
  }
  if (parsed.username || parsed.password) fail(`must not carry credentials, got "${parsed.protocol}//…@${parsed.host}"`);
  if (parsed.hash) fail(`must not contain a #fragment, got "${String(value)}"`);
  return value as string;
}

const ENDPOINT_SCHEMA: OptionSchema = {
  authorization: { type: 'string', required: true },
  token: { type: 'string', required: true },
  jwks: { type: 'string', required: true },
  userinfo: { type: 'string' },
  endSession: { type: 'string' },
  issParameterSupported: { type: 'boolean' },
};

function resolveEndpoints(who: string, endpoints: OidcEndpoints | undefined, insecure: boolean): ResolvedProviderOptions['endpoints'] {
  if (endpoints === undefined) return undefined;
  checkOptions(`${who}: endpoints`, endpoints as unknown, ENDPOINT_SCHEMA);
  const url = (option: keyof OidcEndpoints, backChannel: boolean): string =>
    checkProviderUrl(who, `endpoints.${option}`, endpoints[option], insecure, backChannel);
  return {
    authorization: url('authorization', false),
    token: url('token', true),
    jwks: url('jwks', true),
    ...(endpoints.userinfo === undefined ? {} : { userinfo: url('userinfo', true) }),
    ...(endpoints.endSession === undefined ? {} : { endSession: url('endSession', false) }),
    issParameterSupported: endpoints.issParameterSupported === true,
  };
}

/**
 * Validates `oidcProvider` options through the one options rule and normalizes them. `who` names the factory in
 * messages (`oidcProvider`, or `oidc` when the router builds the provider). The options object is only read.
 *
 * @example
 * const resolved = resolveProviderOptions('oidcProvider', options);
 */
export function resolveProviderOptions(who: string, options: OidcProviderOptions): ResolvedProviderOptions {
  checkOptions(who, options as unknown, PROVIDER_OPTION_SCHEMA, { exclusive: [['claimsToUser', 'rolesClaim']] });
  const fail = (message: string): never => {
    throw new OptionsError(`${who}: ${message}`);
  };
  const insecure = options.allowInsecureLocalDevelopment === true;
  if (insecure) {
    refuseInProduction(who);
    if (!warnedInsecure.has(who)) {
      warnedInsecure.add(who);
      console.warn(`[express-sso-kit] ${who}: allowInsecureLocalDevelopment accepts http: provider URLs. Never do this in production.`);
    }
  }
  const issuer = checkProviderUrl(who, 'issuer', options.issuer, insecure);
  // The issuer names the identity source of every login (`oidc:<issuer>`): refuse one that cannot, now, not at the first login.
  if (sourceProblem(`oidc:${issuer}`) !== undefined) {
    fail(
      `issuer must be at most 512 printable ASCII characters without spaces or "|" (it names the identity source "oidc:<issuer>"), got "${issuer}"`,
    );
  }
  const endpoints = resolveEndpoints(who, options.endpoints, insecure);
  const fetchUserinfo = options.fetchUserinfo ?? false;
  if (fetchUserinfo && endpoints && !endpoints.userinfo) fail('fetchUserinfo needs endpoints.userinfo');
  const rolesClaim = options.rolesClaim;
  return {
    name: options.name ?? 'oidc',
    issuer,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    redirectUri: checkProviderUrl(who, 'redirectUri', options.redirectUri, insecure),
    scope: [...new Set(options.scopes ?? ['openid', 'profile', 'email'])].join(' '),
    tokenEndpointAuthMethod: options.tokenEndpointAuthMethod ?? 'client_secret_basic',
    idTokenSigningAlg: options.idTokenSigningAlg ?? 'RS256',
    clockToleranceSeconds: options.clockToleranceSeconds ?? 30,
    rolesClaim: rolesClaim === undefined ? undefined : typeof rolesClaim === 'string' ? [rolesClaim] : [...rolesClaim],
    claimsToUser: options.claimsToUser,
    trustAuthenticationClaims: options.trustAuthenticationClaims ?? rolesClaim !== undefined,
    allowUntypedLogoutTokens: options.allowUntypedLogoutTokens === true,
    logoutTokenMaxAgeSeconds: options.logoutTokenMaxAgeSeconds ?? 120,
    fetchUserinfo,
    timeoutSeconds: options.timeoutSeconds ?? 5,
    postLogoutRedirectUri:
      options.postLogoutRedirectUri === undefined
        ? undefined
        : checkProviderUrl(who, 'postLogoutRedirectUri', options.postLogoutRedirectUri, insecure),
    discoveryCacheLifetimeSeconds: options.discoveryCacheLifetimeSeconds ?? 3600,
    store: options.store,
    insecureHttp: insecure,
    endpoints,
  };
}
