/**
 * Starts one site of the demo as a server: its app behind a `/healthz` route, on `PORT` (default 8080) and `HOST`
 * (default 127.0.0.1), with the shared Redis; SIGINT and SIGTERM close it. Each site's file calls
 * {@link runSite} when it is run directly, so `node --import tsx example-app/shop/shop.ts` starts the shop alone.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type Request, type Response } from 'express';
import { RedisStore, type KeyValueStore, type SecurityEvents } from 'express-sso-kit';
import { demoKeyPrefix, readDemoConfig, type DemoConfig, type SiteName } from './config';
import { resolveDemoDomain } from './demo-dns';
import { localMetrics, siteEvents } from './site-events';

/** Builds one site's app; its decisions go to `events`. */
export type SiteFactory = (config: DemoConfig, store: KeyValueStore, events?: SecurityEvents) => Express | Promise<Express>;

/** A listening site. */
export interface RunningSite {
  site: SiteName;
  /** The site's app (without `/healthz`), as its factory built it. */
  app: Express;
  server: Server;
  port: number;
  /** The site's security events (stderr, and the Redis stream). */
  events: SecurityEvents;
  close(): Promise<void>;
}

/**
 * Builds a site and listens: `/healthz` answers `{ status, site, store }` (503 while the store is down),
 * `/metrics` the site's Prometheus metrics to a direct scrape, then the site's app.
 *
 * @example
 * const shop = await startSite('shop', createShop, { config, store, port: 0 });
 */
export async function startSite(
  site: SiteName,
  factory: SiteFactory,
  options: { config: DemoConfig; store: KeyValueStore; port?: number; host?: string },
): Promise<RunningSite> {
  const { store } = options;
  const root = express();
  root.disable('x-powered-by');
  root.get('/healthz', async function health(_req: Request, res: Response) {
    res.set('Cache-Control', 'no-store');
    try {
      await store.ping();
      res.json({ status: 'ok', site, store: store.kind });
    } catch {
      res.status(503).set('Retry-After', '5').json({ status: 'unavailable', site, store: store.kind });
    }
  });
  const events = siteEvents(site, options.config, store);
  root.get('/metrics', localMetrics(events));
  const app = await factory(options.config, store, events);
  app.disable('x-powered-by');
  root.use(app);
  const server = createServer(root);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    site,
    app,
    server,
    port: (server.address() as AddressInfo).port,
    events,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }).then(() => events.close()),
  };
}

/**
 * The main of a site's process: configuration from the environment, the shared Redis (the site stops when it does
 * not answer), the demo domain resolved to the front door, and a clean stop on SIGINT or SIGTERM.
 *
 * @example
 * if (require.main === module) runSite('shop', createShop);
 */
export function runSite(site: SiteName, factory: SiteFactory): void {
  const start = async () => {
    const config = readDemoConfig(process.env);
    const store = new RedisStore(config.redisUrl, { prefix: demoKeyPrefix(config) });
    await store.ping().catch((error: unknown) => {
      throw new Error(`Redis at ${config.redisUrl} does not answer (${(error as Error).message})`, { cause: error });
    });
    // The partner's own domain goes through the front door too: the portal posts its logout tokens there.
    const undoDns = [resolveDemoDomain(config.domain, config.frontDoorHost), resolveDemoDomain(config.partnerDomain, config.frontDoorHost)];
    const port = Number(process.env.PORT || 8080);
    const running = await startSite(site, factory, { config, store, port, host: process.env.HOST || '127.0.0.1' });
    // The launcher reads this line to learn the port; keep its shape.
    console.log(`${site} listening on ${process.env.HOST || '127.0.0.1'}:${running.port}`);
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      running
        .close()
        .then(() => store.close())
        .then(() => undoDns.reverse().forEach((undo) => undo()))
        .then(
          () => process.exit(0),
          () => process.exit(1),
        );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // Started by `npm run demo` (with an IPC channel): stop when the launcher is gone, however it ended, also when
    // it went while this site was still starting (a loaded machine, a launcher killed outright): the channel closed
    // before anyone listened for it, and this site would otherwise run on alone.
    if (process.send) {
      if (process.connected) process.once('disconnect', stop);
      else stop();
    }
  };
  start().catch((error: unknown) => {
    console.error(`${site} did not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
