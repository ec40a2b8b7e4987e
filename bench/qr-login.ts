/**
 * QR-login benchmark: complete logins (create → scan → confirm → collect redirect → exchange → userinfo) against the
 * provider on Redis, with the per-step p50/p99.
 *
 * The runner (`npm run bench -- --suite qr-login`) starts the provider in its own server process pinned to one CPU
 * and drives it from the load generator's process on the other CPU, and reports the provider's CPU time per login.
 * Run alone, this file puts both in one process (quick local check, figures not isolated):
 *
 *   npx tsx bench/qr-login.ts [logins] [concurrency]
 *
 * Needs a Redis on SSO_BENCH_REDIS_URL (default redis://127.0.0.1:6379); keys go under a random prefix and are
 * deleted afterwards.
 */
import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import express from 'express';
import Redis from 'ioredis';
import jwt from 'jsonwebtoken';
import { errorHandler } from '../lib/http';
import { hashAppSecret } from '../lib/qr/app-registry';
import { qrLoginProvider } from '../lib/qr/qr-login-provider';
import { qrTokenIssuer } from '../lib/qr/qr-token-issuer';
import { RedisStore } from '../lib/store';
import { KeySet } from '../lib/tokens/key-set';
import { requireBearer } from '../lib/tokens/require-bearer';
import { TokenService } from '../lib/tokens/token-service';
import { listen, type BenchCase, type CaseApp } from './harness';
import { qrFloorApp } from './qr-floor';

/** Made once by the runner and sent to the provider's process and to the client's: secrets, prefix, Redis. */
export interface QrFixtures {
  redisUrl: string;
  prefix: string;
  /** HS256 secret of the phone app's tokens, base64url. */
  phoneSecret: string;
  /** A phone-app token for the scanning user, signed with `phoneSecret`. */
  phoneToken: string;
  /** The relying app's client secret (the provider keeps only its hash). */
  appSecret: string;
  redirectUri: string;
}

const ISSUER = 'https://idp.example.test';

/**
 * Fresh fixtures under a random Redis key prefix.
 *
 * @example
 * const fixtures = qrFixtures('redis://127.0.0.1:6379');
 */
export function qrFixtures(redisUrl: string): QrFixtures {
  const phoneSecret = randomBytes(32);
  return {
    redisUrl,
    prefix: `ssobench:qr:${randomBytes(4).toString('hex')}:`,
    phoneSecret: phoneSecret.toString('base64url'),
    phoneToken: jwt.sign({ sub: 'bench-user' }, phoneSecret, {
      algorithm: 'HS256',
      issuer: ISSUER,
      audience: 'phone-app',
      expiresIn: 7200,
      header: { alg: 'HS256', typ: 'at+jwt' },
    }),
    appSecret: randomBytes(24).toString('base64url'),
    redirectUri: 'https://shop.example.test/callback/qr',
  };
}

/**
 * The provider under test: `qrLoginProvider` on a RedisStore, ES256 tokens from a `TokenService`, the phone app
 * authenticated by an HS256 `requireBearer`, rate limits off (the bench is one client). With `autoPipelining` the
 * store's ioredis connection batches the commands of concurrent requests.
 *
 * @example
 * const { app, close } = qrProviderApp(fixtures);
 */
export function qrProviderApp(fixtures: QrFixtures, autoPipelining = false): CaseApp {
  // ioredis's enableAutoPipelining sends the commands of one event-loop turn in one socket write.
  const connection = autoPipelining ? { url: fixtures.redisUrl, redisOptions: { enableAutoPipelining: true } } : fixtures.redisUrl;
  const store = new RedisStore(connection, { prefix: fixtures.prefix });
  const tokenService = new TokenService({ keys: KeySet.generate('ES256'), issuer: ISSUER, store, accessTokenLifetimeSeconds: 7200 });
  const app = express();
  app.disable('x-powered-by');
  app.use(
    qrLoginProvider({
      store,
      apps: [{ appid: 'shop', secretHash: hashAppSecret(fixtures.appSecret), name: 'Shop', redirectUris: [fixtures.redirectUri] }],
      users: { findById: async (id) => ({ id, name: `User ${id}` }) },
      tokens: qrTokenIssuer(tokenService),
      authenticateApp: requireBearer({
        secret: Buffer.from(fixtures.phoneSecret, 'base64url'),
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: 'phone-app',
      }),
      appTokenIssuer: ISSUER,
      rateLimits: false,
    }),
  );
  app.use(errorHandler({ log: false }));
  return { app, close: () => store.close() };
}

/**
 * The provider as a bench case, for the server process (bench/server-entry.ts).
 *
 * @example
 * const [provider] = qrCases();
 */
export function qrCases(): BenchCase<QrFixtures>[] {
  return [
    {
      name: 'provider',
      description: 'qrLoginProvider on Redis, ES256 tokens',
      app: (fixtures) => qrProviderApp(fixtures),
      requests: () => [],
    },
    {
      name: 'provider-autopipelining',
      description: 'the same, the RedisStore connection with enableAutoPipelining',
      app: (fixtures) => qrProviderApp(fixtures, true),
      requests: () => [],
    },
    {
      name: 'http-floor',
      description: 'the six requests answered by Express with canned answers of the same shape: no Redis, no tokens',
      app: () => qrFloorApp(),
      requests: () => [],
    },
  ];
}

export const QR_STEPS = ['create', 'scan', 'confirm', 'redirect', 'exchange', 'userinfo'] as const;
export type QrStep = (typeof QR_STEPS)[number];

/** Latency of one step (or of the whole login) across all logins, in milliseconds. */
export interface QrStepFigures {
  step: string;
  p50: number;
  p99: number;
  mean: number;
}

/** What one client run measured. */
export interface QrClientFigures {
  logins: number;
  concurrency: number;
  failures: number;
  seconds: number;
  loginsPerSecond: number;
  /** One row per step, then `login` (the whole login, create to userinfo). */
  steps: QrStepFigures[];
}

/** How the client drives the provider: a number of logins or a duration, a concurrency, or a fixed arrival rate. */
export interface QrClientPlan {
  /** Logins in flight at once (closed loop). Ignored when `ratePerSecond` is set. */
  concurrency: number;
  /** Stop after this many logins. */
  logins?: number;
  /** Stop starting logins after this many seconds. */
  durationSeconds?: number;
  /** Open loop: start logins at this fixed rate whatever the answers' speed, so latency shows queueing. */
  ratePerSecond?: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/**
 * p50, p99 and mean of a list of milliseconds.
 *
 * @example
 * summarise('login', [1.2, 3.4]);
 */
export function summarise(step: string, samples: number[]): QrStepFigures {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length);
  return { step, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Runs complete QR logins against a provider at `base` and returns throughput and per-step latency. It speaks plain
 * node:http over keep-alive sockets (cheaper than fetch, so the client is not what limits the figures).
 *
 * @example
 * const figures = await runQrClient('http://127.0.0.1:3000', fixtures, { concurrency: 16, durationSeconds: 5 });
 */
export async function runQrClient(base: string, fixtures: QrFixtures, plan: QrClientPlan): Promise<QrClientFigures> {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(plan.concurrency, 64) });
  const samples: Record<QrStep | 'login', number[]> = {
    create: [],
    scan: [],
    confirm: [],
    redirect: [],
    exchange: [],
    userinfo: [],
    login: [],
  };
  let failures = 0;
  let completed = 0;

  const send = (method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method,
          path,
          agent,
          headers: body ? { ...headers, 'content-length': Buffer.byteLength(body) } : headers,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const step = async (name: QrStep, expected: number, run: () => Promise<Answer>): Promise<Answer> => {
    const started = performance.now();
    const answer = await run();
    samples[name].push(performance.now() - started);
    if (answer.status !== expected) throw new Error(`${name}: expected ${expected}, got ${answer.status}: ${answer.body.slice(0, 200)}`);
    return answer;
  };
  const phone = { authorization: `Bearer ${fixtures.phoneToken}`, 'content-type': 'application/json' };
  const connectPath = `/sns/oauth2/qrconnect?${new URLSearchParams({
    appid: 'shop',
    redirect_uri: fixtures.redirectUri,
    response_type: 'code',
    scope: 'snsapi_login',
    state: 'bench',
    format: 'json',
  })}`;

  const oneLogin = async (): Promise<void> => {
    const started = performance.now();
    const created = await step('create', 201, () => send('GET', connectPath, {}));
    const links = JSON.parse(created.body) as { qr_url: string; redirection_url: string };
    const binding = (created.headers['set-cookie']?.[0] ?? '').split(';')[0] ?? '';
    const resource = new URL(links.qr_url).pathname.replace(/\/confirmation$/, '');
    await step('scan', 200, () => send('PATCH', resource, phone, '{"status":"scanned"}'));
    await step('confirm', 200, () => send('PATCH', resource, phone, '{"status":"confirmed"}'));
    const redirected = await step('redirect', 302, () => send('GET', new URL(links.redirection_url).pathname, { cookie: binding }));
    const code = new URL(String(redirected.headers.location)).searchParams.get('code') ?? '';
    const form = new URLSearchParams({ appid: 'shop', secret: fixtures.appSecret, code, grant_type: 'authorization_code' }).toString();
    const exchanged = await step('exchange', 200, () =>
      send('POST', '/sns/oauth2/access_token', { 'content-type': 'application/x-www-form-urlencoded' }, form),
    );
    const tokens = JSON.parse(exchanged.body) as { access_token: string; openid: string };
    await step('userinfo', 200, () =>
      send('GET', `/sns/userinfo?openid=${encodeURIComponent(tokens.openid)}`, { authorization: `Bearer ${tokens.access_token}` }),
    );
    samples.login.push(performance.now() - started);
  };
  const attempt = async (): Promise<void> => {
    try {
      await oneLogin();
      completed += 1;
    } catch (error) {
      failures += 1;
      if (failures <= 3) console.error(`[qr-login bench] login failed: ${(error as Error).message}`);
    }
  };

  const started = performance.now();
  const deadline = plan.durationSeconds === undefined ? Infinity : started + plan.durationSeconds * 1000;
  const limit = plan.logins ?? Infinity;
  let begun = 0;
  const more = () => begun < limit && performance.now() < deadline;
  try {
    if (plan.ratePerSecond) {
      // Open loop: logins start on a fixed schedule; one that falls behind does not delay the next.
      const interval = 1000 / plan.ratePerSecond;
      const running: Promise<void>[] = [];
      while (more()) {
        const due = started + begun * interval;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
        begun += 1;
        running.push(attempt());
      }
      await Promise.all(running);
    } else {
      const worker = async () => {
        while (more()) {
          begun += 1;
          await attempt();
        }
      };
      await Promise.all(Array.from({ length: plan.concurrency }, worker));
    }
  } finally {
    agent.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    logins: completed + failures,
    concurrency: plan.concurrency,
    failures,
    seconds,
    loginsPerSecond: completed / seconds,
    steps: [...QR_STEPS, 'login' as const].map((name) => summarise(name, samples[name])),
  };
}

/**
 * Deletes every key under the fixtures' prefix.
 *
 * @example
 * await deleteQrKeys(fixtures);
 */
export async function deleteQrKeys(fixtures: QrFixtures): Promise<void> {
  const client = new Redis(fixtures.redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${fixtures.prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    await client.quit();
  }
}

/**
 * Prints a client run as a small table.
 *
 * @example
 * console.log(formatQrLoginBench(figures));
 */
export function formatQrLoginBench(result: QrClientFigures): string {
  return [
    `QR login: ${result.logins} logins, concurrency ${result.concurrency}, ${result.failures} failures, ${result.seconds.toFixed(2)} s`,
    `complete logins per second: ${result.loginsPerSecond.toFixed(1)}`,
    '',
    'step       p50 ms   p99 ms   mean ms',
    ...result.steps.map(
      (s) => `${s.step.padEnd(9)} ${s.p50.toFixed(2).padStart(7)}  ${s.p99.toFixed(2).padStart(7)}  ${s.mean.toFixed(2).padStart(8)}`,
    ),
  ].join('\n');
}

if (require.main === module) {
  const logins = Number(process.argv[2] ?? 300);
  const concurrency = Number(process.argv[3] ?? 16);
  const fixtures = qrFixtures(process.env.SSO_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379');
  const provider = qrProviderApp(fixtures);
  listen(provider.app)
    .then(async (server) => {
      try {
        console.log(formatQrLoginBench(await runQrClient(server.url, fixtures, { logins, concurrency })));
      } finally {
        await server.close();
        await provider.close?.();
        await deleteQrKeys(fixtures);
      }
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
