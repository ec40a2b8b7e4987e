import { isIP } from 'node:net';
import { parse as parseDomain } from 'tldts';
import { OptionsError } from '../util/options';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Why `domain` (already trimmed, lower case, without a leading dot) cannot be the parent domain of a shared cookie,
 * or undefined when it can. A public suffix is looked up in the Public Suffix List through `tldts`, ICANN and
 * private sections both: a cookie for `co.at` or `myshopify.com` would be sent to every other customer of that
 * suffix (RFC 6265 §5.3 step 5). Names under a top-level domain the list does not know (`example.test`,
 * `sso.localhost`) stay usable for development, since only their last label is a suffix.
 */
function domainProblem(domain: string, original: string): string | undefined {
  if (isIP(domain) !== 0 || isIP(domain.replace(/^\[|\]$/g, '')) !== 0) {
    return `must be a domain name, not an IP address ("${original}"): cookies cannot be shared across subdomains of an IP`;
  }
  if (domain.endsWith('.')) return `must not end with a dot, got "${original}"; write "${domain.slice(0, -1)}"`;
  const labels = domain.split('.');
  if (domain.length > 253 || !labels.every((label) => LABEL.test(label))) {
    return `must be a host name of letters, digits and hyphens, got "${original}"`;
  }
  if (domain === 'localhost') {
    return '"localhost" cannot hold cookies for subdomains; use a name such as "sso.localhost" for local development';
  }
  if (labels.length < 2) return `"${original}" is a top-level domain; give your own parent domain, e.g. "example.${domain}"`;
  const parsed = parseDomain(domain, { allowPrivateDomains: true });
  // `domain` is null when the whole name is a public suffix, or sits under a wildcard rule (`*.compute.amazonaws.com`).
  if (parsed.domain === null || parsed.publicSuffix === domain) {
    return `"${original}" is a public suffix shared by unrelated sites (Public Suffix List); give your own domain under it, e.g. "yourcompany.${domain}"`;
  }
  return undefined;
}

/**
 * Checks a parent domain for the shared session cookie (or for the redirect policy) and returns it normalized
 * (lower case, a leading dot removed). Throws an `OptionsError` (a `TypeError`) naming the fix for an IP address,
 * `localhost`, a public suffix of the Public Suffix List (`com`, `co.uk`, `co.at`, `github.io`, `myshopify.com`,
 * …) or anything that is not a host name.
 *
 * @example
 * validateCookieDomain('Example.TEST'); // 'example.test'
 * validateCookieDomain('co.at');        // throws OptionsError
 */
export function validateCookieDomain(domain: unknown, optionName = 'cookieDomain'): string {
  if (typeof domain !== 'string' || domain.trim() === '') {
    throw new OptionsError(`${optionName} must be the parent domain shared by your apps, e.g. "example.test", got ${describe(domain)}`);
  }
  const normalized = domain.trim().toLowerCase().replace(/^\./, '');
  const problem = domainProblem(normalized, domain);
  if (problem !== undefined) throw new OptionsError(`${optionName} ${problem}`);
  return normalized;
}

/**
 * True when `host` is `parent` itself or one of its subdomains (both already lower case).
 *
 * @example
 * isWithinDomain('shop.example.test', 'example.test'); // true
 */
export function isWithinDomain(host: string, parent: string, dottedParent = `.${parent}`): boolean {
  return host === parent || host.endsWith(dottedParent);
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : typeof value;
}
