/**
 * What a claims mapping returns: the user's name, roles and attributes. The identity itself is always
 * (issuer, `sub`); mapping it onto a local account is `ssoSession({ linkAccount })`'s job.
 */
export interface OidcUserProfile {
  name: string;
  roles: string[];
  /** Extra identity details kept on the session user; never secrets or tokens. */
  attributes?: Record<string, string | number | boolean | null>;
}

/** Maps verified ID-token claims (and the userinfo answer, when fetched) to the session user. */
export type ClaimsToUser = (claims: Record<string, unknown>, userinfo?: Record<string, unknown>) => OidcUserProfile;

/**
 * Where a provider trusted for roles puts them: a claim name, taken literally so namespaced claims such as
 * `"https://example.test/roles"` work, or a path of names into nested claims (`['realm_access', 'roles']`).
 */
export type RolesClaim = string | readonly string[];

function firstString(...values: unknown[]): string | undefined {
  return values.find((value): value is string => typeof value === 'string' && value.length > 0);
}

/**
 * The claims the mappings read: the userinfo answer over the ID token (it is the fuller source), but always the ID
 * token's `sub`.
 */
function mergedClaims(claims: Record<string, unknown>, userinfo?: Record<string, unknown>): Record<string, unknown> {
  return { ...claims, ...userinfo, sub: claims.sub };
}

/**
 * The roles a provider trusted for roles asserts at `rolesClaim`: an array of strings (or a single string) there,
 * otherwise none, so a malformed claim never grants a role. The userinfo answer, when given, is read first.
 *
 * @example
 * rolesFromClaims({ sub: 'u1', realm_access: { roles: ['admin'] } }, ['realm_access', 'roles']); // ['admin']
 */
export function rolesFromClaims(claims: Record<string, unknown>, rolesClaim: RolesClaim, userinfo?: Record<string, unknown>): string[] {
  const path = typeof rolesClaim === 'string' ? [rolesClaim] : rolesClaim;
  let value: unknown = mergedClaims(claims, userinfo);
  for (const name of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.prototype.hasOwnProperty.call(value, name)) {
      return [];
    }
    value = (value as Record<string, unknown>)[name];
  }
  if (typeof value === 'string' && value.length > 0) return [value];
  return Array.isArray(value) && value.every((role) => typeof role === 'string') ? [...value] : [];
}

/**
 * The default mapping: `name` = `name` | `preferred_username` | `email` (userinfo first, as it is the fuller
 * source) | the ID token's `sub`, and `email` kept as an attribute when present. It grants **no roles**: roles come
 * only from a provider configured as trusted for them (`oidcProvider({ rolesClaim })`) or from the app's own
 * `claimsToUser`. The user id is not the mapping's either: it is always `oidc:<issuer>|<sub>`.
 *
 * @example
 * defaultClaimsToUser({ sub: 'u1', name: 'Ada', roles: ['admin'] }); // { name: 'Ada', roles: [] }
 */
export function defaultClaimsToUser(claims: Record<string, unknown>, userinfo?: Record<string, unknown>): OidcUserProfile {
  const merged = mergedClaims(claims, userinfo);
  const email = firstString(merged.email);
  return {
    name: firstString(merged.name, merged.preferred_username, merged.email) ?? String(claims.sub),
    roles: [],
    ...(email ? { attributes: { email } } : {}),
  };
}
