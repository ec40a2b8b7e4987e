import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

// No Docker engine runs in CI, so the compose file is checked for the mistakes that would only show at `up`.
const root = resolve(__dirname, '../..');
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8')) as {
  services: Record<
    string,
    {
      image?: string;
      build?: string | { context: string; dockerfile?: string };
      environment?: Record<string, string> | string[];
      volumes?: Array<string | { type?: string; source?: string }>;
      healthcheck?: { test?: string[] | string };
      ports?: string[];
      depends_on?: Record<string, { condition?: string }> | string[];
    }
  >;
};
const services = Object.entries(compose.services);

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return /\.(ts|js|mjs|cjs)$/.test(name) ? [path] : [];
  });
}

function environmentNames(environment: Record<string, string> | string[] | undefined): string[] {
  if (!environment) return [];
  return Array.isArray(environment) ? environment.map((entry) => entry.split('=')[0]!) : Object.keys(environment);
}

describe('docker-compose.yml', () => {
  it('has redis, the example app and a reverse proxy', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['example-app', 'proxy', 'redis']);
    expect(compose.services.redis!.image).toMatch(/^redis:7-alpine$/);
  });

  it.each(services)('gives service %s an image or a build context that exists', (_name, service) => {
    expect(service.image !== undefined || service.build !== undefined).toBe(true);
    if (service.build !== undefined) {
      const build = typeof service.build === 'string' ? { context: service.build } : service.build;
      const context = join(root, build.context);
      expect(existsSync(context)).toBe(true);
      const dockerfile = join(context, build.dockerfile ?? 'Dockerfile');
      expect(existsSync(dockerfile)).toBe(true);
      expect(readFileSync(dockerfile, 'utf8')).toMatch(/^FROM node:20/m);
    }
  });

  it.each(services)('gives service %s a healthcheck with a command', (_name, service) => {
    expect(service.healthcheck?.test).toBeDefined();
    expect(service.healthcheck!.test!.length).toBeGreaterThan(1);
  });

  it.each(services)('mounts only host paths that exist into service %s', (_name, service) => {
    for (const volume of service.volumes ?? []) {
      const source = typeof volume === 'string' ? volume.split(':')[0]! : volume.source!;
      if (source.startsWith('.') || source.startsWith('/')) expect(existsSync(join(root, source))).toBe(true);
    }
  });

  it('sets only environment variables the example app reads', () => {
    const read = new Set<string>();
    for (const file of sourcesUnder(join(root, 'example-app'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\b(?:process\.)?env\.([A-Z][A-Z0-9_]*)/g)) read.add(match[1]!);
    }
    const dockerfile = readFileSync(join(root, 'example-app/Dockerfile'), 'utf8');
    const dockerfileEnv = [...dockerfile.matchAll(/^\s*(?:ENV\s+)?([A-Z][A-Z0-9_]*)=/gm)]
      .map((m) => m[1]!)
      .filter((name) => name !== 'NODE_ENV');
    const set = [...environmentNames(compose.services['example-app']!.environment), ...dockerfileEnv];
    expect(set.length).toBeGreaterThan(0);
    expect(set.filter((name) => !read.has(name))).toEqual([]);
  });

  it('waits for healthy dependencies', () => {
    expect(compose.services['example-app']!.depends_on).toEqual({ redis: { condition: 'service_healthy' } });
    expect(compose.services.proxy!.depends_on).toEqual({ 'example-app': { condition: 'service_healthy' } });
  });

  it('points the proxy at the app service on the port the app listens on, and publishes the same port', () => {
    const caddyfile = readFileSync(join(root, 'example-app/Caddyfile'), 'utf8');
    const upstreams = [...caddyfile.matchAll(/reverse_proxy\s+([^\s{]+)/g)].map((m) => m[1]!);
    expect(upstreams.length).toBeGreaterThan(0);
    const app = compose.services['example-app']!;
    const env = app.environment as Record<string, string>;
    for (const upstream of upstreams) {
      const [host, port] = upstream.replace(/^https?:\/\//, '').split(':');
      expect(Object.keys(compose.services)).toContain(host);
      expect(port).toBe(env.PORT);
    }
    const [published, target] = compose.services.proxy!.ports![0]!.split(':');
    expect(published).toBe(env.DEMO_PUBLIC_PORT);
    expect(caddyfile).toContain(`:${target} {`);
    expect(compose.services.proxy!.volumes).toContain('./example-app/Caddyfile:/etc/caddy/Caddyfile:ro');
  });

  it('points the app at the redis service', () => {
    const env = compose.services['example-app']!.environment as Record<string, string>;
    expect(new URL(env.REDIS_URL!).hostname).toBe('redis');
  });
});
