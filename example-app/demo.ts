/**
 * `npm run demo`: every site of the demo as its own process, sharing one Redis, behind one front door that routes
 * by Host, so the browser needs one address. Ctrl-C stops them all (and the Redis it started).
 *
 * Environment: PORT (the front door, default 8080; 0 picks a free one), HOST (default 127.0.0.1), DEMO_DOMAIN
 * (default sso.localhost), REDIS_URL, DEMO_REDIS (`embedded` or `memory`), DEMO_SECRET (default: the one kept in
 * DEMO_DATA_DIR, `.demo/` in the checkout, made on the first run), DEMO_PARTNER_DOMAIN (the partner app's own domain, default partner.localhost), DEMO_TLS_CERT and
 * DEMO_TLS_KEY (the front door serves https). See docs/portal-and-demo.md.
 */
import { readFileSync } from 'node:fs';
import { MemoryStore } from 'express-sso-kit';
import { origin, readDemoConfig, SITES, type DemoConfig, type SiteName } from './common/config';
import { resolveDemoDomain } from './common/demo-dns';
import { startSite, type SiteFactory } from './common/run-site';
import { bannerLines } from './launcher/banner';
import { provideRedis } from './launcher/demo-redis';
import { demoSecret } from './launcher/demo-secret';
import { startDocsSite } from './launcher/docs-process';
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

async function main(): Promise<void> {
  const env = process.env;
  const host = env.HOST || '127.0.0.1';
  const tls =
    env.DEMO_TLS_CERT && env.DEMO_TLS_KEY ? { cert: readFileSync(env.DEMO_TLS_CERT), key: readFileSync(env.DEMO_TLS_KEY) } : undefined;
  if (!tls && (env.DEMO_TLS_CERT || env.DEMO_TLS_KEY))
    throw new TypeError('DEMO_TLS_CERT and DEMO_TLS_KEY go together: set both or neither');
  const mode = env.DEMO_REDIS === 'embedded' || env.DEMO_REDIS === 'memory' ? env.DEMO_REDIS : undefined;
  if (env.DEMO_REDIS && !mode) throw new TypeError(`DEMO_REDIS must be "embedded" or "memory", got "${env.DEMO_REDIS}"`);

  const secret = demoSecret(env);
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
      DEMO_SECRET: secret.secret,
      DEMO_FRONT_DOOR_HOST: '127.0.0.1',
      ...(env.DEMO_PARTNER_DOMAIN ? { DEMO_PARTNER_DOMAIN: env.DEMO_PARTNER_DOMAIN } : {}),
      REDIS_URL: redis.url ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
    };
    const config = readDemoConfig(siteEnv);
    let portalPort = 0;
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
        if (site === 'auth') portalPort = running.port;
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
      portalPort = await children.find((child) => child.site === 'auth')!.ready;
      for (const child of children) log(`[demo ] ${child.site} runs as process ${child.pid}`);
    }
    // The docs site (not Node), behind the front door's forward-auth to the portal, as Caddy does in the compose demo.
    const docs = await startDocsSite(log);
    if (docs) {
      stops.push(() => docs.stop());
      frontDoor.routeHost(`docs.${domain}`, docs.port, { forwardAuthPort: portalPort });
      log(`[demo ] docs (python3) runs as process ${docs.pid}`);
      void docs.exited.then((code) => {
        if (!stopping) log(`The docs site stopped (${code}); the other sites go on.`);
      });
    }
    for (const line of bannerLines({ config, host, port: frontDoor.port, redis, secret, env, docs: docs !== undefined })) log(line);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    await shutdown(1);
  }
}

void main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
