import { isIP } from 'node:net';

/**
 * Multi-label public suffixes (and shared hosting domains) under which a cookie must never be scoped: a cookie
 * for `co.uk` or `github.io` would be sent to every other customer of that suffix. Browsers refuse most of these
 * themselves through the full Public Suffix List; this short built-in list catches the common mistakes at
 * start-up. Single-label suffixes (`com`, `test`, `localhost`) are refused by the two-label rule instead.
 */
const PUBLIC_SUFFIXES: ReadonlySet<string> = new Set([
  'co.uk',
  'org.uk',
  'me.uk',
  'ltd.uk',
  'plc.uk',
  'net.uk',
  'ac.uk',
  'gov.uk',
  'nhs.uk',
  'sch.uk',
  'com.au',
  'net.au',
  'org.au',
  'edu.au',
  'gov.au',
  'id.au',
  'co.nz',
  'net.nz',
  'org.nz',
  'govt.nz',
  'ac.nz',
  'co.jp',
  'ne.jp',
  'or.jp',
  'ac.jp',
  'go.jp',
  'gr.jp',
  'co.kr',
  'or.kr',
  'go.kr',
  'ac.kr',
  'com.cn',
  'net.cn',
  'org.cn',
  'gov.cn',
  'edu.cn',
  'com.hk',
  'com.tw',
  'com.sg',
  'com.my',
  'co.id',
  'co.th',
  'com.vn',
  'com.ph',
  'co.in',
  'net.in',
  'org.in',
  'gov.in',
  'ac.in',
  'co.za',
  'org.za',
  'gov.za',
  'ac.za',
  'com.br',
  'net.br',
  'org.br',
  'gov.br',
  'com.mx',
  'com.ar',
  'com.co',
  'com.pe',
  'com.tr',
  'com.ua',
  'com.pl',
  'co.il',
  'ac.il',
  'github.io',
  'gitlab.io',
  'herokuapp.com',
  'vercel.app',
  'netlify.app',
  'pages.dev',
  'workers.dev',
  'web.app',
  'firebaseapp.com',
  'appspot.com',
  'blogspot.com',
  'azurewebsites.net',
  'cloudfront.net',
  'amazonaws.com',
  's3.amazonaws.com',
  'onrender.com',
  'fly.dev',
  'glitch.me',
  'repl.co',
  'ngrok.io',
  'ngrok-free.app',
]);

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Checks a parent domain for the shared session cookie (or for the redirect policy) and returns it normalized
 * (lower case, a leading dot removed). Throws a `TypeError` naming the fix for an IP address, `localhost`, a bare
 * public suffix (`com`, `co.uk`, `github.io`, …) or anything that is not a host name.
 *
 * @example
 * validateCookieDomain('Example.TEST'); // 'example.test'
 * validateCookieDomain('co.uk');        // throws TypeError
 */
export function validateCookieDomain(domain: unknown, optionName = 'cookieDomain'): string {
  if (typeof domain !== 'string' || domain.trim() === '') {
    throw new TypeError(`${optionName} must be the parent domain shared by your apps, e.g. "example.test", got ${describe(domain)}`);
  }
  const normalized = domain.trim().toLowerCase().replace(/^\./, '');
  if (isIP(normalized) !== 0 || isIP(normalized.replace(/^\[|\]$/g, '')) !== 0) {
    throw new TypeError(
      `${optionName} must be a domain name, not an IP address ("${domain}"): cookies cannot be shared across subdomains of an IP`,
    );
  }
  if (normalized.endsWith('.')) {
    throw new TypeError(`${optionName} must not end with a dot, got "${domain}"; write "${normalized.slice(0, -1)}"`);
  }
  const labels = normalized.split('.');
  if (normalized.length > 253 || !labels.every((label) => LABEL.test(label))) {
    throw new TypeError(`${optionName} must be a host name of letters, digits and hyphens, got "${domain}"`);
  }
  if (normalized === 'localhost') {
    throw new TypeError(
      `${optionName} "localhost" cannot hold cookies for subdomains; use a name such as "sso.localhost" for local development`,
    );
  }
  if (labels.length < 2) {
    throw new TypeError(`${optionName} "${domain}" is a top-level domain; give your own parent domain, e.g. "example.${normalized}"`);
  }
  if (PUBLIC_SUFFIXES.has(normalized)) {
    throw new TypeError(
      `${optionName} "${domain}" is a public suffix shared by unrelated sites; give your own domain under it, e.g. "yourcompany.${normalized}"`,
    );
  }
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
