/**
 * QR-login benchmark: complete logins per second through the provider on one process with Redis
 * (create → scan → confirm → collect redirect → exchange → userinfo), and the p50/p99 of each step.
 *
 *   npx tsx bench/qr-login.ts [logins] [concurrency]
 *
 * Needs a Redis on SSO_BENCH_REDIS_URL (default redis://127.0.0.1:6379); keys go under a random prefix and are
 * deleted afterwards.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import jwt from 'jsonwebtoken';
import { errorHandler } from '../lib/http';
import { generateAppSecret, hashAppSecret } from '../lib/qr/app-registry';
import { qrLoginProvider } from '../lib/qr/qr-login-provider';
import { qrTokenIssuer } from '../lib/qr/qr-token-issuer';
import { RedisStore } from '../lib/store';
import { KeySet } from '../lib/tokens/key-set';
import { requireBearer } from '../lib/tokens/require-bearer';
import { TokenService } from '../lib/tokens/token-service';

/** Options of {@link runQrLoginBench}. */
export interface QrLoginBenchOptions {
  /** Complete logins to run. Default 300. */
  logins?: number;
  /** Logins in flight at once. Default 16. */
  concurrency?: number;
  /** Redis to use. Default SSO_BENCH_REDIS_URL or redis://127.0.0.1:6379. */
  redisUrl?: string;
}

/** Latency of one step across all logins, in milliseconds. */
export interface QrStepFigures {
  step: string;
  p50: number;
  p99: number;
  mean: number;
}

/** What {@link runQrLoginBench} measured. */
export interface QrLoginBenchResult {
  logins: number;
  concurrency: number;
  failures: number;
  seconds: number;
  loginsPerSecond: number;
  steps: QrStepFigures[];
}

const STEPS = ['create', 'scan', 'confirm', 'redirect', 'exchange', 'userinfo'] as const;
type Step = (typeof STEPS)[number];

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

async function deletePrefix(store: RedisStore): Promise<void> {
  const client = store.client as import('ioredis').default;
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${store.prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await client.del(...keys);
  } while (cursor !== '0');
}

/**
 * Runs complete QR logins against an in-process provider on Redis and returns throughput and per-step latency.
 *
 * @example
 * const { loginsPerSecond, steps } = await runQrLoginBench({ logins: 500, concurrency: 16 });
 */
export async function runQrLoginBench(options: QrLoginBenchOptions = {}): Promise<QrLoginBenchResult> {
  const logins = options.logins ?? 300;
  const concurrency = options.concurrency ?? 16;
  const store = new RedisStore(options.redisUrl ?? process.env.SSO_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', {
    prefix: `ssobench:qr:${randomBytes(4).toString('hex')}:`,
  });
  const keys = KeySet.generate('ES256');
  const tokenService = new TokenService({ keys, issuer: 'https://idp.example.test', store, accessTokenLifetimeSeconds: 7200 });
  const phoneSecret = randomBytes(32);
  const appSecret = generateAppSecret();
  const redirectUri = 'https://shop.example.test/callback/qr';
  const app = express();
  app.use(
    qrLoginProvider({
      store,
      apps: [{ appid: 'shop', secretHash: hashAppSecret(appSecret), name: 'Shop', redirectUris: [redirectUri] }],
      users: { findById: async (id) => ({ id, name: `User ${id}` }) },
      tokens: qrTokenIssuer(tokenService),
      authenticateApp: requireBearer({
        secret: phoneSecret,
        algorithms: ['HS256'],
        issuer: 'https://idp.example.test',
        audience: 'phone-app',
      }),
      appTokenIssuer: 'https://idp.example.test',
      rateLimits: false,
    }),
  );
  app.use(errorHandler({ log: false }));
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const port = (server.address() as { port: number }).port;
  const base = `http://127.0.0.1:${port}`;
  const phoneToken = jwt.sign({ sub: 'bench-user' }, phoneSecret, {
    algorithm: 'HS256',
    issuer: 'https://idp.example.test',
    audience: 'phone-app',
    expiresIn: 3600,
  });
  const samples: Record<Step, number[]> = { create: [], scan: [], confirm: [], redirect: [], exchange: [], userinfo: [] };
  let failures = 0;

  const timed = async <T>(step: Step, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await run();
    samples[step].push(performance.now() - started);
    return result;
  };
  const expectStatus = async (res: Response, status: number): Promise<Response> => {
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${await res.text()}`);
    return res;
  };
  const patch = (authCode: string, status: string) =>
    fetch(`${base}/sns/qr-logins/${authCode}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${phoneToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status }),
    }).then((res) => expectStatus(res, 200));

  const oneLogin = async (): Promise<void> => {
    const query = new URLSearchParams({
      appid: 'shop',
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'snsapi_login',
      state: 'bench',
      format: 'json',
    });
    const created = await timed('create', () => fetch(`${base}/sns/oauth2/qrconnect?${query}`).then((res) => expectStatus(res, 201)));
    const links = (await created.json()) as { qr_url: string; redirection_url: string };
    const binding = (created.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const authCode = /qr-logins\/([^/]+)\//.exec(links.qr_url)?.[1] ?? '';
    await timed('scan', () => patch(authCode, 'scanned'));
    await timed('confirm', () => patch(authCode, 'confirmed'));
    const redirected = await timed('redirect', () =>
      fetch(links.redirection_url, { headers: { cookie: binding }, redirect: 'manual' }).then((res) => expectStatus(res, 302)),
    );
    const code = new URL(redirected.headers.get('location') ?? '').searchParams.get('code') ?? '';
    const exchanged = await timed('exchange', () =>
      fetch(`${base}/sns/oauth2/access_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ appid: 'shop', secret: appSecret, code, grant_type: 'authorization_code' }).toString(),
      }).then((res) => expectStatus(res, 200)),
    );
    const tokens = (await exchanged.json()) as { access_token: string; openid: string };
    await timed('userinfo', () =>
      fetch(`${base}/sns/userinfo?openid=${tokens.openid}`, { headers: { authorization: `Bearer ${tokens.access_token}` } }).then((res) =>
        expectStatus(res, 200),
      ),
    );
  };

  const started = performance.now();
  let seconds: number;
  let next = 0;
  const worker = async () => {
    while (next < logins) {
      next += 1;
      try {
        await oneLogin();
      } catch (error) {
        failures += 1;
        if (failures <= 3) console.error(`[qr-login bench] login failed: ${(error as Error).message}`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    seconds = (performance.now() - started) / 1000;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await deletePrefix(store).catch(() => undefined);
    await store.close();
  }
  return {
    logins,
    concurrency,
    failures,
    seconds,
    loginsPerSecond: (logins - failures) / seconds,
    steps: STEPS.map((step) => {
      const sorted = [...samples[step]].sort((a, b) => a - b);
      const mean = sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length);
      return { step, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean };
    }),
  };
}

/** Prints the figures as a small table. */
export function formatQrLoginBench(result: QrLoginBenchResult): string {
  const lines = [
    `QR login: ${result.logins} logins, concurrency ${result.concurrency}, ${result.failures} failures, ${result.seconds.toFixed(2)} s`,
    `complete logins per second: ${result.loginsPerSecond.toFixed(1)}`,
    '',
    'step       p50 ms   p99 ms   mean ms',
    ...result.steps.map(
      (s) => `${s.step.padEnd(9)} ${s.p50.toFixed(2).padStart(7)}  ${s.p99.toFixed(2).padStart(7)}  ${s.mean.toFixed(2).padStart(8)}`,
    ),
  ];
  return lines.join('\n');
}

if (require.main === module) {
  const logins = Number(process.argv[2] ?? 300);
  const concurrency = Number(process.argv[3] ?? 16);
  runQrLoginBench({ logins, concurrency })
    .then((result) => {
      console.log(formatQrLoginBench(result));
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
