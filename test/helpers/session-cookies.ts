// cookie-signature (a dependency of express-session) ships no types; this is the part the tests use.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const signature = require('cookie-signature') as { sign(value: string, secret: string): string };

/** A session cookie pair `name=s%3A<id>.<signature>` signed the way express-session signs, with any secret. */
export function forgeSessionCookie(sessionId: string, secret: string, name = '__Secure-sso.sid'): string {
  return `${name}=${encodeURIComponent(`s:${signature.sign(sessionId, secret)}`)}`;
}
