import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import express from 'express';
import {
  errorHandler,
  establishLogin,
  forwardAuth,
  logout,
  raiseSessionAuthentication,
  ssoSession,
  type ForwardAuthOptions,
  type SsoSessionMiddleware,
} from '../../lib';
import { guarded } from '../../lib/http/handlers';
import { freePort, testRedisStore } from './redis';

/** The parent domain of the forward-auth tests: a `.localhost` name, so Chromium reaches it on loopback. */
export const FA_DOMAIN = 'fwd.localhost';
export const FA_SECRET = 'forward-auth-test-secret-0123456789-abcdefghij';

/** The access rules of the tests' static site. */
export const DOCS_RULES: ForwardAuthOptions['rules'] = [
  { domain: `docs.${FA_DOMAIN}`, path: '/public', policy: 'bypass' },
  { domain: `docs.${FA_DOMAIN}`, path: '/admin', policy: 'two_factor' },
  { domain: `docs.${FA_DOMAIN}`, path: '/staff', policy: 'one_factor', roles: 'staff' },
  { domain: `docs.${FA_DOMAIN}`, path: '/closed', policy: 'deny' },
  { domain: `docs.${FA_DOMAIN}`, policy: 'one_factor' },
];

/** A process the test started; `stop()` ends it (by its own pid) and waits for it to exit. */
export interface Started {
  port: number;
  stop(): Promise<void>;
}

function waitForPort(port: number, child: ChildProcess, name: string, output: () => string): Promise<void> {
  // Generous: on a loaded machine an interpreter can take seconds to start.
  const deadline = Date.now() + 20_000;
  return new Promise((resolvePort, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) {
        reject(new Error(`${name} exited (${child.exitCode}): ${output()}`));
        return;
      }
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolvePort();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`${name} did not listen on ${port}: ${output()}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

async function startProcess(name: string, command: string, args: string[], port: number, cwd?: string): Promise<Started> {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'close' comes after the exit and after its pipes are closed, so nothing of the process outlives the test.
  let closed = false;
  const whenClosed = new Promise<void>((done) => child.once('close', () => ((closed = true), done())));
  const stop = async () => {
    if (!closed) child.kill('SIGTERM');
    await whenClosed;
  };
  try {
    await waitForPort(port, child, name, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, stop };
}

/**
 * A Python upstream (not Express): answers every request with the request headers it received, as JSON, so a test
 * sees exactly what the proxy passed on.
 */
export async function startEchoUpstream(): Promise<Started> {
  const port = await freePort();
  const script = [
    'import json, sys',
    'from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer',
    'class Echo(BaseHTTPRequestHandler):',
    '    def answer(self):',
    '        body = json.dumps({"method": self.command, "path": self.path, "headers": [[k, v] for k, v in self.headers.items()]}).encode()',
    '        self.send_response(200)',
    '        self.send_header("Content-Type", "application/json")',
    '        self.send_header("Content-Length", str(len(body)))',
    '        self.end_headers()',
    '        if self.command != "HEAD": self.wfile.write(body)',
    '    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = do_PATCH = answer',
    '    def log_message(self, *args): pass',
    'ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()',
  ].join('\n');
  return startProcess('python3 upstream', 'python3', ['-c', script, String(port)], port);
}

/** The fenced block of docs/forward-auth.md whose info string is `lang title`, e.g. `caddyfile Caddyfile`. */
export function docsBlock(info: string): string {
  const text = readFileSync(resolve(__dirname, '../../docs/forward-auth.md'), 'utf8');
  const start = text.indexOf(`\`\`\`${info}\n`);
  if (start === -1) throw new Error(`docs/forward-auth.md has no \`\`\`${info} block`);
  const body = start + info.length + 4;
  const end = text.indexOf('\n```', body);
  if (end === -1) throw new Error(`docs/forward-auth.md: the \`\`\`${info} block is not closed`);
  return text.slice(body, end + 1);
}

/** A docs config with its example addresses replaced by the test's. */
export function docsConfig(info: string, ports: { proxy: number; portal: number; upstream: number }): string {
  return docsBlock(info)
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${ports.portal}`)
    .replaceAll('127.0.0.1:8000', `127.0.0.1:${ports.upstream}`)
    .replaceAll('8080', String(ports.proxy))
    .replaceAll('example.test', FA_DOMAIN);
}

/** Caddy, run on `config` (a Caddyfile) until `stop()`. */
export async function startCaddy(config: string, port: number): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), 'fa-caddy-'));
  writeFileSync(join(dir, 'Caddyfile'), config);
  const started = await startProcess('caddy', 'caddy', ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], port, dir);
  return {
    port,
    stop: async () => {
      await started.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** nginx in the foreground on `config` (the `http { }` content), with its pid and temp files in a directory of its own. */
export async function startNginx(serverConfig: string, port: number): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), 'fa-nginx-'));
  const conf = [
    'daemon off;',
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    'error_log stderr warn;',
    'events { worker_connections 64; }',
    'http {',
    `  access_log off;`,
    `  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;`,
    `  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;`,
    serverConfig,
    '}',
  ].join('\n');
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const started = await startProcess('nginx', 'nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], port, dir);
  return {
    port,
    stop: async () => {
      await started.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The portal of the tests: a login form, a step-up form, sign-out and `forwardAuth` at `/authz`. */
export interface TestPortal extends Started {
  sessions: SsoSessionMiddleware;
  server: Server;
}

/** The portal, for a front door on `proxyPort`, with `forwardAuth` trusting `trustedProxies`. */
export async function startPortal(
  proxyPort: number,
  extra: Partial<ForwardAuthOptions> = {},
): Promise<TestPortal & { cleanup(): Promise<void> }> {
  const redis = await testRedisStore('forward-auth');
  const sessions = ssoSession({
    store: redis.store,
    cookieDomain: FA_DOMAIN,
    secret: FA_SECRET,
    loginUrl: `http://auth.${FA_DOMAIN}:${proxyPort}/login`,
    allowInsecureLocalDevelopment: true,
    allowedRedirectPorts: [proxyPort],
    // The session cache, as forward-auth deployments run it: revocations must still reach the next sub-request.
    cache: {},
    csrf: { allowedOrigins: [`http://shop.${FA_DOMAIN}:${proxyPort}`] },
  } as Parameters<typeof ssoSession>[0]);
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use('/authz', forwardAuth({ session: sessions, trustedProxies: ['127.0.0.1', '::1'], rules: DOCS_RULES, ...extra }));
  app.use(express.urlencoded({ extended: false }));
  app.use(sessions);
  const form = (action: string, button: string, returnTo: string) =>
    `<!doctype html><title>${button}</title><form method="post" action="${action}">` +
    `<input type="hidden" name="return_to" value="${returnTo.replace(/"/g, '&quot;')}"><button>${button}</button></form>`;
  app.get('/login', (req, res) => {
    res.type('html').send(form('/login', 'Sign in', String(req.query.return_to ?? '')));
  });
  app.post(
    '/login',
    guarded(async (req, res) => {
      await establishLogin(req, { source: 'directory:staff', subject: 'alice', name: 'Alice Zoë', roles: ['staff'], method: 'password' });
      res.redirect(303, req.sso!.redirects.sanitize(req.body.return_to));
    }),
  );
  app.get('/step-up', (req, res) => {
    res.type('html').send(form('/step-up', 'Confirm with a code', String(req.query.return_to ?? '')));
  });
  app.post(
    '/step-up',
    guarded(async (req, res) => {
      await raiseSessionAuthentication(req, 'otp');
      res.redirect(303, req.sso!.redirects.sanitize(req.body.return_to));
    }),
  );
  // The shop of the journeys: its sign-out form posts to its own origin, like any app of the domain.
  app.get('/account', (req, res) => {
    res
      .type('html')
      .send(`<!doctype html><title>Shop</title><p>Signed in as ${req.user?.name ?? 'nobody'}</p>` + form('/logout', 'Sign out', ''));
  });
  app.post(
    '/logout',
    guarded(async (req, res) => {
      await logout(req, res);
      res.redirect(303, `http://auth.${FA_DOMAIN}:${proxyPort}/login`);
    }),
  );
  app.use(errorHandler({ html: true }));
  const port = await freePort();
  const server = await new Promise<Server>((resolveServer) => {
    const listening = app.listen(port, '127.0.0.1', () => resolveServer(listening));
  });
  const stop = async () => {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  };
  return {
    port,
    server,
    sessions,
    stop,
    cleanup: async () => {
      await stop();
      await sessions.manager.close();
      await redis.cleanup();
    },
  };
}
