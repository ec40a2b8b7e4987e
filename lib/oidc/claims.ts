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

function firstString(...values: unknown[]): string | undefined {
  return values.find((value): value is string => typeof value === 'string' && value.length > 0);
}

/**
 * The default mapping: `name` = `name` | `preferred_username` | `email` (userinfo first, as it is the fuller
 * source) | the ID token's `sub`, `roles` from a `roles` claim that is an array of strings (anything else gives no
 * roles, so a malformed claim never grants a role), and `email` kept as an attribute when present. The user id is
 * not the mapping's: it is always `oidc:<issuer>|<sub>`.
 *
 * @example
 * defaultClaimsToUser({ sub: 'u1', name: 'Ada', roles: ['admin'] }); // { name: 'Ada', roles: ['admin'] }
 */
export function defaultClaimsToUser(claims: Record<string, unknown>, userinfo?: Record<string, unknown>): OidcUserProfile {
  const merged: Record<string, unknown> = { ...claims, ...userinfo, sub: claims.sub };
  const id = String(claims.sub);
  const rolesClaim = merged.roles;
  const roles = Array.isArray(rolesClaim) && rolesClaim.every((role) => typeof role === 'string') ? [...rolesClaim] : [];
  const email = firstString(merged.email);
  return {
    name: firstString(merged.name, merged.preferred_username, merged.email) ?? id,
    roles,
    ...(email ? { attributes: { email } } : {}),
  };
}
