import { openSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { pinoSink, redisStreamSink, securityEvents, type SecurityEvents } from '../lib/events';
import { RedisStore } from '../lib/store';
import { requireBearer } from '../lib/tokens';
import { sessionApp } from '../test/helpers/sso-load-apps';
import { bearerSuite, protectedApp, tokenRequests, type BearerFixtures } from './bearer';
import { deleteByPrefix, type AutocannonRequest, type BenchCase, type BenchSuite, type CaseApp } from './harness';
import { collectCookies, cookieRequests, DISTINCT_SESSIONS } from './sessions';

/** The suite's fixtures: the sessions suite's Redis, prefix and secret, and the Bearer suite's issuer and tokens. */
export interface EventsFixtures extends BearerFixtures {
  redisUrl: string;
  prefix: string;
  sessionSecret: string;
}

type Sink = 'off' | 'stderr' | 'redis';
const SINKS: Sink[] = ['off', 'stderr', 'redis'];

/**
 * The app's security events for one case, and what to close with it. `stderr` is the default sink (`pinoSink()`,
 * JSON lines written without blocking) pointed at /dev/null instead of fd 2, so the run's console stays readable
 * while the sink does the same work; `redis` is `redisStreamSink` on the suite's Redis (XADD per event).
 */
function eventsFor(sink: Sink, fixtures: EventsFixtures): { events: SecurityEvents | undefined; close(): Promise<void> } {
  if (sink === 'off') return { events: undefined, close: async () => undefined };
  const store = sink === 'redis' ? new RedisStore(fixtures.redisUrl, { prefix: `${fixtures.prefix}events:` }) : undefined;
  const events = securityEvents({
    app: 'bench',
    usernameHashKey: fixtures.sessionSecret,
    sinks: [store ? redisStreamSink({ store }) : pinoSink({ destination: openSync('/dev/null', 'w') })],
  });
  return {
    events,
    close: async () => {
      await events.close();
      await store?.close();
    },
  };
}

function sessionCase(kind: 'login' | 'session', sink: Sink): BenchCase<EventsFixtures> {
  return {
    name: `${kind}-events-${sink}`,
    description:
      kind === 'login'
        ? `POST /login/:id (establishLogin on a RedisStore), security events ${sink}`
        : `ssoSession({ cache: {} }) + requireSession, GET /me, security events ${sink}`,
    app: (fixtures): CaseApp => {
      const client = new Redis(fixtures.redisUrl);
      const store = new RedisStore(client, { prefix: `${fixtures.prefix}kit:` });
      const { events, close } = eventsFor(sink, fixtures);
      const options = { ...(kind === 'session' ? { cache: {} } : {}), ...(events ? { events } : {}) };
      return {
        app: sessionApp(store, fixtures.sessionSecret, true, options),
        close: async () => {
          await close();
          await store.close();
          await client.quit();
        },
      };
    },
    requests: async (url): Promise<AutocannonRequest[]> => {
      if (kind === 'session') return cookieRequests(await collectCookies(url, DISTINCT_SESSIONS, '__Secure-sso.sid'));
      // Every request a complete login: a new session stored, the user's index updated, login.succeeded emitted.
      // Users of the case's own: the cases run one after the other on one Redis, and shared users would make each
      // case log into indexes the previous cases filled.
      return Array.from({ length: DISTINCT_SESSIONS }, (_, index) => ({
        method: 'POST',
        path: `/login/${sink}-user-${index}`,
        headers: { host: 'auth.example.test', origin: 'https://auth.example.test', 'x-forwarded-proto': 'https' },
      }));
    },
  };
}

function bearerCase(sink: Sink): BenchCase<EventsFixtures> {
  return {
    name: `bearer-events-${sink}`,
    description: `requireBearer({ jwksUri, algorithms: [RS256] }), cached tokens, security events ${sink}`,
    app: (fixtures): CaseApp => {
      const { jwksUri, issuer, audience } = fixtures;
      const { events, close } = eventsFor(sink, fixtures);
      const guard = requireBearer({ jwksUri, algorithms: ['RS256'], issuer, audience, ...(events ? { events } : {}) });
      return { app: protectedApp(guard, (req) => req.auth?.payload.sub), close };
    },
    requests: (_url, { rsTokens }) => tokenRequests(rsTokens),
  };
}

/**
 * The events suite's cases: a login, a (cached) session check and a (cached) RS256 Bearer check, each with
 * security events off, on with the stderr sink, and on with the Redis stream sink.
 *
 * @example
 * const cases = eventsCases();
 */
export function eventsCases(): BenchCase<EventsFixtures>[] {
  return [
    ...SINKS.map((sink) => sessionCase('login', sink)),
    ...SINKS.map((sink) => sessionCase('session', sink)),
    ...SINKS.map((sink) => bearerCase(sink)),
  ];
}

/**
 * What security events cost the hot paths: the same app with `events` off, with `pinoSink()` and with
 * `redisStreamSink`. Target (issue 29/30): a session check and a Bearer check lose at most 3 % with events on; a
 * login emits one event and pays for it.
 *
 * @example
 * const suite = await eventsSuite('redis://127.0.0.1:6379');
 */
export async function eventsSuite(redisUrl: string): Promise<BenchSuite<EventsFixtures>> {
  const bearer = await bearerSuite();
  const prefix = `ssobench:${randomBytes(4).toString('hex')}:`;
  const client = new Redis(redisUrl);
  return {
    name: 'events',
    workload:
      'security events off, on with the stderr sink (pinoSink, to /dev/null) and on with the Redis stream sink: POST /login/:id (a complete login per request), GET /me with one of 100 session cookies (session cache on), GET /me with one of 100 RS256 Bearer tokens (token cache on)',
    fixtures: { ...bearer.fixtures, redisUrl, prefix, sessionSecret: randomBytes(32).toString('base64url') },
    cases: eventsCases(),
    targets: [
      { numerator: 'session-events-stderr', denominator: 'session-events-off', atLeast: 0.97 },
      { numerator: 'session-events-redis', denominator: 'session-events-off', atLeast: 0.97 },
      { numerator: 'bearer-events-stderr', denominator: 'bearer-events-off', atLeast: 0.97 },
      { numerator: 'bearer-events-redis', denominator: 'bearer-events-off', atLeast: 0.97 },
    ],
    close: async () => {
      await bearer.close?.();
      await deleteByPrefix(client, prefix);
      await client.quit();
    },
  };
}
