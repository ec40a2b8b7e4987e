import { isIP } from 'node:net';
import { isWithinDomain, validateCookieDomain } from './cookie-domain';
import type { RedirectPolicy } from './types';

/** Options of {@link createRedirectPolicy} and {@link isSafeRedirect}. */
export interface RedirectPolicyOptions {
  /** Redirects may go to this domain and its subdomains, e.g. `example.test`. */
  parentDomain: string;
  /** Further exact origins (`https://partner.example.net`, `https://shop.example.test:8443`) that are allowed. */
  allowedOrigins?: readonly string[];
  /** Where an unsafe target is replaced to; relative targets are resolved against it. Must itself be safe. */
  defaultUrl: string;
  /** Allow `http:` targets (local development only). Default false: only `https:`. */
  allowHttp?: boolean;
  /** Non-default ports allowed on hosts of the parent domain, e.g. `[3000, 3001]` in development. Default none. */
  allowedPorts?: readonly number[];
}

/** Longer targets are refused outright: real return URLs are short, and clients cap query strings near 2 KB (§8). */
export const MAX_REDIRECT_LENGTH = 2048;

// Control characters (C0, DEL, C1), any whitespace, line/paragraph separators and backslashes: browsers strip or
// reinterpret them (`/\evil.com` is `//evil.com` to a browser), so their presence means someone is probing.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const FORBIDDEN_RAW = /[\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200f\u2028\u2029\u202f\u205f\u3000\ufeff\\]/;
// Control characters and backslashes percent-encoded; a later hop that decodes once would otherwise revive them.
const FORBIDDEN_ENCODED = /%(?:[01][0-9a-f]|5c|7f)/i;
// What must not appear once decoded (an encoded space is fine, an encoded backslash or newline is not).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const FORBIDDEN_DECODED = /[\u0000-\u001f\u007f-\u009f\\]/;
const ABSOLUTE_START = /^https?:\/\/[^/\\@]/i;

interface CompiledPolicy {
  parentDomain: string;
  dottedParent: string;
  origins: ReadonlySet<string>;
  ports: ReadonlySet<string>;
  allowHttp: boolean;
  base: URL;
  defaultUrl: string;
}

function decodesCleanly(target: string): string | undefined {
  let current = target;
  // Decode until stable (at most three rounds): `%252F` is `%2F` after one hop and `/` after two.
  for (let round = 0; round < 3; round += 1) {
    let next: string;
    try {
      next = decodeURIComponent(current);
    } catch {
      // A malformed sequence such as `100%` stays literal in browsers too, so it cannot hide anything.
      return current;
    }
    if (next === current) return current;
    if (FORBIDDEN_DECODED.test(next) || FORBIDDEN_ENCODED.test(next)) return undefined;
    current = next;
  }
  // Still changing after three rounds: nobody encodes a return URL that deeply except to smuggle something.
  return undefined;
}

function isIpLiteral(hostname: string): boolean {
  return isIP(hostname.replace(/^\[|\]$/g, '')) !== 0;
}

/** Returns the normalized absolute URL when `target` is safe under `policy`, otherwise undefined. */
function resolveSafe(target: unknown, policy: CompiledPolicy): string | undefined {
  if (typeof target !== 'string' || target.length === 0 || target.length > MAX_REDIRECT_LENGTH) return undefined;
  if (FORBIDDEN_RAW.test(target) || FORBIDDEN_ENCODED.test(target)) return undefined;
  const decoded = decodesCleanly(target);
  if (decoded === undefined) return undefined;

  if (target.charCodeAt(0) === 47 /* / */) {
    // `//host` is protocol-relative: another site. Checked on the decoded form too, for `/%2Fevil.com`.
    if (target.charCodeAt(1) === 47 || decoded.charCodeAt(1) === 47) return undefined;
    let url: URL;
    try {
      url = new URL(target, policy.base);
    } catch {
      return undefined;
    }
    return url.origin === policy.base.origin ? url.href : undefined;
  }

  if (!ABSOLUTE_START.test(target)) return undefined;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) return undefined;
  // Userinfo is how `https://example.test@evil.com` hides its real host; it has no place in a return URL.
  if (url.username !== '' || url.password !== '') return undefined;
  const authorityEnd = target.indexOf('/', target.indexOf('//') + 2);
  if (target.slice(0, authorityEnd === -1 ? undefined : authorityEnd).includes('@')) return undefined;
  if (isIpLiteral(url.hostname)) return undefined;
  if (policy.origins.has(url.origin)) return url.href;
  if (!isWithinDomain(url.hostname, policy.parentDomain, policy.dottedParent)) return undefined;
  if (url.port !== '' && !policy.ports.has(url.port)) return undefined;
  return url.href;
}

function normalizeOrigin(origin: unknown, allowHttp: boolean): string {
  const fix = 'list full origins like "https://app.example.test" (scheme, host and optional port, no path)';
  if (typeof origin !== 'string') throw new TypeError(`createRedirectPolicy: allowedOrigins must ${fix}, got ${typeof origin}`);
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new TypeError(`createRedirectPolicy: allowedOrigins must ${fix}, got "${origin}"`);
  }
  if (url.origin !== origin.toLowerCase().replace(/\/$/, '') || url.origin === 'null' || !/^[a-z0-9.-]+$/.test(url.hostname)) {
    throw new TypeError(`createRedirectPolicy: allowedOrigins must ${fix}, got "${origin}"`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) {
    throw new TypeError(`createRedirectPolicy: allowedOrigins must use https (set allowHttp for local development), got "${origin}"`);
  }
  if (isIpLiteral(url.hostname)) {
    throw new TypeError(`createRedirectPolicy: allowedOrigins must name hosts, not IP addresses, got "${origin}"`);
  }
  return url.origin;
}

function compile(options: RedirectPolicyOptions, caller: string): CompiledPolicy {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${caller}: pass options such as { parentDomain: 'example.test', defaultUrl: 'https://www.example.test/' }`);
  }
  const parentDomain = validateCookieDomain(options.parentDomain, `${caller}: parentDomain`);
  const allowHttp = options.allowHttp ?? false;
  if (typeof allowHttp !== 'boolean') throw new TypeError(`${caller}: allowHttp must be a boolean`);
  if (options.allowedOrigins !== undefined && !Array.isArray(options.allowedOrigins)) {
    throw new TypeError(`${caller}: allowedOrigins must be an array of origins like "https://app.example.test"`);
  }
  const origins = new Set((options.allowedOrigins ?? []).map((origin) => normalizeOrigin(origin, allowHttp)));
  if (options.allowedPorts !== undefined && !Array.isArray(options.allowedPorts)) {
    throw new TypeError(`${caller}: allowedPorts must be an array of port numbers such as [3000]`);
  }
  const ports = new Set(
    (options.allowedPorts ?? []).map((port) => {
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        throw new TypeError(`${caller}: allowedPorts must hold port numbers 1–65535, got ${String(port)}`);
      }
      return String(port);
    }),
  );
  if (typeof options.defaultUrl !== 'string') {
    throw new TypeError(`${caller}: defaultUrl must be an absolute URL on ${parentDomain}, e.g. "https://www.${parentDomain}/"`);
  }
  let base: URL;
  try {
    base = new URL(options.defaultUrl);
  } catch {
    throw new TypeError(`${caller}: defaultUrl must be an absolute URL on ${parentDomain}, got "${options.defaultUrl}"`);
  }
  const draft: CompiledPolicy = { parentDomain, dottedParent: `.${parentDomain}`, origins, ports, allowHttp, base, defaultUrl: base.href };
  const safeDefault = resolveSafe(options.defaultUrl, draft);
  if (safeDefault === undefined) {
    throw new TypeError(
      `${caller}: defaultUrl "${options.defaultUrl}" is not itself a safe target; use an https URL on ${parentDomain} or one of allowedOrigins`,
    );
  }
  return { ...draft, defaultUrl: safeDefault };
}

/**
 * Builds the redirect-target check every redirect of the kit goes through. A target is safe when it is an
 * absolute `https:` URL on the parent domain or one of its subdomains (default port, or one of `allowedPorts`),
 * an exact allowed origin, or a path starting with a single `/`, resolved against `defaultUrl`. Everything else
 * (other hosts, `//evil.com`, backslashes, userinfo, IP literals, `javascript:`, control characters, encoded
 * variants, more than 2048 characters, non-strings) is unsafe and `sanitize` replaces it by `defaultUrl`.
 *
 * @example
 * const redirects = createRedirectPolicy({ parentDomain: 'example.test', defaultUrl: 'https://www.example.test/' });
 * res.redirect(303, redirects.sanitize(req.query.return_to));
 */
export function createRedirectPolicy(options: RedirectPolicyOptions): RedirectPolicy {
  const policy = compile(options, 'createRedirectPolicy');
  return {
    defaultUrl: policy.defaultUrl,
    isSafe: (target: unknown): boolean => resolveSafe(target, policy) !== undefined,
    sanitize: (target: unknown): string => resolveSafe(target, policy) ?? policy.defaultUrl,
  };
}

const compiledByOptions = new WeakMap<RedirectPolicyOptions, CompiledPolicy>();

/**
 * One-off form of {@link createRedirectPolicy}: true when `target` is a safe redirect target. The compiled
 * options are cached per options object, so pass the same object each time (or build a policy once).
 *
 * @example
 * const options = { parentDomain: 'example.test', defaultUrl: 'https://www.example.test/' };
 * isSafeRedirect('https://shop.example.test/cart', options); // true
 * isSafeRedirect('https://example.test@evil.com/', options); // false
 */
export function isSafeRedirect(target: unknown, options: RedirectPolicyOptions): boolean {
  let policy = compiledByOptions.get(options);
  if (!policy) {
    policy = compile(options, 'isSafeRedirect');
    compiledByOptions.set(options, policy);
  }
  return resolveSafe(target, policy) !== undefined;
}
