import { OptionsError } from '../util/options';
import { isThumbprint } from './dpop/proof-key';

/** What {@link TokenService.issueAccessToken} takes. */
export interface AccessTokenInput {
  subject: string;
  audience: string | string[];
  /** The OAuth client the token is issued to (`client_id`, required by RFC 9068 §2.2). */
  clientId: string;
  /** Space-separated scopes, or a list. */
  scope?: string | string[];
  roles?: string[];
  /** The grant the token descends from (`gid`): revoking it, or reusing one of its refresh tokens, ends the token. */
  grantId?: string;
  /**
   * How the user authenticated (the session's `authenticationOf(user)`): signed as `acr`, `amr` and `auth_time`
   * (RFC 9068 §2.2.1), so `requireBearer({ acr, maxAgeSeconds })` can require a level of the token.
   */
  authentication?: TokenAuthentication;
  expiresInSeconds?: number;
  /**
   * Binds the token to a DPoP key (RFC 9449 §6): its RFC 7638 thumbprint, the `jkt` of the token request's verified
   * proof, signed as `cnf.jkt`. A resource then accepts the token only with a proof of that key.
   */
  dpopJkt?: string;
}

/** The authentication an access token states. */
export interface TokenAuthentication {
  acr?: string;
  amr?: readonly string[];
  /** Epoch seconds. */
  authTime?: number;
}

/** What {@link TokenService.issueIdToken} takes. */
export interface IdTokenInput {
  subject: string;
  /** The client id of the relying party. */
  audience: string;
  name?: string;
  nonce?: string;
  /** When the user authenticated, epoch seconds (`auth_time`). */
  authTime?: number;
  /** Session id for logout (`sid`). */
  sessionId?: string;
  /** Further claims (e.g. `email`); they cannot override the registered ones. */
  claims?: Record<string, unknown>;
  expiresInSeconds?: number;
}

/** The claims a token gets besides iss, sub, aud, iat, exp and jti, which the signer adds. */
export interface TokenContent {
  subject: string;
  audience: string | string[];
  expiresIn: number;
  claims: Record<string, unknown>;
}

const REGISTERED = new Set([
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'nbf',
  'jti',
  'nonce',
  'auth_time',
  'sid',
  'azp',
  'client_id',
  'gid',
  'cnf',
]);

/** A whole number of seconds from 1 to `max`, or the fallback when absent. */
export function lifetimeOf(owner: string, name: string, value: unknown, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw new OptionsError(`${owner}: ${name} must be a whole number of seconds from 1 to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** A non-empty string, or an {@link OptionsError} naming it. */
export function nonEmpty(owner: string, name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '')
    throw new OptionsError(`${owner}: ${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  return value;
}

function audienceOf(owner: string, value: unknown): string | string[] {
  if (typeof value === 'string' && value !== '') return value;
  if (Array.isArray(value) && value.length > 0 && value.every((entry) => typeof entry === 'string' && entry !== '')) return [...value];
  throw new OptionsError(`${owner}: audience must be a non-empty string or array of strings, got ${JSON.stringify(value)}`);
}

/**
 * The `acr`, `amr` and `auth_time` claims of a token's authentication, checked.
 *
 * @example
 * authenticationClaims('TokenService.issueAccessToken', { acr: '2fa', amr: ['pwd', 'otp'], authTime: 1800000000 });
 */
export function authenticationClaims(owner: string, authentication: TokenAuthentication | undefined): Record<string, unknown> {
  if (authentication === undefined) return {};
  const { acr, amr, authTime } = authentication;
  if (acr !== undefined && (typeof acr !== 'string' || acr === ''))
    throw new OptionsError(`${owner}: authentication.acr must be a non-empty string`);
  if (amr !== undefined && !(Array.isArray(amr) && amr.every((method) => typeof method === 'string' && method !== ''))) {
    throw new OptionsError(`${owner}: authentication.amr must be an array of method references such as "pwd"`);
  }
  if (authTime !== undefined && !(Number.isInteger(authTime) && authTime > 0)) {
    throw new OptionsError(`${owner}: authentication.authTime must be epoch seconds`);
  }
  return {
    ...(acr === undefined ? {} : { acr }),
    ...(amr === undefined || amr.length === 0 ? {} : { amr: [...amr] }),
    ...(authTime === undefined ? {} : { auth_time: authTime }),
  };
}

/**
 * The content of an RFC 9068 access token: `client_id` always (with iss, exp, aud, sub, iat and jti from the signer,
 * every claim RFC 9068 section 2.2 requires), `scope`, `roles` and the grant (`gid`) when given.
 *
 * @example
 * const content = accessTokenContent({ subject: 'alice', audience: 'api', clientId: 'shop' }, 3600, 86400);
 */
export function accessTokenContent(input: AccessTokenInput, defaultLifetime: number, maxLifetime: number): TokenContent {
  const owner = 'TokenService.issueAccessToken';
  const subject = nonEmpty(owner, 'subject', input?.subject);
  const audience = audienceOf(owner, input.audience);
  // RFC 9068 §2.2: a token typed at+jwt without client_id would claim a format it does not follow.
  const clientId = nonEmpty(owner, 'clientId', input.clientId);
  const expiresIn = lifetimeOf(owner, 'expiresInSeconds', input.expiresInSeconds, defaultLifetime, maxLifetime);
  const scope = Array.isArray(input.scope) ? input.scope.join(' ') : input.scope;
  if (scope !== undefined && typeof scope !== 'string') throw new OptionsError(`${owner}: scope must be a string or an array of strings`);
  if (input.roles !== undefined && (!Array.isArray(input.roles) || input.roles.some((role) => typeof role !== 'string'))) {
    throw new OptionsError(`${owner}: roles must be an array of strings`);
  }
  const claims: Record<string, unknown> = {
    client_id: clientId,
    ...(scope ? { scope } : {}),
    ...(input.roles ? { roles: [...input.roles] } : {}),
    ...(input.grantId !== undefined ? { gid: nonEmpty(owner, 'grantId', input.grantId) } : {}),
    ...authenticationClaims(owner, input.authentication),
  };
  if (input.dpopJkt !== undefined) {
    if (!isThumbprint(input.dpopJkt)) {
      throw new OptionsError(
        `${owner}: dpopJkt must be an RFC 7638 thumbprint (43 base64url characters): the jkt of a verified DPoP proof`,
      );
    }
    claims.cnf = { jkt: input.dpopJkt };
  }
  return { subject, audience, expiresIn, claims };
}

/**
 * The content of an OpenID Connect ID token: `name`, `nonce`, `auth_time`, `sid` when given, and extra claims that
 * may not override registered ones.
 *
 * @example
 * const content = idTokenContent({ subject: 'alice', audience: 'shop', nonce }, 300, 3600);
 */
export function idTokenContent(input: IdTokenInput, defaultLifetime: number, maxLifetime: number): TokenContent {
  const owner = 'TokenService.issueIdToken';
  const subject = nonEmpty(owner, 'subject', input?.subject);
  const audience = nonEmpty(owner, 'audience', input.audience);
  const expiresIn = lifetimeOf(owner, 'expiresInSeconds', input.expiresInSeconds, defaultLifetime, maxLifetime);
  const extra = input.claims ?? {};
  for (const name of Object.keys(extra)) {
    if (REGISTERED.has(name))
      throw new OptionsError(`${owner}: claims must not set the registered claim "${name}"; use the dedicated option`);
  }
  const claims: Record<string, unknown> = {
    ...extra,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.nonce !== undefined ? { nonce: nonEmpty(owner, 'nonce', input.nonce) } : {}),
    ...(input.authTime !== undefined ? { auth_time: input.authTime } : {}),
    ...(input.sessionId !== undefined ? { sid: nonEmpty(owner, 'sessionId', input.sessionId) } : {}),
  };
  return { subject, audience, expiresIn, claims };
}
