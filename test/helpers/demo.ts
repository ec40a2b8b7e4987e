import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import request from 'supertest';
import type { SiteName } from '../../example-app/common/config';
import { setCookieValue } from './cookies';
import { startPrivateRedis, type PrivateRedis } from './redis';

/** The demo secret the tests give `npm run demo`, so they can mint the api's tokens. */
export const DEMO_TEST_SECRET = 'demo-processes-test-secret-0123456789abcdef';

/** Options of {@link startDemoProcesses}. */
export interface DemoProcessOptions {
  /** Parent domain. Default `sso.localhost` (a loopback name, so QR login is on over http). */
  domain?: string;
  /** More environment for the launcher (DEMO_TLS_CERT, DEMO_REDIS, …). */
  env?: Record<string, string>;
  /** Give the launcher this Redis instead of a private one started for the test; `false`: none (DEMO_REDIS decides). */
  redisUrl?: string | false;
  /** The front door speaks https (DEMO_TLS_*). */
  https?: boolean;
  /**
   * The demo secret to give the launcher (DEMO_SECRET), default {@link DEMO_TEST_SECRET}; `false` gives none, so the
   * launcher keeps its own in DEMO_DATA_DIR (pass one in `env`, or it lands in the checkout's `.demo/`), as a user's does.
   */
  secret?: string | false;
}

/** `npm run demo`, started as a user starts it (every site its own process), on a free port. */
export interface DemoProcesses {
  /** The launcher process. */
  launcher: ChildProcess;
  port: number;
  domain: string;
  /** Each site's process id, as the launcher reported it. */
  pids: Partial<Record<SiteName, number>>;
  /** The partner app's own domain (DEMO_PARTNER_DOMAIN, default `partner.localhost`). */
  partnerDomain: string;
  /** `http://<site>.<domain>:<port><path>` (the partner: `http://<partnerDomain>:<port><path>`) */
  url(site: SiteName, path?: string): string;
  /** Requests to a site through the front door (the right Host header on the loopback port). */
  site(site: SiteName): {
    get(path: string): request.Test;
    post(path: string): request.Test;
    options(path: string): request.Test;
    head(path: string): request.Test;
  };
  /** Logs in at the portal as a browser would; resolves to the `sso.sid=…` cookie pair. */
  login(username: string, password: string): Promise<string>;
  /** Everything the launcher printed so far. */
  output(): string;
  /** Ctrl-C, as a user stops it; resolves once the launcher has exited. */
  close(): Promise<void>;
}

// The test decides the demo's secret: one in the environment of whoever runs the tests does not count.
function withoutDemoSecret(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { DEMO_SECRET: _ignored, ...rest } = env;
  return rest;
}

/**
 * Starts the demo exactly as `npm run demo` does (tsx on example-app/demo.ts), with PORT=0, the given domain and a
 * private Redis, and waits for its banner.
 *
 * @example
 * const demo = await startDemoProcesses();
 * await demo.site('shop').get('/me').set('Cookie', await demo.login('alice', 'alice-password'));
 */
export async function startDemoProcesses(options: DemoProcessOptions = {}): Promise<DemoProcesses> {
  const domain = options.domain ?? 'sso.localhost';
  const redis: PrivateRedis | undefined = options.redisUrl === undefined ? await startPrivateRedis() : undefined;
  const redisUrl = options.redisUrl === undefined ? redis!.url : options.redisUrl || '';
  const launcher = spawn(process.execPath, [require.resolve('tsx/cli'), 'example-app/demo.ts'], {
    cwd: resolve(__dirname, '../..'),
    env: {
      ...withoutDemoSecret(process.env),
      NODE_OPTIONS: '',
      PORT: '0',
      DEMO_DOMAIN: domain,
      ...(options.secret === false ? {} : { DEMO_SECRET: options.secret ?? DEMO_TEST_SECRET }),
      REDIS_URL: redisUrl,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const pids: Partial<Record<SiteName, number>> = {};
  // A demo that did not come up leaves no private Redis behind: the caller never gets a handle to stop it.
  const port = await new Promise<number>((ready, fail) => {
    const timer = setTimeout(() => {
      // Stopped, or its sites would outlive the test (the caller never gets a handle to close).
      launcher.kill('SIGINT');
      fail(new Error(`the demo did not start within 90 s:\n${output}`));
    }, 90_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      for (const match of output.matchAll(/\[demo \] (\w+) runs as process (\d+)/g)) pids[match[1] as SiteName] = Number(match[2]);
      const banner = /demo ready on [^:]+:(\d+)/.exec(output);
      if (banner) {
        clearTimeout(timer);
        ready(Number(banner[1]));
      }
    };
    launcher.stdout!.on('data', read);
    launcher.stderr!.on('data', read);
    launcher.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the demo exited with ${code}:\n${output}`));
    });
  }).catch(async (error: unknown) => {
    await redis?.stop();
    throw error;
  });
  const scheme = options.https ? 'https' : 'http';
  const partnerDomain = options.env?.DEMO_PARTNER_DOMAIN ?? 'partner.localhost';
  const hostOf = (site: SiteName) => (site === 'partner' ? partnerDomain : `${site}.${domain}`);
  const url = (site: SiteName, path = '/') => `${scheme}://${hostOf(site)}:${port}${path}`;
  const site = (name: SiteName) => {
    const agent = request(`${scheme}://127.0.0.1:${port}`);
    const host = `${hostOf(name)}:${port}`;
    const tls = <T extends request.Test>(test: T): T => (options.https ? (test.trustLocalhost(true).disableTLSCerts() as T) : test);
    return {
      get: (path: string) => tls(agent.get(path).set('Host', host)),
      post: (path: string) => tls(agent.post(path).set('Host', host)),
      options: (path: string) => tls(agent.options(path).set('Host', host)),
      head: (path: string) => tls(agent.head(path).set('Host', host)),
    };
  };
  const cookieName = options.https ? '__Secure-sso.sid' : 'sso.sid';
  return {
    launcher,
    port,
    domain,
    partnerDomain,
    pids,
    url,
    site,
    async login(username, password) {
      const res = await site('auth')
        .post('/login')
        .set('Origin', new URL(url('auth')).origin)
        .type('form')
        .send({ username, password, return_to: url('shop') });
      const cookie = setCookieValue(res, cookieName);
      if (res.status !== 302 || !cookie) throw new Error(`login as ${username} failed with ${res.status}`);
      return cookie;
    },
    output: () => output,
    async close() {
      if (launcher.exitCode === null && launcher.signalCode === null) {
        await new Promise<void>((done) => {
          launcher.removeAllListeners('exit');
          launcher.once('exit', () => done());
          launcher.kill('SIGINT');
        });
      }
      await redis?.stop();
    },
  };
}

/**
 * True while a process with this id exists.
 *
 * @example
 * expect(isRunning(demo.pids.shop!)).toBe(false);
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
