import { OptionsError } from '../util/options';

/** Decides whether an `Origin` header value is one of the configured origins. */
export interface OriginMatcher {
  /** True when every origin is allowed (`origins: '*'`). */
  readonly any: boolean;
  /** The exact origins, as configured. */
  readonly exactOrigins: readonly string[];
  /** The wildcard patterns (`https://*.example.test`), as configured. */
  readonly patterns: readonly string[];
  matches(origin: string | undefined): boolean;
}

const WILDCARD_PLACEHOLDER = 'wildcard-label';
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function badEntry(entry: unknown, why: string): OptionsError {
  return new OptionsError(
    `corsPreflight: origins must list full origins like "https://app.example.com" or patterns like "https://*.example.com", got ${JSON.stringify(entry)}${why ? ` (${why})` : ''}`,
  );
}

function parseOrigin(entry: string): URL | undefined {
  try {
    return new URL(entry);
  } catch {
    return undefined;
  }
}

/** Validates an exact origin and returns it in the form browsers send (lower-case scheme and host, no default port). */
function exactOrigin(entry: string): string {
  if (entry === 'null') throw badEntry(entry, 'the "null" origin is shared by sandboxed frames and local files and cannot be trusted');
  const url = parseOrigin(entry);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) throw badEntry(entry, 'write the scheme, "https://" or "http://"');
  if (url.origin !== entry) {
    const hint = url.username || url.password ? 'no user or password' : `did you mean "${url.origin}"?`;
    throw badEntry(entry, hint);
  }
  return entry;
}

/**
 * Compiles `https://*.example.test[:port]` to an anchored expression: one or more DNS labels, then the parent
 * domain, the same scheme, and the port only when the pattern wrote one.
 */
function patternOrigin(entry: string): RegExp {
  const match = /^(https?):\/\/\*\.([^/:@?#]+)(?::(\d+))?$/.exec(entry);
  if (!match) throw badEntry(entry, 'a wildcard must be the whole leftmost label, as in "https://*.example.com"');
  const [, scheme, parent = '', port] = match;
  // Re-parse with a concrete label so the URL parser rejects what browsers would never send.
  const concrete = `${scheme}://${WILDCARD_PLACEHOLDER}.${parent}${port ? `:${port}` : ''}`;
  const url = parseOrigin(concrete);
  if (!url || url.origin !== concrete) throw badEntry(entry, 'write the parent domain in lower case and leave out a default port');
  if (!parent.includes('.')) throw badEntry(entry, 'the parent domain needs at least two labels, e.g. "*.example.com", not "*.com"');
  return new RegExp(`^${scheme}://(?:${LABEL}\\.)+${escapeRegExp(parent)}${port ? `:${port}` : ''}$`);
}

/**
 * Compiles the allowed origins once: exact origins go into a Set, `https://*.parent` patterns into anchored
 * expressions. Throws an `OptionsError` (a `TypeError`) quoting the first entry that is not a full origin.
 *
 * @example
 * const matcher = compileOrigins(['https://shop.example.test', 'https://*.example.test']);
 * matcher.matches('https://admin.example.test'); // true
 * matcher.matches('https://evil-example.test'); // false
 */
export function compileOrigins(origins: string | readonly string[]): OriginMatcher {
  const entries = typeof origins === 'string' ? [origins] : origins;
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new OptionsError(
      'corsPreflight: origins is required: a list such as ["https://shop.example.test", "https://*.example.test"], or "*"',
    );
  }
  if (entries.includes('*')) {
    if (entries.length > 1) throw new OptionsError('corsPreflight: origins "*" allows every origin; do not list others beside it');
    return Object.freeze({
      any: true,
      exactOrigins: Object.freeze([]),
      patterns: Object.freeze([]),
      matches: (origin: string | undefined) => typeof origin === 'string',
    });
  }
  const exact = new Set<string>();
  const patterns: RegExp[] = [];
  const patternEntries: string[] = [];
  for (const entry of entries) {
    if (typeof entry !== 'string') throw badEntry(entry, 'not a string');
    if (entry.includes('*')) {
      patterns.push(patternOrigin(entry));
      patternEntries.push(entry);
    } else exact.add(exactOrigin(entry));
  }
  return Object.freeze({
    any: false,
    exactOrigins: Object.freeze([...exact]),
    patterns: Object.freeze(patternEntries),
    matches(origin: string | undefined): boolean {
      if (typeof origin !== 'string') return false;
      if (exact.has(origin)) return true;
      for (const pattern of patterns) if (pattern.test(origin)) return true;
      return false;
    },
  });
}
