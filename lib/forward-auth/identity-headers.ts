/** The headers a granted sub-request answers with, for the proxy to copy onto the request to the upstream. */
export interface IdentityHeaderNames {
  /** The user id (`<source>|<subject>`, or a token's `sub`). Default `Remote-User`. */
  user?: string;
  /** The display name. Default `Remote-Name`. */
  name?: string;
  /** The email address, when the session has one (`attributes.email`). Default `Remote-Email`. */
  email?: string;
  /** The roles, comma-separated. Default `Remote-Groups`. */
  groups?: string;
}

/** What an identity header says. */
export interface ForwardedIdentity {
  user: string;
  name: string | undefined;
  email: string | undefined;
  groups: readonly string[];
}

export const DEFAULT_IDENTITY_HEADERS: Required<IdentityHeaderNames> = Object.freeze({
  user: 'Remote-User',
  name: 'Remote-Name',
  email: 'Remote-Email',
  groups: 'Remote-Groups',
});

/**
 * A header value that survives every proxy: visible ASCII and spaces as they are, anything else (non-ASCII letters,
 * control characters) and `%` percent-encoded as UTF-8, so `Zoë` reads `Zo%C3%AB` and no value can end a header
 * line. In `Remote-Groups` a comma inside a role is encoded too, so the list splits unambiguously.
 *
 * @example
 * headerValue('Zoë'); // 'Zo%C3%AB'
 */
export function headerValue(text: string, extra?: RegExp): string {
  let encoded = text.replace(/[^\x20-\x7e]|%/gu, (char) => encodeURIComponent(char));
  if (extra !== undefined) encoded = encoded.replace(extra, (char) => encodeURIComponent(char));
  return encoded;
}

/**
 * The identity headers to answer with, by name.
 *
 * @example
 * identityHeaders({ user: 'directory|alice', name: 'Alice', email: undefined, groups: ['staff'] }, DEFAULT_IDENTITY_HEADERS);
 */
export function identityHeaders(identity: ForwardedIdentity, names: Required<IdentityHeaderNames>): Record<string, string> {
  const headers: Record<string, string> = { [names.user]: headerValue(identity.user) };
  if (identity.name !== undefined) headers[names.name] = headerValue(identity.name);
  if (identity.email !== undefined) headers[names.email] = headerValue(identity.email);
  headers[names.groups] = identity.groups.map((group) => headerValue(group, /,/g)).join(',');
  return headers;
}
