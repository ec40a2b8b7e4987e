/**
 * Forward-auth figures, on its own: `npx tsx bench/forward-auth.ts [seconds]` (default 10 s per case; Node 26 in
 * PATH for the Node 26 figure). Needs Redis on 127.0.0.1:6379 (BENCH_REDIS_URL) and caddy in PATH; writes only under
 * a random `ssobench:<hex>:` prefix and deletes it afterwards.
 *
 * 1. Sub-request decisions per second for a signed-in session held in the session cache: autocannon (this process)
 *    against `/authz/forward-auth` of a portal in a child process, as Caddy would ask.
 * 2. A full request through Caddy, with and without `forward_auth` in front of the same `respond` upstream: latency
 *    p50/p99 and the difference (what the forward-auth hop adds).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import Redis from 'ioredis';
import { establishLogin, forwardAuth, RedisStore, ssoSession } from '../lib';

interface LoadResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}
// The package ships no types: the subset used here.
const autocannon = createRequire(__filename)('autocannon') as (options: {
  url: string;
  headers: Record<string, string>;
  duration: number;
  connections: number;
}) => Promise<LoadResult>;

const DOMAIN = 'bench.localhost';
const SECRET = 'forward-auth-bench-secret-0123456789-abcdefghij';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The portal process: ssoSession with its session cache, forwardAuth, and a login route for the fixture. */
async function runPortal(port: number, prefix: string): Promise<void> {
  const client = new Redis(REDIS_URL);
  const store = new RedisStore(client, { prefix });
  const sessions = ssoSession({
    store,
    cookieDomain: DOMAIN,
    secret: SECRET,
    loginUrl: `http://auth.${DOMAIN}/login`,
    allowInsecureLocalDevelopment: true,
    cache: {},
  } as Parameters<typeof ssoSession>[0]);
  const app = express();
  app.use(
    '/authz',
    forwardAuth({ session: sessions, trustedProxies: ['127.0.0.1'], rules: [{ domain: `docs.${DOMAIN}`, policy: 'one_factor' }] }),
  );
  app.use(sessions);
  app.post('/login', (req, res, next) => {
    establishLogin(req, { source: 'directory:staff', subject: 'alice', name: 'Alice', roles: ['staff'], method: 'password' }).then(
      () => res.status(204).end(),
      next,
    );
  });
  app.listen(port, '127.0.0.1', () => process.send?.('ready'));
}

function startPortal(port: number, prefix: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...process.execArgv, __filename, 'portal', String(port), prefix], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`portal exited ${code}`)));
  });
}

async function startCaddy(config: string, port: number): Promise<{ stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'fa-bench-'));
  writeFileSync(join(dir, 'Caddyfile'), config);
  const child = spawn('caddy', ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], { stdio: 'ignore' });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  for (let i = 0; i < 100; i += 1) {
    const up = await fetch(`http://127.0.0.1:${port}/`, { headers: { host: `plain.${DOMAIN}:${port}` } }).then(
      () => true,
      () => false,
    );
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    stop: async () => {
      child.kill('SIGTERM');
      await closed;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function load(url: string, headers: Record<string, string>, seconds: number, connections = 10) {
  const result = await autocannon({ url, headers, duration: seconds, connections });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99 };
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 10);
  const prefix = `ssobench:${randomBytes(6).toString('hex')}:`;
  const portalPort = await freePort();
  const portal = await startPortal(portalPort, prefix);
  const stops: Array<() => Promise<void>> = [
    async () => {
      const exited = new Promise((resolve) => portal.once('exit', resolve));
      portal.kill('SIGTERM');
      await exited;
    },
  ];
  try {
    const login = await fetch(`http://127.0.0.1:${portalPort}/login`, { method: 'POST', headers: { host: `auth.${DOMAIN}` } });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    const subRequest = {
      cookie,
      'x-forwarded-method': 'GET',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': `docs.${DOMAIN}`,
      'x-forwarded-uri': '/guide',
    };
    await load(`http://127.0.0.1:${portalPort}/authz/forward-auth`, subRequest, 2);
    const decisions = await load(`http://127.0.0.1:${portalPort}/authz/forward-auth`, subRequest, seconds);

    const caddyPort = await freePort();
    const caddy = await startCaddy(
      `{\n\tauto_https off\n\tadmin off\n}\nhttp://plain.${DOMAIN}:${caddyPort} {\n\trespond "ok"\n}\n` +
        `http://docs.${DOMAIN}:${caddyPort} {\n\tforward_auth 127.0.0.1:${portalPort} {\n\t\turi /authz/forward-auth\n` +
        `\t\tcopy_headers Remote-User Remote-Groups\n\t}\n\trespond "ok"\n}\n`,
      caddyPort,
    );
    stops.unshift(caddy.stop);
    const through = (site: string) =>
      load(`http://127.0.0.1:${caddyPort}/guide`, { host: `${site}.${DOMAIN}:${caddyPort}`, cookie }, seconds);
    await through('docs');
    const plain = await through('plain');
    const guarded = await through('docs');
    console.log(`Node ${process.version}, ${seconds} s per case, 10 connections`);
    console.log(`forwardAuth decisions (cached session): ${decisions.rps}/s, p50 ${decisions.p50} ms, p99 ${decisions.p99} ms`);
    console.log(`Caddy respond, no forward_auth:          ${plain.rps}/s, p50 ${plain.p50} ms, p99 ${plain.p99} ms`);
    console.log(`Caddy respond, forward_auth:             ${guarded.rps}/s, p50 ${guarded.p50} ms, p99 ${guarded.p99} ms`);
    console.log(`added by forward_auth: p50 +${(guarded.p50 - plain.p50).toFixed(2)} ms, p99 +${(guarded.p99 - plain.p99).toFixed(2)} ms`);
  } finally {
    for (const stop of stops) await stop();
    const client = new Redis(REDIS_URL);
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    await client.quit();
  }
}

if (process.argv[2] === 'portal') void runPortal(Number(process.argv[3]), process.argv[4]!);
else
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
