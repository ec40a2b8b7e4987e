/**
 * What every site of the demo shares, in one place: the parent domain and the sites' public URLs, the Redis they
 * all use, the one demo secret (each purpose gets its own key derived from it), the directory of accounts, and the
 * session settings, with the one place where two identity sources become one account (`linkAccount`).
 * Configuration comes from the environment; `npm run demo` and docker-compose.yml set it for every site alike.
 */
import { hkdfSync } from 'node:crypto';
import { isIP } from 'node:net';
import type { KeyValueStore, SsoSessionOptions } from 'express-sso-kit';
import { demoDirectory } from './accounts';

/**
 * The sites of the demo, each its own app on `<site>.<domain>`, except `partner`: an app of another organisation on
 * a domain of its own (`DEMO_PARTNER_DOMAIN`), which signs in through the portal's OpenID Provider.
 */
export type SiteName = 'auth' | 'shop' | 'admin' | 'api' | 'idp' | 'partner';

/** Every site, in the order they are started and listed. */
export const SITES: readonly SiteName[] = ['idp', 'auth', 'shop', 'admin', 'api', 'partner'];

/** The demo's settings, read from the environment by {@link readDemoConfig}. */
export interface DemoConfig {
  /** Parent domain of every site (`DEMO_DOMAIN`, default `sso.localhost`). */
  domain: string;
  /** Public URLs are https and cookies Secure (`DEMO_SECURE=1`, behind a TLS front door). Default plain http. */
  secure: boolean;
  /** The port in the public URLs, where the front door listens (`DEMO_PUBLIC_PORT`, default 8080). */
  publicPort: number;
  /** The Redis every site shares (`REDIS_URL`, default `redis://127.0.0.1:6379`). */
  redisUrl: string;
  /** The demo's one secret (`DEMO_SECRET`, at least 32 characters); see {@link secretFor}. */
  secret: string;
  /** Where `*.<domain>` resolves inside the sites' processes: the front door (`DEMO_FRONT_DOOR_HOST`). */
  frontDoorHost: string;
  /** QR login is on: its URLs must be https, or http on a loopback name such as `*.localhost`. */
  qrLogin: boolean;
  /** The partner app's own domain, outside the parent domain (`DEMO_PARTNER_DOMAIN`, default `partner.localhost`). */
  partnerDomain: string;
  /**
   * The portal is an OpenID Provider for the partner app: its URLs must be https, or http on loopback names (the
   * parent domain and the partner domain both under `localhost`).
   */
  openidProvider: boolean;
}

const DOMAIN_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

// A parent domain of several labels; ssoSession refuses a public suffix (such as co.uk) itself, by name.
function parentDomain(raw: string): string {
  const domain = raw.toLowerCase();
  if (isIP(domain) !== 0 || !DOMAIN_NAME.test(domain)) {
    throw new TypeError(
      `DEMO_DOMAIN must be a parent domain such as "sso.localhost" or "example.test" (not an IP or a single label), got "${raw}"`,
    );
  }
  return domain;
}

const within = (name: string, domain: string) => name === domain || name.endsWith(`.${domain}`);
const isLoopbackName = (name: string) => within(name, 'localhost');

// The partner is another organisation's app: a cookie of the parent domain must never reach it, nor its cookie the sites.
function partnerDomain(raw: string, parent: string): string {
  const domain = raw.toLowerCase();
  if (isIP(domain) !== 0 || !DOMAIN_NAME.test(domain)) {
    throw new TypeError(`DEMO_PARTNER_DOMAIN must be a host name such as "partner.localhost" (not an IP or a single label), got "${raw}"`);
  }
  if (within(domain, parent) || within(parent, domain)) {
    throw new TypeError(`DEMO_PARTNER_DOMAIN must be outside the parent domain "${parent}" (the partner has its own cookie), got "${raw}"`);
  }
  return domain;
}

function port(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) throw new TypeError(`${name} must be a port number 0–65535, got "${raw}"`);
  return value;
}

/**
 * Reads and checks the demo's environment; a bad value stops the site with a message naming the variable.
 *
 * @example
 * const config = readDemoConfig(process.env);
 */
export function readDemoConfig(env: NodeJS.ProcessEnv): DemoConfig {
  const domain = parentDomain(env.DEMO_DOMAIN || 'sso.localhost');
  if (!['0', '1', undefined, ''].includes(env.DEMO_SECURE)) throw new TypeError(`DEMO_SECURE must be 1 or 0, got "${env.DEMO_SECURE}"`);
  const secure = env.DEMO_SECURE === '1';
  const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (!/^rediss?:\/\//.test(redisUrl)) throw new TypeError(`REDIS_URL must start with redis:// or rediss://, got "${redisUrl}"`);
  const secret = env.DEMO_SECRET ?? '';
  if (secret.length < 32) {
    throw new TypeError('DEMO_SECRET must be set to at least 32 characters, the same for every site (npm run demo makes one per run)');
  }
  const loopbackName = isLoopbackName(domain);
  const partner = partnerDomain(env.DEMO_PARTNER_DOMAIN || 'partner.localhost', domain);
  return {
    domain,
    secure,
    publicPort: port('DEMO_PUBLIC_PORT', env.DEMO_PUBLIC_PORT, 8080),
    redisUrl,
    secret,
    frontDoorHost: env.DEMO_FRONT_DOOR_HOST || '127.0.0.1',
    qrLogin: secure || loopbackName,
    partnerDomain: partner,
    openidProvider: secure || (loopbackName && isLoopbackName(partner)),
  };
}

/**
 * A site's public origin, as browsers see it: `http://shop.sso.localhost:8080` (the partner: `http://partner.localhost:8080`).
 *
 * @example
 * securityHeaders({ contentSecurityPolicy: { directives: { connectSrc: ["'self'", origin(config, 'api')] } } });
 */
export function origin(config: DemoConfig, site: SiteName): string {
  const scheme = config.secure ? 'https' : 'http';
  const defaultPort = config.secure ? 443 : 80;
  const host = site === 'partner' ? config.partnerDomain : `${site}.${config.domain}`;
  return `${scheme}://${host}${config.publicPort === defaultPort ? '' : `:${config.publicPort}`}`;
}

/**
 * A key for one purpose (session cookies, OIDC client secret, …), derived from the demo secret with HKDF-SHA-256
 * (RFC 5869), so no two purposes share a key and the sites need only one secret between them.
 *
 * @example
 * ssoSession({ secret: secretFor(config, 'sessions'), … });
 */
export function secretFor(config: DemoConfig, purpose: string): string {
  return Buffer.from(hkdfSync('sha256', config.secret, 'express-sso-kit demo', purpose, 32)).toString('hex');
}

/**
 * The portal as a client of the demo identity provider: its client id, and the secret both sides derive from the
 * demo secret (the provider registers it, the portal presents it at the token endpoint).
 *
 * @example
 * oidc({ name: 'demo-idp', issuer: origin(config, 'idp'), ...portalOidcClient(config), … });
 */
export function portalOidcClient(config: DemoConfig): { clientId: string; clientSecret: string } {
  return { clientId: 'sso-portal', clientSecret: secretFor(config, 'oidc-client') };
}

/**
 * The partner app as a client of the portal's OpenID Provider: its client id, and the secret both sides derive from
 * the demo secret (the portal registers it, the partner presents it at the token endpoint).
 *
 * @example
 * oidc({ name: 'portal', issuer: origin(config, 'auth'), ...partnerOidcClient(config), … });
 */
export function partnerOidcClient(config: DemoConfig): { clientId: string; clientSecret: string } {
  return { clientId: 'partner', clientSecret: secretFor(config, 'partner-oidc-client') };
}

/**
 * The session settings every site uses: the cookie on the parent domain, the login page on the auth site. The
 * demo identity provider signs in the directory's own accounts (its `sub` is a directory id), so `linkAccount`
 * makes its logins those accounts, with the directory's name and roles; a `sub` the directory does not know is
 * refused, and every other source (QR login included) stays an account of its own.
 *
 * @example
 * app.use(ssoSession(sessionOptions(config, store)));
 */
export function sessionOptions(config: DemoConfig, store: KeyValueStore): SsoSessionOptions {
  const demoIdp = `oidc:${origin(config, 'idp')}`;
  const users = demoDirectory();
  const defaultPort = config.secure ? 443 : 80;
  return {
    store,
    cookieDomain: config.domain,
    secret: secretFor(config, 'sessions'),
    loginUrl: `${origin(config, 'auth')}/login`,
    ...(config.secure ? {} : { allowInsecureLocalDevelopment: true }),
    allowedRedirectPorts: config.publicPort === defaultPort ? [] : [config.publicPort],
    defaultRedirectUrl: `${origin(config, 'shop')}/`,
    linkAccount: async (login) => {
      if (login.source !== demoIdp) return undefined;
      const account = await users.findById(login.subject);
      if (!account) return null;
      return { source: users.source!, subject: account.id, name: account.name, roles: [...account.roles] };
    },
  };
}
