import { isIP } from 'node:net';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, refuseInProduction, type OptionSchema } from '../util/options';
import { isWithinDomain, validateCookieDomain } from './cookie-domain';
import { refuseRenamedOptions } from './renamed-options';
import type { RedirectPolicy } from './types';

/** Options of {@link createRedirectPolicy} and {@link isSafeRedirect}. */
export interface RedirectPolicyOptions {
  /** Redirects may go to this domain and its subdomains, e.g. `example.test`. */
  parentDomain: string;
  /** Further exact origins (`https://partner.example.net`, `https://shop.example.test:8443`) that are allowed. */
  allowedOrigins?: readonly string[];
  /** Where an unsafe target is replaced to; relative targets are resolved against it. Must itself be safe. */
  defaultUrl: string;
  /** Allow `http:` targets: plain-http local development only. Refused when `NODE_ENV=production`. Default false. */
  allowInsecureLocalDevelopment?: boolean;
  /** Non-default ports allowed on hosts of the parent domain, e.g. `[3000, 3001]` in development. Default none. */
  allowedPorts?: readonly number[];
}

/** Longer targets are refused outright: real return URLs are short, and some clients cap a URL near 2 KB. */
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

/** Receives why a target was unsafe (for the debug channel); only called when someone listens. */
type Explain = ((reason: string) => void) | undefined;

function unsafe(explain: Explain, reason: string): undefined {
  explain?.(reason);
  return undefined;
}

/** Returns the normalized absolute URL when `target` is safe under `policy`, otherwise undefined (and says why). */
function resolveSafe(target: unknown, policy: CompiledPolicy, explain?: Explain): string | undefined {
  if (typeof target !== 'string' || target.length === 0) return unsafe(explain, 'not a non-empty string');
  if (target.length > MAX_REDIRECT_LENGTH) return unsafe(explain, `longer than ${MAX_REDIRECT_LENGTH} characters`);
  if (FORBIDDEN_RAW.test(target) || FORBIDDEN_ENCODED.test(target)) {
    return unsafe(explain, 'control characters, whitespace or backslashes (or their encodings)');
  }
  const decoded = decodesCleanly(target);
  if (decoded === undefined) return unsafe(explain, 'decodes to forbidden characters or keeps changing when decoded');

  if (target.charCodeAt(0) === 47 /* / */) {
    // `//host` is protocol-relative: another site. Checked on the decoded form too, for `/%2Fevil.com`.
    if (target.charCodeAt(1) === 47 || decoded.charCodeAt(1) === 47) return unsafe(explain, 'protocol-relative (//host)');
    let url: URL;
    try {
      url = new URL(target, policy.base);
    } catch {
      return unsafe(explain, 'not a URL');
    }
    return url.origin === policy.base.origin ? url.href : unsafe(explain, 'the path leaves the default origin');
  }

  if (!ABSOLUTE_START.test(target)) return unsafe(explain, 'neither an absolute http(s) URL nor a path starting with one "/"');
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return unsafe(explain, 'not a URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) return unsafe(explain, 'plain http');
  // Userinfo is how `https://example.test@evil.com` hides its real host; it has no place in a return URL.
  if (url.username !== '' || url.password !== '') return unsafe(explain, 'carries userinfo');
  const authorityEnd = target.indexOf('/', target.indexOf('//') + 2);
  if (target.slice(0, authorityEnd === -1 ? undefined : authorityEnd).includes('@')) return unsafe(explain, 'carries userinfo');
  if (isIpLiteral(url.hostname)) return unsafe(explain, 'an IP address');
  if (policy.origins.has(url.origin)) return url.href;
  if (!isWithinDomain(url.hostname, policy.parentDomain, policy.dottedParent)) {
    return unsafe(explain, `host ${url.hostname} is outside ${policy.parentDomain} and not an allowed origin`);
  }
  if (url.port !== '' && !policy.ports.has(url.port)) return unsafe(explain, `port ${url.port} is not allowed`);
  return url.href;
}

function normalizeOrigin(origin: unknown, allowHttp: boolean, option: string): string {
  const fix = 'list full origins like "https://app.example.test" (scheme, host and optional port, no path)';
  if (typeof origin !== 'string') throw new OptionsError(`${option} must ${fix}, got ${typeof origin}`);
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new OptionsError(`${option} must ${fix}, got "${origin}"`);
  }
  if (url.origin !== origin.toLowerCase().replace(/\/$/, '') || url.origin === 'null' || !/^[a-z0-9.-]+$/.test(url.hostname)) {
    throw new OptionsError(`${option} must ${fix}, got "${origin}"`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) {
    throw new OptionsError(`${option} must use https (http only with allowInsecureLocalDevelopment), got "${origin}"`);
  }
  if (isIpLiteral(url.hostname)) {
    throw new OptionsError(`${option} must name hosts, not IP addresses, got "${origin}"`);
  }
  return url.origin;
}

const SCHEMA: OptionSchema = {
  parentDomain: { type: 'string', required: true, expected: 'the parent domain, e.g. "example.test"' },
  defaultUrl: { type: 'string', required: true, expected: 'an absolute URL on the parent domain, e.g. "https://www.example.test/"' },
  allowedOrigins: { type: 'string[]', expected: 'an array of origins like "https://app.example.test"' },
  allowedPorts: { type: 'array', expected: 'an array of port numbers such as [3000]' },
  allowInsecureLocalDevelopment: { type: 'boolean' },
};
const debug = debugChannel('redirect');
const explainToDebug = (reason: string): void => debug('redirect target replaced by the default: %s', reason);

/** The settings a policy is compiled from, already of the right types (ssoSession passes its own, checked ones). */
export interface RedirectPolicySettings {
  parentDomain: string;
  defaultUrl: string;
  allowedOrigins: readonly string[];
  allowedPorts: readonly number[];
  allowHttp: boolean;
}

/** How the caller named each setting, so a message names the option the developer wrote. */
type SettingNames = Record<'parentDomain' | 'defaultUrl' | 'allowedOrigins' | 'allowedPorts', string>;
const OWN_NAMES: SettingNames = {
  parentDomain: 'parentDomain',
  defaultUrl: 'defaultUrl',
  allowedOrigins: 'allowedOrigins',
  allowedPorts: 'allowedPorts',
};

function compile(settings: RedirectPolicySettings, caller: string, names: SettingNames = OWN_NAMES): CompiledPolicy {
  const parentDomain = validateCookieDomain(settings.parentDomain, `${caller}: ${names.parentDomain}`);
  const { allowHttp } = settings;
  const origins = new Set(
    settings.allowedOrigins.map((origin) => normalizeOrigin(origin, allowHttp, `${caller}: ${names.allowedOrigins}`)),
  );
  const ports = new Set(
    settings.allowedPorts.map((port) => {
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        throw new OptionsError(`${caller}: ${names.allowedPorts} must hold port numbers 1–65535, got ${String(port)}`);
      }
      return String(port);
    }),
  );
  let base: URL;
  try {
    base = new URL(settings.defaultUrl);
  } catch {
    throw new OptionsError(`${caller}: ${names.defaultUrl} must be an absolute URL on ${parentDomain}, got "${settings.defaultUrl}"`);
  }
  const draft: CompiledPolicy = { parentDomain, dottedParent: `.${parentDomain}`, origins, ports, allowHttp, base, defaultUrl: base.href };
  const safeDefault = resolveSafe(settings.defaultUrl, draft);
  if (safeDefault === undefined) {
    throw new OptionsError(
      `${caller}: ${names.defaultUrl} "${settings.defaultUrl}" is not itself a safe target; use an https URL on ${parentDomain} or one of ${names.allowedOrigins}`,
    );
  }
  return { ...draft, defaultUrl: safeDefault };
}

let insecureWarningShown = false;

function checkedSettings(options: RedirectPolicyOptions, caller: string): RedirectPolicySettings {
  refuseRenamedOptions(caller, options, { allowHttp: 'renamed to allowInsecureLocalDevelopment' });
  checkOptions(caller, options as unknown, SCHEMA);
  const allowHttp = options.allowInsecureLocalDevelopment === true;
  if (allowHttp) {
    refuseInProduction(caller);
    if (!insecureWarningShown) {
      insecureWarningShown = true;
      console.warn(
        `[express-sso-kit] ${caller}: allowInsecureLocalDevelopment: plain-http redirect targets are accepted. Never do this in production.`,
      );
    }
  }
  return {
    parentDomain: options.parentDomain,
    defaultUrl: options.defaultUrl,
    allowedOrigins: options.allowedOrigins ?? [],
    allowedPorts: options.allowedPorts ?? [],
    allowHttp,
  };
}

/**
 * The policy object over compiled settings; `sanitize` says on the `redirect` debug channel why it replaced a
 * target (the reason and at most the host, never the target itself, which may carry codes).
 *
 * @example
 * const redirects = redirectPolicyFrom({ parentDomain, defaultUrl, allowedOrigins: [], allowedPorts: [], allowHttp: false }, 'ssoSession');
 */
export function redirectPolicyFrom(settings: RedirectPolicySettings, caller: string, names: SettingNames = OWN_NAMES): RedirectPolicy {
  const policy = compile(settings, caller, names);
  return {
    defaultUrl: policy.defaultUrl,
    isSafe: (target: unknown): boolean => resolveSafe(target, policy) !== undefined,
    // An absent target is not worth a debug line; a present one that is replaced is.
    sanitize: (target: unknown): string =>
      resolveSafe(target, policy, debug.enabled && target !== undefined && target !== '' ? explainToDebug : undefined) ?? policy.defaultUrl,
  };
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
  return redirectPolicyFrom(checkedSettings(options, 'createRedirectPolicy'), 'createRedirectPolicy');
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
    policy = compile(checkedSettings(options, 'isSafeRedirect'), 'isSafeRedirect');
    compiledByOptions.set(options, policy);
  }
  return resolveSafe(target, policy) !== undefined;
}
