/**
 * What every site of the demo shares, in one place: the parent domain and the sites' public URLs, the Redis they
 * all use, the one demo secret (each purpose gets its own key derived from it), the directory of accounts, and the
 * session settings, with the one place where two identity sources become one account (`linkAccount`).
 * Configuration comes from the environment; `npm run demo` and docker-compose.yml set it for every site alike.
 */
import { hkdfSync } from 'node:crypto';
import { isIP } from 'node:net';
import type { KeyValueStore, SecurityEvents, SsoSessionOptions } from 'express-sso-kit';
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
    throw new TypeError(
      'DEMO_SECRET must be set to at least 32 characters, the same for every site (npm run demo keeps one in .demo/secret)',
    );
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

/** The portal's appid at its own QR provider. */
export const PORTAL_QR_APPID = 'sso-portal';

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
 * The prefix of every key the demo's sites keep in Redis: `sso-demo:` and a fingerprint of the demo secret. What
 * one secret sealed (an authenticator app's secret) or signed lives apart from what another did, so two checkouts
 * sharing one Redis, or a secret made anew, never meet data they cannot open: each sees only its own.
 *
 * @example
 * new RedisStore(config.redisUrl, { prefix: demoKeyPrefix(config) }); // 'sso-demo:3f9a1c0e:'
 */
export function demoKeyPrefix(config: DemoConfig): string {
  return `sso-demo:${secretFor(config, 'redis-key-prefix').slice(0, 8)}:`;
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

/** The scope that lets a client of the portal's OpenID Provider read the user's notes at the Notes API. */
export const NOTES_READ_SCOPE = 'notes:read';

/**
 * The Notes API as a resource of the portal's OpenID Provider (RFC 8707): its indicator, the `aud` of the JWT access
 * tokens the provider issues for it, and the scopes a client may hold there. The portal registers it, the api site
 * accepts the provider's tokens for this audience only.
 *
 * @example
 * openidProvider({ …, resources: [notesResource(config)] }); // { indicator: 'http://api.sso.localhost:8080/notes', … }
 */
export function notesResource(config: DemoConfig): { indicator: string; scopes: string[] } {
  return { indicator: `${origin(config, 'api')}/notes`, scopes: [NOTES_READ_SCOPE] };
}

/**
 * The session settings every site uses: the cookie on the parent domain, the login page on the auth site. One
 * person has one account whatever the way in: the demo identity provider signs in the directory's own accounts (its
 * `sub` is a directory id), and the portal is its own QR provider, which tells its own app the directory id of who
 * confirmed (`releaseUserId`); `linkAccount` makes both logins those accounts, with the directory's name and roles.
 * An id the directory does not know is refused, and every other source stays an account of its own (a QR login
 * through someone else's provider is `qr:<provider>#<appid>|<openid>`, known only by its pseudonymous openid).
 *
 * @example
 * app.use(ssoSession(sessionOptions(config, store)));
 */
export function sessionOptions(config: DemoConfig, store: KeyValueStore, events?: SecurityEvents): SsoSessionOptions {
  const demoIdp = `oidc:${origin(config, 'idp')}`;
  const portalQr = `qr:${origin(config, 'auth')}#${PORTAL_QR_APPID}`;
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
    ...(events ? { events } : {}),
    linkAccount: async (login) => {
      if (login.source !== demoIdp && login.source !== portalQr) return undefined;
      const directoryId = login.source === demoIdp ? login.subject : login.attributes?.user_id;
      const account = typeof directoryId === 'string' ? await users.findById(directoryId) : null;
      if (!account) return null;
      return { source: users.source!, subject: account.id, name: account.name, roles: [...account.roles] };
    },
  };
}
