/**
 * What `npm run demo` prints once every site answers: where each site is, the accounts, where the data lives and
 * whether it outlives the run, and a Notes API call to copy and paste with a token made for it.
 */
import { DEMO_ACCOUNTS } from '../common/accounts';
import { demoKeyPrefix, origin, type DemoConfig, type SiteName } from '../common/config';
import type { DemoRedis } from './demo-redis';
import type { DemoSecret } from './demo-secret';

/** What the banner reports. */
export interface BannerFacts {
  config: DemoConfig;
  /** The front door's interface and port. */
  host: string;
  port: number;
  redis: Pick<DemoRedis, 'kind' | 'url'>;
  secret: DemoSecret;
  /** The launcher's environment, for the settings the token command must repeat. */
  env: NodeJS.ProcessEnv;
  /** The docs site runs (python3 was found); undefined or false: skipped. */
  docs?: boolean;
}

/** Where the data lives, and whether the next run finds it. */
function dataLines(facts: BannerFacts): string[] {
  const { redis, secret, config } = facts;
  const kept =
    secret.from === 'env'
      ? 'the demo secret is DEMO_SECRET'
      : `the demo secret is in ${secret.path} (${secret.from === 'created' ? 'made now' : 'kept from an earlier run'})`;
  if (redis.kind === 'memory') return ['  Data               in this process only: it ends with this run.'];
  if (redis.kind === 'embedded') return ['  Data               in a redis-server started for this run: it ends with this run.'];
  return [
    `  Data               Redis at ${redis.url}, keys ${demoKeyPrefix(config)}*: sessions, authenticator apps and`,
    `                     passkeys outlive this run; ${kept}.`,
  ];
}

/**
 * The command that prints a Notes API token, with the settings of this run that differ from the defaults in front
 * (the port, the domain, the data folder, https), so it mints for these URLs with this secret.
 *
 * @example
 * tokenCommand(facts, 'alice'); // 'npm run -s demo:token -- alice'
 */
export function tokenCommand(facts: BannerFacts, username: string): string {
  const { env, config } = facts;
  const settings = [
    ...(facts.port === 8080 ? [] : [`PORT=${facts.port}`]),
    ...(config.domain === 'sso.localhost' ? [] : [`DEMO_DOMAIN=${config.domain}`]),
    ...(env.DEMO_DATA_DIR ? [`DEMO_DATA_DIR=${env.DEMO_DATA_DIR}`] : []),
    ...(config.secure ? ['DEMO_SECURE=1'] : []),
  ];
  return [...settings, `npm run -s demo:token -- ${username}`].join(' ');
}

/**
 * The curl call of the Notes API with a fresh token, as printed (and as README shows it).
 *
 * @example
 * notesCurl(facts); // 'curl -H "Authorization: Bearer $(npm run -s demo:token -- alice)" http://api.sso.localhost:8080/notes'
 */
export function notesCurl(facts: BannerFacts): string {
  const tls = facts.config.secure && facts.env.DEMO_TLS_CERT ? `--cacert ${facts.env.DEMO_TLS_CERT} ` : '';
  return `curl ${tls}-H "Authorization: Bearer $(${tokenCommand(facts, 'alice')})" ${origin(facts.config, 'api')}/notes`;
}

/**
 * The banner's lines.
 *
 * @example
 * for (const line of bannerLines(facts)) console.log(line);
 */
export function bannerLines(facts: BannerFacts): string[] {
  const { config, redis } = facts;
  const at = (site: SiteName, path = '/') => `${origin(config, site)}${path}`;
  const store = redis.url ? `Redis ${redis.kind} at ${redis.url}` : 'no Redis: one process, in-memory store';
  const lines = [
    '',
    `express-sso-kit demo ready on ${facts.host}:${facts.port} (${store})`,
    '',
    `  Login portal       ${at('auth', '/login')}`,
    `  Your sessions      ${at('auth', '/sessions')}`,
    `  Two-factor         ${at('auth', '/two-factor')}`,
    `  Shop               ${at('shop')}`,
    `  Admin              ${at('admin')}   (needs the admin role and a second factor)`,
    `  Notes API          ${at('api', '/notes')}`,
    `  Identity provider  ${at('idp', '/.well-known/openid-configuration')}   (a corporate IdP the portal signs in with)`,
    ...(facts.docs
      ? [`  Docs (not Node)    ${at('auth').replace('//auth.', '//docs.')}   (python3 behind the portal's forward-auth)`]
      : []),
    config.openidProvider
      ? `  Partner app        ${at('partner')}   (another domain, signs in through the portal's OpenID Provider)`
      : "  Partner app        off: the portal's OpenID Provider needs https, or http on *.localhost domains.",
    '',
    '  Accounts:',
    ...DEMO_ACCOUNTS.map(
      (account) => `    ${account.username.padEnd(6)} / ${account.password.padEnd(15)} roles: ${account.roles.join(', ') || '(none)'}`,
    ),
    ...(config.qrLogin ? [] : ['  QR login is off: its URLs need https, or http on a *.localhost domain.']),
    '',
    ...dataLines(facts),
    '',
    '  The Notes API with a Bearer token (one hour, for alice; in another terminal, from this folder):',
    `    ${notesCurl(facts)}`,
    '',
    '  Ctrl-C stops every site.',
  ];
  return lines;
}
