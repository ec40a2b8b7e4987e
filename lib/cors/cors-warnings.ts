import { warnOnce } from '../util/options';
import type { OriginMatcher } from './origin-matcher';

// Plain http is acceptable for a developer's own machine, where nobody sits on the network path.
const LOOPBACK_HOST = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|[a-z0-9.-]+\.localhost)$/;

function isLoopbackOrigin(origin: string): boolean {
  return LOOPBACK_HOST.test(new URL(origin).hostname);
}

/**
 * Warns once at start-up when `credentials: true` meets an allowlist broader than the apps it was meant for:
 *
 * - a wildcard pattern: every matching subdomain — one that serves user uploads, a forgotten staging site, one taken
 *   over through a dangling DNS record — may then read authenticated answers, the session cookie riding along;
 * - a plain-http origin off loopback: anyone on the network path can inject a script into that origin's pages and
 *   read the same answers.
 *
 * The warning names the entry and the fix (list the exact https origins). It is not an error: a deployment may
 * have decided that every subdomain is trusted; it should be a decision, not an example copied.
 *
 * @example
 * if (credentials) warnCredentialedBreadth(compileOrigins(options.origins));
 */
export function warnCredentialedBreadth(matcher: OriginMatcher): void {
  for (const pattern of matcher.patterns) {
    const [, scheme = 'https', parent = '', port = ''] = /^(https?):\/\/\*\.([^:]+)(:\d+)?$/.exec(pattern) ?? [];
    const example = (label: string) => `"${scheme}://${label}.${parent}${port}"`;
    warnOnce(
      `corsPreflight:credentials:${pattern}`,
      `corsPreflight: credentials: true with the pattern "${pattern}" lets every subdomain of ${parent} — one serving ` +
        "user content, a forgotten or taken-over one — read authenticated responses with the user's cookies. List the " +
        `exact origins instead, e.g. origins: [${example('shop')}, ${example('admin')}].`,
    );
  }
  for (const origin of matcher.exactOrigins) {
    if (!origin.startsWith('http:') || isLoopbackOrigin(origin)) continue;
    warnOnce(
      `corsPreflight:credentials:${origin}`,
      `corsPreflight: credentials: true with the plain-http origin "${origin}" lets anyone on the network path inject a ` +
        `script there that reads authenticated responses. Serve it over https and list "${origin.replace(/^http:/, 'https:')}".`,
    );
  }
}
