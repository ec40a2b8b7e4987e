/**
 * `npm run demo`: every site of the demo as its own process, sharing one Redis, behind one front door that routes
 * by Host, so the browser needs one address. Ctrl-C stops them all (and the Redis it started).
 *
 * Environment: PORT (the front door, default 8080; 0 picks a free one), HOST (default 127.0.0.1), DEMO_DOMAIN
 * (default sso.localhost), REDIS_URL, DEMO_REDIS (`embedded` or `memory`), DEMO_SECRET (default: a new one per
 * run), DEMO_PARTNER_DOMAIN (the partner app's own domain, default partner.localhost), DEMO_TLS_CERT and
 * DEMO_TLS_KEY (the front door serves https). See docs/portal-and-demo.md.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { MemoryStore } from 'express-sso-kit';
import { DEMO_ACCOUNTS } from './common/accounts';
import { origin, readDemoConfig, SITES, type DemoConfig, type SiteName } from './common/config';
import { resolveDemoDomain } from './common/demo-dns';
import { startSite, type SiteFactory } from './common/run-site';
import { provideRedis } from './launcher/demo-redis';
import { startFrontDoor } from './launcher/front-door';
import { spawnSite, type SiteProcess } from './launcher/site-processes';

const log = (line: string) => console.log(line);

// Only for the one-process fallback without Redis; normally each site's own process loads its file.
const FACTORIES: Record<SiteName, () => Promise<SiteFactory>> = {
  idp: async () => (await import('./idp/idp.js')).createIdp,
  auth: async () => (await import('./auth/auth.js')).createAuth,
  shop: async () => (await import('./shop/shop.js')).createShop,
  admin: async () => (await import('./admin/admin.js')).createAdmin,
  api: async () => (await import('./api/api.js')).createApi,
  partner: async () => (await import('./partner/partner.js')).createPartner,
};

// Every site by its public host name: `shop.<domain>`, and the partner on its own domain.
const hostOf = (config: DemoConfig, site: SiteName) => new URL(origin(config, site)).hostname;

function banner(config: DemoConfig, frontDoor: { port: number }, redis: { kind: string; url: string | undefined }, host: string): void {
  const at = (site: SiteName, path = '/') => `${origin(config, site)}${path}`;
  log('');
  const store = redis.url ? `Redis ${redis.kind} at ${redis.url}` : 'no Redis: one process, in-memory store';
  log(`express-sso-kit demo ready on ${host}:${frontDoor.port} (${store})`);
  log('');
  log(`  Login portal       ${at('auth', '/login')}`);
  log(`  Your sessions      ${at('auth', '/sessions')}`);
  log(`  Two-factor         ${at('auth', '/two-factor')}`);
  log(`  Shop               ${at('shop')}`);
  log(`  Admin              ${at('admin')}   (needs the admin role)`);
  log(`  Notes API          ${at('api', '/notes')}`);
  log(`  Identity provider  ${at('idp', '/.well-known/openid-configuration')}   (a corporate IdP the portal signs in with)`);
  if (config.openidProvider) log(`  Partner app        ${at('partner')}   (another domain, signs in through the portal's OpenID Provider)`);
  else log("  Partner app        off: the portal's OpenID Provider needs https, or http on *.localhost domains.");
  log('');
  log('  Accounts:');
  for (const account of DEMO_ACCOUNTS) {
    log(`    ${account.username.padEnd(6)} / ${account.password.padEnd(15)} roles: ${account.roles.join(', ') || '(none)'}`);
  }
  if (!config.qrLogin) log('  QR login is off: its URLs need https, or http on a *.localhost domain.');
  log('');
  log('  Ctrl-C stops every site.');
}

async function main(): Promise<void> {
  const env = process.env;
  const host = env.HOST || '127.0.0.1';
  const tls =
    env.DEMO_TLS_CERT && env.DEMO_TLS_KEY ? { cert: readFileSync(env.DEMO_TLS_CERT), key: readFileSync(env.DEMO_TLS_KEY) } : undefined;
  if (!tls && (env.DEMO_TLS_CERT || env.DEMO_TLS_KEY))
    throw new TypeError('DEMO_TLS_CERT and DEMO_TLS_KEY go together: set both or neither');
  const mode = env.DEMO_REDIS === 'embedded' || env.DEMO_REDIS === 'memory' ? env.DEMO_REDIS : undefined;
  if (env.DEMO_REDIS && !mode) throw new TypeError(`DEMO_REDIS must be "embedded" or "memory", got "${env.DEMO_REDIS}"`);

  const redis = await provideRedis({ ...(env.REDIS_URL ? { redisUrl: env.REDIS_URL } : {}), ...(mode ? { mode } : {}), log });
  const children: SiteProcess[] = [];
  const stops: Array<() => Promise<void>> = [() => redis.stop()];
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    process.exit(code);
  };
  process.once('SIGINT', () => void shutdown(0));
  process.once('SIGTERM', () => void shutdown(0));

  try {
    const domain = env.DEMO_DOMAIN || 'sso.localhost';
    const frontDoor = await startFrontDoor({ port: Number(env.PORT || 8080), host, domain, ...(tls ? { tls } : {}) });
    stops.push(() => frontDoor.close());
    const siteEnv: Record<string, string> = {
      DEMO_DOMAIN: domain,
      DEMO_SECURE: tls || env.DEMO_SECURE === '1' ? '1' : '0',
      DEMO_PUBLIC_PORT: String(frontDoor.port),
      DEMO_SECRET: env.DEMO_SECRET || randomBytes(32).toString('base64url'),
      DEMO_FRONT_DOOR_HOST: '127.0.0.1',
      ...(env.DEMO_PARTNER_DOMAIN ? { DEMO_PARTNER_DOMAIN: env.DEMO_PARTNER_DOMAIN } : {}),
      REDIS_URL: redis.url ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
    };
    const config = readDemoConfig(siteEnv);
    if (redis.kind === 'memory') {
      // The documented fallback: every site in this process, sharing one in-memory store.
      const store = new MemoryStore();
      stops.push(async () => store.close());
      // The sites in this process reach each other (and the partner) through the front door, by their public names.
      for (const name of [domain, config.partnerDomain]) {
        const undo = resolveDemoDomain(name, '127.0.0.1');
        stops.push(async () => undo());
      }
      for (const site of SITES) {
        const running = await startSite(site, await FACTORIES[site](), { config, store });
        stops.push(() => running.close());
        frontDoor.routeHost(hostOf(config, site), running.port);
      }
    } else {
      for (const site of SITES) {
        const child = spawnSite(site, siteEnv, log);
        children.push(child);
        stops.push(() => child.stop());
        void child.exited.then((code) => {
          if (stopping) return;
          log(`The ${site} site stopped (${code}); stopping the demo.`);
          void shutdown(1);
        });
      }
      for (const child of children) frontDoor.routeHost(hostOf(config, child.site), await child.ready);
      for (const child of children) log(`[demo ] ${child.site} runs as process ${child.pid}`);
    }
    banner(config, frontDoor, redis, host);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    await shutdown(1);
  }
}

void main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
