/**
 * The index tag of every session of `sub` at `issuer`. Scoped to the issuer: two providers may both issue
 * `sub: "alice"` for different people, so a logout token of one must never reach the other's users.
 *
 * @example
 * subjectTag('https://idp.example.test', 'alice'); // 'oidc-sub:https://idp.example.test|alice'
 */
export function subjectTag(issuer: string, sub: string): string {
  return `oidc-sub:${issuer}|${sub}`;
}

/**
 * The index tag of the sessions of one provider session (`sid`) at `issuer`; scoped to the issuer like
 * {@link subjectTag}, since `sid` values are only unique per provider.
 *
 * @example
 * providerSessionTag('https://idp.example.test', '6d1f…'); // 'oidc-sid:https://idp.example.test|6d1f…'
 */
export function providerSessionTag(issuer: string, sid: string): string {
  return `oidc-sid:${issuer}|${sid}`;
}

/**
 * The tags a login through `issuer` is indexed under, so back-channel logout can find its sessions by `sub` or
 * `sid`.
 *
 * @example
 * await establishLogin(req, user, { tags: loginTags(provider.issuer, claims.sub, claims.sid) });
 */
export function loginTags(issuer: string, sub: string, sid: string | undefined): string[] {
  return [subjectTag(issuer, sub), ...(sid === undefined ? [] : [providerSessionTag(issuer, sid)])];
}
