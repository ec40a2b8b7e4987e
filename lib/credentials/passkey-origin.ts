/**
 * Whether a WebAuthn response's origin is a site of the relying party `rpId` (the parent domain): `https://` on the
 * domain itself or any subdomain, any port; plain `http://` only for domains under `localhost`, which browsers
 * treat as secure contexts for local development. The origin must be exactly what a browser writes (no path, no
 * user info, lower case), so a look-alike such as `https://example.com.evil.test` never matches.
 *
 * @example
 * passkeyOriginAllowed('https://shop.example.com', 'example.com');       // true
 * passkeyOriginAllowed('https://example.com.evil.test', 'example.com'); // false
 * passkeyOriginAllowed('http://auth.sso.localhost:8080', 'sso.localhost'); // true
 */
export function passkeyOriginAllowed(origin: string, rpId: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin !== origin) return false;
  const localhost = rpId === 'localhost' || rpId.endsWith('.localhost');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && localhost)) return false;
  return url.hostname === rpId || url.hostname.endsWith(`.${rpId}`);
}
