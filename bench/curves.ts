/**
 * Cost curves: how the kit's costs grow with the work. Session checks with 10³, 10⁵ and 10⁶ sessions in Redis,
 * logout everywhere for a user with 1, 100 and 10,000 sessions, Redis memory per session and per user index,
 * Bearer verification with 1, 10 and 100 keys in the JWKS. Runs against a private `redis-server --save ''` on a free
 * port (bulk-loaded with pipelines), so the machine's Redis is never filled with a million keys.
 */
import { createHmac, randomBytes } from 'node:crypto';
import express from 'express';
import Redis from 'ioredis';
import { ssoSession } from '../lib/session';
import { RedisStore } from '../lib/store';
import { requireBearer } from '../lib/tokens';
import { startPrivateRedis } from '../test/helpers/redis';
import { protectedApp, tokenRequests } from './bearer';
import {
  listen,
  measureCase,
  type BenchCase,
  type BenchSuite,
  type CaseResult,
  type LoadGenerator,
  type LoadSettings,
  type Placement,
} from './harness';
import { kitSessionCases } from './sessions-kit';
import { collectCookies, cookieRequests, type SessionFixtures } from './sessions';

/** Fixtures of the curve cases' server processes. */
export interface CurveFixtures extends SessionFixtures {
  jwksUri: string;
  issuer: string;
  audience: string;
}

const subjectOf = (req: Express.Request): unknown => req.auth?.payload.sub;

/**
 * The curve cases, for the server process: the kit's session check (uncached, so every request reads Redis) and
 * an uncached ES256 Bearer check against the fixtures' JWKS.
 *
 * @example
 * const cases = curveCases();
 */
export function curveCases(): BenchCase<CurveFixtures>[] {
  const session = kitSessionCases()[0]!;
  return [
    { ...session, name: 'session-check' } as BenchCase<CurveFixtures>,
    {
      name: 'bearer-es256-uncached',
      description: 'requireBearer({ jwksUri, algorithms: [ES256], cacheSize: 0 })',
      app: ({ jwksUri, issuer, audience }) => ({
        app: protectedApp(requireBearer({ jwksUri, algorithms: ['ES256'], issuer, audience, cacheSize: 0 }), subjectOf),
      }),
      requests: () => [],
    },
  ];
}

/** One point of a curve. */
export interface CurvePoint {
  x: number;
  y: number;
  note?: string;
}

/** Everything the curves measured. */
export interface CurveResults {
  sessionCheck: Array<{ sessions: number; result: CaseResult; loadSeconds: number }>;
  logoutEverywhere: CurvePoint[];
  memory: { perSessionBytes: number; indexOneBytes: number; indexHundredBytes: number; perIndexMemberBytes: number };
  bearer: Array<{ keys: number; result: CaseResult }>;
}

function signedCookie(sessionId: string, secret: string): string {
  const signature = createHmac('sha256', Buffer.from(secret, 'utf8')).update(sessionId).digest('base64').slice(0, 43);
  return `__Secure-sso.sid=${encodeURIComponent(`s:${sessionId}.${signature}`)}`;
}

/** Writes `count` copies of a stored session under fresh ids with pipelines of 10,000 SETs; returns the ids. */
async function cloneSessions(redis: Redis, keyPrefix: string, template: string, count: number, keep: number): Promise<string[]> {
  const kept: string[] = [];
  for (let done = 0; done < count;) {
    const pipeline = redis.pipeline();
    const batch = Math.min(10_000, count - done);
    for (let index = 0; index < batch; index += 1) {
      const id = randomBytes(24).toString('base64url');
      if (kept.length < keep) kept.push(id);
      pipeline.set(`${keyPrefix}${id}`, template, 'PX', 3_600_000);
    }
    await pipeline.exec();
    done += batch;
  }
  return kept;
}

function sessionIdOf(cookie: string): string {
  return decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1))
    .slice(2)
    .split('.')[0]!;
}

/**
 * Runs every curve and returns the figures. `settings` are the runner's, used with a shorter measured run.
 *
 * @example
 * const curves = await runCurves(settings, placement, generator);
 */
export async function runCurves(settings: LoadSettings, placement: Placement, generator: LoadGenerator): Promise<CurveResults> {
  // jose is ESM-only; this package compiles to CommonJS.
  const { exportJWK, generateKeyPair, SignJWT } = await import('jose');
  const redisServer = await startPrivateRedis();
  const redis = new Redis(redisServer.url);
  const short: LoadSettings = { ...settings, durationSeconds: Math.max(1, Math.min(settings.durationSeconds, 2)) };
  const issuer = 'https://idp.example.test';
  const audience = 'https://api.example.test';
  let jwksKeys: unknown[] = [];
  const jwksApp = express();
  jwksApp.get('/jwks.json', (_req, res) => {
    res.json({ keys: jwksKeys });
  });
  const jwksServer = await listen(jwksApp);
  const fixtures: CurveFixtures = {
    redisUrl: redisServer.url,
    prefix: `ssobench:curves:${randomBytes(4).toString('hex')}:`,
    secret: randomBytes(32).toString('base64url'),
    jwksUri: `${jwksServer.url}/jwks.json`,
    issuer,
    audience,
  };
  const cases = curveCases();
  const suite: BenchSuite<CurveFixtures> = { name: 'curves', workload: 'cost curves', fixtures, cases, targets: [] };
  const measure = (name: string, requests: BenchCase<CurveFixtures>['requests']) =>
    measureCase(suite as BenchSuite, { ...cases.find((c) => c.name === name)!, requests } as BenchCase, short, placement, generator);
  const keyPrefix = `${fixtures.prefix}kit:sess:`;
  try {
    // A real session written by the kit is the template of every clone.
    let template: string | null = null;
    const sessionCheck: CurveResults['sessionCheck'] = [];
    let loaded = 0;
    let cookies: string[] = [];
    for (const sessions of [1_000, 100_000, 1_000_000]) {
      const started = performance.now();
      const result = await measure('session-check', async (url) => {
        if (template === null) {
          const [cookie] = await collectCookies(url, 1, '__Secure-sso.sid');
          template = await redis.get(`${keyPrefix}${sessionIdOf(cookie!)}`);
          if (template === null) throw new Error('the logged-in session is not in Redis');
          loaded = 1;
        }
        const ids = await cloneSessions(redis, keyPrefix, template, sessions - loaded, cookies.length === 0 ? 100 : 0);
        if (cookies.length === 0) cookies = ids.map((id) => signedCookie(id, fixtures.secret));
        loaded = sessions;
        return cookieRequests(cookies);
      });
      const loadSeconds = (performance.now() - started) / 1000 - short.durationSeconds - short.warmupSeconds;
      console.log(
        `  session check with ${sessions.toLocaleString('en-US')} sessions: ${Math.round(result.requestsPerSecond)} req/s, ${Math.round(result.serverCpuMicrosPerRequest)} µs/req (${result.failures} errors)`,
      );
      sessionCheck.push({ sessions, result, loadSeconds });
    }
    await redis.flushall();

    // Memory: one session, a user index with one member and with a hundred.
    const sample = await cloneSessions(redis, keyPrefix, template ?? '{}', 1, 1);
    const perSessionBytes = Number(await redis.call('MEMORY', 'USAGE', `${keyPrefix}${sample[0]}`));
    const indexKey = (user: string) => `${fixtures.prefix}kit:user-sessions:{${user}}`;
    await redis.sadd(indexKey('one'), randomBytes(24).toString('base64url'));
    await redis.sadd(indexKey('hundred'), ...Array.from({ length: 100 }, () => randomBytes(24).toString('base64url')));
    const indexOneBytes = Number(await redis.call('MEMORY', 'USAGE', indexKey('one')));
    const indexHundredBytes = Number(await redis.call('MEMORY', 'USAGE', indexKey('hundred'), 'SAMPLES', '0'));
    const memory = { perSessionBytes, indexOneBytes, indexHundredBytes, perIndexMemberBytes: (indexHundredBytes - indexOneBytes) / 99 };
    console.log(
      `  memory: ${perSessionBytes} B per session, user index ${indexOneBytes} B with 1 session, ${indexHundredBytes} B with 100`,
    );

    // Logout everywhere: a user with n sessions, each indexed as a login would.
    const everywhereStore = new RedisStore(redisServer.url, { prefix: `${fixtures.prefix}kit:` });
    const sso = ssoSession({
      store: everywhereStore,
      cookieDomain: 'example.test',
      secret: fixtures.secret,
      loginUrl: 'https://auth.example.test/login',
    });
    const logoutEverywhere: CurvePoint[] = [];
    for (const count of [1, 100, 10_000]) {
      const user = `bench:users|everywhere-${count}`;
      const ids = await cloneSessions(redis, keyPrefix, template ?? '{}', count, count);
      for (let start = 0; start < ids.length; start += 5_000) await redis.sadd(indexKey(user), ...ids.slice(start, start + 5_000));
      const started = performance.now();
      const ended = await sso.manager.logoutEverywhere(user);
      const ms = performance.now() - started;
      if (ended !== count) throw new Error(`logout everywhere ended ${ended} of ${count} sessions`);
      console.log(`  logout everywhere, ${count} sessions: ${ms.toFixed(1)} ms`);
      logoutEverywhere.push({ x: count, y: ms });
    }
    await sso.manager.close();
    await everywhereStore.close();

    // Bearer: 100 tokens signed by the keys of a JWKS of 1, 10 or 100 ES256 keys (token i by key i mod n).
    const bearer: CurveResults['bearer'] = [];
    for (const count of [1, 10, 100]) {
      const pairs = await Promise.all(Array.from({ length: count }, () => generateKeyPair('ES256')));
      jwksKeys = await Promise.all(
        pairs.map(async ({ publicKey }, index) => ({ ...(await exportJWK(publicKey)), kid: `key-${index}`, alg: 'ES256', use: 'sig' })),
      );
      const tokens = await Promise.all(
        Array.from({ length: 100 }, (_, index) =>
          new SignJWT({ scope: 'read' })
            .setProtectedHeader({ alg: 'ES256', kid: `key-${index % count}`, typ: 'at+jwt' })
            .setIssuer(issuer)
            .setAudience(audience)
            .setSubject(`user-${index}`)
            .setIssuedAt()
            .setExpirationTime('2h')
            .sign(pairs[index % count]!.privateKey),
        ),
      );
      const result = await measure('bearer-es256-uncached', () => tokenRequests(tokens));
      console.log(
        `  bearer ES256 uncached, ${count} keys in the JWKS: ${Math.round(result.requestsPerSecond)} req/s (${result.failures} errors)`,
      );
      bearer.push({ keys: count, result });
    }
    return { sessionCheck, logoutEverywhere, memory, bearer };
  } finally {
    await jwksServer.close();
    redis.disconnect();
    await redisServer.stop();
  }
}
