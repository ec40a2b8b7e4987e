import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

// No container engine runs in CI, so the compose file is checked for the mistakes that would only show at `up`,
// and the Caddyfile by Caddy itself (`caddy validate`, and `caddy adapt` for the routes it really configures).
const root = resolve(__dirname, '../..');
const SITES = ['auth', 'shop', 'admin', 'api', 'idp', 'partner'];

interface Service {
  image?: string;
  build?: string | { context: string; dockerfile?: string };
  command?: string[];
  environment?: Record<string, string> | string[];
  volumes?: Array<string | { type?: string; source?: string }>;
  healthcheck?: { test?: string[] | string };
  ports?: string[];
  depends_on?: Record<string, { condition?: string }> | string[];
}
// semver ships no types; the one function used here is declared on the spot.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { satisfies } = require('semver') as { satisfies(version: string, range: string): boolean };
// Merge keys (`<<: *site`) as docker compose reads them.
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = Object.entries(compose.services);

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return /\.(ts|js|mjs|cjs)$/.test(name) ? [path] : [];
  });
}

function environmentOf(service: Service): Record<string, string> {
  const environment = service.environment ?? {};
  if (!Array.isArray(environment)) return environment;
  return Object.fromEntries(environment.map((entry) => [entry.split('=')[0]!, entry.slice(entry.indexOf('=') + 1)]));
}

function caddy(...args: string[]): string {
  try {
    return execFileSync('caddy', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string };
    if (failure.code === 'ENOENT') {
      throw new Error('caddy is not installed (Debian: apt-get install caddy; .ci/run installs it)', { cause: error });
    }
    throw new Error(`caddy ${args.join(' ')} failed:\n${failure.stderr ?? failure.message}`, { cause: error });
  }
}

describe('docker-compose.yml', () => {
  it('has one service per site, redis and the Caddy front door', () => {
    expect(Object.keys(compose.services).sort()).toEqual([...SITES, 'proxy', 'redis'].sort());
    expect(compose.services.redis!.image).toBe('redis:7-alpine');
    expect(compose.services.proxy!.image).toMatch(/^caddy:2/);
  });

  it.each(SITES)('runs site %s from the one demo image with its own command', (site) => {
    const service = compose.services[site]!;
    const images = SITES.map((name) => compose.services[name]!.image);
    expect(new Set(images).size).toBe(1);
    expect(service.build).toEqual({ context: '.', dockerfile: 'example-app/Dockerfile' });
    expect(service.command).toEqual(['node', '--import', 'tsx', `example-app/${site}/${site}.ts`]);
    expect(existsSync(join(root, `example-app/${site}/${site}.ts`))).toBe(true);
  });

  it.each(SITES)('gives site %s the shared Redis, the shared secret, and the front door', (site) => {
    const env = environmentOf(compose.services[site]!);
    expect(new URL(env.REDIS_URL!).hostname).toBe('redis');
    expect(env.DEMO_SECRET).toBe(environmentOf(compose.services.auth!).DEMO_SECRET);
    expect(env.DEMO_SECRET).toMatch(/^\$\{DEMO_SECRET:-.{32,}\}$/);
    expect(env.DEMO_FRONT_DOOR_HOST).toBe('proxy');
    expect(env.DEMO_DOMAIN).toBe('sso.localhost');
    expect(env.DEMO_PARTNER_DOMAIN).toBe('partner.localhost');
    expect(env.PORT).toBe('8080');
    expect(env.HOST).toBe('0.0.0.0');
  });

  it('builds the image with npm ci and the committed lock file', () => {
    const dockerfile = readFileSync(join(root, 'example-app/Dockerfile'), 'utf8');
    // The major the kit is developed on and `npm test` runs on in CI (.ci/run), inside package.json's engines.
    const major = /^FROM node:(\d+)-/m.exec(dockerfile)?.[1];
    expect(major).toBe('26');
    expect(readFileSync(join(root, '.ci/run'), 'utf8')).toMatch(new RegExp(`^TEST_NODE=${major}$`, 'm'));
    const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines;
    expect(satisfies(`${major}.0.0`, engines.node)).toBe(true);
    expect(dockerfile).toMatch(/^COPY package\.json package-lock\.json \.\/$/m);
    expect(dockerfile).toMatch(/^RUN npm ci\b/m);
    expect(dockerfile).not.toMatch(/npm install/);
    for (const copied of [...dockerfile.matchAll(/^COPY (?!package)(\S+)/gm)].map((m) => m[1]!)) {
      expect(existsSync(join(root, copied))).toBe(true);
    }
  });

  it.each(services)('gives service %s a healthcheck with a command', (_name, service) => {
    expect(Array.isArray(service.healthcheck?.test)).toBe(true);
    expect((service.healthcheck!.test as string[]).length).toBeGreaterThan(1);
  });

  it.each(services)('mounts only host paths that exist into service %s', (_name, service) => {
    for (const volume of service.volumes ?? []) {
      const source = typeof volume === 'string' ? volume.split(':')[0]! : volume.source!;
      if (source.startsWith('.') || source.startsWith('/')) expect(existsSync(join(root, source))).toBe(true);
    }
  });

  it('sets only environment variables the example apps read', () => {
    const read = new Set<string>();
    for (const file of sourcesUnder(join(root, 'example-app'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)) read.add(match[1]!);
    }
    const set = SITES.flatMap((site) => Object.keys(environmentOf(compose.services[site]!)));
    expect(set.length).toBeGreaterThan(0);
    expect([...new Set(set)].filter((name) => !read.has(name))).toEqual([]);
  });

  it('starts the sites once Redis is healthy, and the front door once every site is', () => {
    for (const site of SITES) expect(compose.services[site]!.depends_on).toEqual({ redis: { condition: 'service_healthy' } });
    expect(compose.services.proxy!.depends_on).toEqual(Object.fromEntries(SITES.map((site) => [site, { condition: 'service_healthy' }])));
  });

  it('publishes the front door on the port of the public URLs', () => {
    const [published, target] = compose.services.proxy!.ports![0]!.split(':');
    expect(published).toBe(environmentOf(compose.services.shop!).DEMO_PUBLIC_PORT);
    expect(target).toBe('8080');
    expect(compose.services.proxy!.volumes).toContain('./example-app/Caddyfile:/etc/caddy/Caddyfile:ro');
  });
});

describe('example-app/Caddyfile', () => {
  it('is a configuration Caddy accepts', () => {
    expect(caddy('validate', '--config', 'example-app/Caddyfile', '--adapter', 'caddyfile')).toContain('Valid configuration');
  });

  it("routes each site's host to that site's service on the port it listens on, and nothing else", () => {
    type Route = {
      match?: Array<{ host?: string[] }>;
      handle: Array<{ handler: string; routes?: Route[]; upstreams?: Array<{ dial: string }> }>;
    };
    const config = JSON.parse(caddy('adapt', '--config', 'example-app/Caddyfile', '--adapter', 'caddyfile')) as {
      apps: { http: { servers: Record<string, { listen: string[]; routes: Route[] }> } };
    };
    const [server] = Object.values(config.apps.http.servers);
    expect(server!.listen).toEqual([':8080']);
    const routes: Record<string, string> = {};
    let fallback: string | undefined;
    const walk = (list: Route[], host?: string) => {
      for (const route of list) {
        const matched = route.match?.[0]?.host?.[0] ?? host;
        for (const handler of route.handle) {
          if (handler.routes) walk(handler.routes, matched);
          // forward_auth is a reverse_proxy that answers from its handle_response: the docs site's, checked below.
          if (handler.handler === 'reverse_proxy' && !('handle_response' in handler)) {
            routes[matched!] = handler.upstreams!.map((u) => u.dial).join(',');
          }
          if (handler.handler === 'static_response' && matched === undefined) fallback = handler.handler;
        }
      }
    };
    walk(server!.routes);
    const { DEMO_DOMAIN: domain, DEMO_PARTNER_DOMAIN: partnerDomain } = environmentOf(compose.services.shop!);
    // The partner app answers on its own domain, outside the parent domain; every other site on <site>.<domain>.
    const hostOf = (site: string) => (site === 'partner' ? partnerDomain : `${site}.${domain}`);
    expect(routes).toEqual(
      Object.fromEntries(SITES.map((site) => [hostOf(site), `${site}:${environmentOf(compose.services[site]!).PORT}`])),
    );
    expect(fallback).toBe('static_response');
  });

  it('serves the docs site as static files behind forward_auth to the portal, client identity headers removed first', () => {
    type Route = { match?: Array<{ host?: string[] }>; handle: Array<{ routes?: Route[] }> };
    const config = JSON.parse(caddy('adapt', '--config', 'example-app/Caddyfile', '--adapter', 'caddyfile')) as {
      apps: { http: { servers: Record<string, { routes: Route[] }> } };
    };
    const find = (list: Route[]): Route | undefined => {
      for (const route of list) {
        if (route.match?.[0]?.host?.[0] === 'docs.sso.localhost') return route;
        for (const handler of route.handle) {
          const found = handler.routes && find(handler.routes);
          if (found) return found;
        }
      }
      return undefined;
    };
    const docs = JSON.stringify(find(Object.values(config.apps.http.servers)[0]!.routes));
    const order = [
      '"delete":["Remote-User"]',
      '"delete":["Remote_User"]',
      '"/authz/forward-auth"',
      '"dial":"auth:8080"',
      '"templates"',
      '"file_server"',
    ];
    const positions = order.map((needle) => docs.indexOf(needle));
    expect(positions.every((position) => position !== -1)).toBe(true);
    expect(positions.slice(0, 2).every((position) => position < positions[2]!)).toBe(true);
    expect(compose.services.proxy!.volumes).toContain('./example-app/docs-site:/srv/docs:ro');
  });
});
