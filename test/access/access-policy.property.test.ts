import type { Server } from 'node:http';
import express, { type RequestHandler } from 'express';
import fc from 'fast-check';
import vhost from 'vhost';
import { accessPolicy, pathReadings, type AccessRule } from '../../lib/access';
import { errorHandler } from '../../lib/http';
import { establishLogin, ssoSession } from '../../lib/session';
import { routedHost } from '../../lib/util/request-origin';
import { listening, rawHttp, type RawAnswer } from '../helpers/raw-http';
import { testRedisStore } from '../helpers/redis';
import { LOGIN_URL, TEST_SECRET } from '../helpers/sso-apps';

// For generated rules, router settings and requests, the rule accessPolicy applies is the one whose route Express
// runs. The apps get the same settings: one has accessPolicy, every rule two_factor with max_age 1000 + its index
// (a one-factor session then reads the rule off the 401's WWW-Authenticate); the other has, per rule and in the same
// order, the routes the rule names (vhost for its hosts, app.use for a path prefix, a route for an exact RegExp,
// Express's own method routes for its methods), each answering with its index. OPTIONS goes to a third whose rules'
// routes take every method, as app.use and app.all handlers do. Paths come with mixed case,
// percent-escapes, dot segments, repeated and trailing slashes; hosts with case, ports and a trailing dot, and a
// forged X-Forwarded-Host. Runs on Express 5 and, through jest.express4.config.js, on Express 4.
jest.setTimeout(120_000);

interface GeneratedRule {
  domain: string | string[] | undefined;
  path: { kind: 'prefix' | 'exact'; value: string } | undefined;
  methods: string[] | undefined;
}

interface GeneratedRequest {
  method: string;
  path: string;
  host: string;
  forwardedHost: string | undefined;
}

const PATHS = ['/', '/audit', '/sessions', '/sessions/revocations', '/reports', '/a'];
const DOMAINS = ['admin.example.test', 'auth.example.test', '*.example.test', 'shop.example.test'];
const HOSTS = [
  'admin.example.test',
  'auth.example.test',
  'shop.example.test',
  'ADMIN.Example.test',
  'Auth.example.test:8443',
  'example.test',
  'admin.example.test.',
];
const SEGMENTS = [
  'audit',
  'Audit',
  'AUDIT',
  '%61udit',
  '%41UDIT',
  'sessions',
  'Sessions',
  'revocations',
  'REVOCATIONS',
  'reports',
  'a',
  'A',
  '%61',
  '',
  '.',
  '..',
  '%2e%2e',
  '%2E',
  'x%2Faudit',
  'a;b',
  'a%20b',
  'audit%2F',
  '%7E',
];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS'];

/** A rule's own path written another way: in other case, partly percent-encoded, with dot segments or more slashes. */
const MUTATIONS: Record<string, (path: string) => string> = {
  none: (path) => path,
  upper: (path) => path.toUpperCase(),
  capitalized: (path) => path.replace(/\/([a-z])/g, (_all, letter: string) => `/${letter.toUpperCase()}`),
  encodedLetter: (path) => path.replace(/[a-z]/, (letter) => `%${letter.charCodeAt(0).toString(16)}`),
  dotSegment: (path) => `/x/..${path}`,
  encodedDots: (path) => `/x/%2e%2e${path}`,
  doubleSlash: (path) => `/${path}`,
  innerDoubleSlash: (path) => path.replace(/\/([^/]*)$/, '//$1'),
  encodedSlash: (path) => path.replace(/\/([^/]*)$/, '%2F$1'),
  backslash: (path) => path.replace(/\/([^/]*)$/, '\\$1'),
  semicolon: (path) => `${path};x`,
  suffix: (path) => `${path}x`,
};

const ruleArbitrary: fc.Arbitrary<GeneratedRule> = fc.record({
  domain: fc.option(fc.oneof(fc.constantFrom(...DOMAINS), fc.constant<string[]>(['shop.example.test', 'auth.example.test'])), {
    nil: undefined,
    freq: 2,
  }),
  path: fc.option(
    fc.record({
      kind: fc.constantFrom('prefix' as const, 'exact' as const),
      // Written in any case: the router's case rule decides whether that matters.
      value: fc
        .tuple(fc.constantFrom(...PATHS), fc.boolean())
        .map(([path, capitalized]) => (capitalized ? MUTATIONS.capitalized!(path) : path)),
    }),
    { nil: undefined },
  ),
  methods: fc.option(fc.subarray(['GET', 'POST', 'DELETE'], { minLength: 1 }), { nil: undefined, freq: 2 }),
});

/** A path near one of `paths` (the rules' own, mostly): written another way, maybe with a segment below it. */
function pathNear(paths: readonly string[]): fc.Arbitrary<string> {
  return fc
    .record({
      base: fc.constantFrom(...paths),
      mutation: fc.constantFrom(...Object.keys(MUTATIONS)),
      below: fc.option(fc.constantFrom(...SEGMENTS), { nil: undefined, freq: 2 }),
      trailing: fc.boolean(),
    })
    .map(({ base, mutation, below, trailing }) => {
      const path = MUTATIONS[mutation]!(base === '/' ? '/a' : base) + (below === undefined ? '' : `/${below}`);
      return trailing && !path.endsWith('/') ? `${path}/` : path;
    });
}

const anyPath = fc
  .tuple(fc.array(fc.constantFrom(...SEGMENTS), { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([segments, trailing]) => `/${segments.join('/')}${trailing ? '/' : ''}`);

/** A Host near one of `hosts`: as written, in other case, with a port, or with a trailing dot. */
function hostNear(hosts: readonly string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.constantFrom(...hosts), fc.constantFrom('none', 'upper', 'port', 'dot'))
    .map(([host, variant]) =>
      variant === 'upper' ? host.toUpperCase() : variant === 'port' ? `${host}:8443` : variant === 'dot' ? `${host}.` : host,
    );
}

/** Requests aimed mostly at the generated rules' own paths and hosts, so that most of them meet a rule. */
function requestsFor(rules: readonly GeneratedRule[]): fc.Arbitrary<GeneratedRequest[]> {
  const paths = [...new Set([...rules.flatMap((rule) => (rule.path ? [rule.path.value] : [])), ...PATHS])];
  const named = rules.flatMap((rule) => (rule.domain === undefined ? [] : typeof rule.domain === 'string' ? [rule.domain] : rule.domain));
  const hosts = [...new Set([...named.map((domain) => domain.replace('*', 'admin')), ...HOSTS])];
  const ruleHosts = named.length === 0 ? hosts : [...new Set(named.map((domain) => domain.replace('*', 'shop')))];
  return fc.array(
    fc.record({
      method: fc.constantFrom(...METHODS),
      path: fc.oneof({ arbitrary: pathNear(paths), weight: 4 }, { arbitrary: anyPath, weight: 1 }),
      host: fc.oneof({ arbitrary: hostNear(ruleHosts), weight: 3 }, { arbitrary: fc.constantFrom(...hosts), weight: 1 }),
      forwardedHost: fc.option(fc.constantFrom(...hosts), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 6 },
  );
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function toAccessRule(rule: GeneratedRule, index: number): AccessRule {
  return {
    ...(rule.domain === undefined ? {} : { domain: rule.domain }),
    ...(rule.path === undefined
      ? {}
      : { path: rule.path.kind === 'prefix' ? rule.path.value : new RegExp(`^${escapeRegExp(rule.path.value)}$`) }),
    ...(rule.methods === undefined ? {} : { methods: rule.methods }),
    policy: 'two_factor',
    maxAgeSeconds: 1000 + index,
  };
}

type RouterSettings = { caseSensitive: boolean; strict: boolean };

function applySettings(app: express.Express, settings: RouterSettings): void {
  app.set('trust proxy', 'loopback');
  app.set('case sensitive routing', settings.caseSensitive);
  app.set('strict routing', settings.strict);
}

/**
 * The routes a rule names, answering with the rule's index: Express's own host, path and method matching. With
 * `everyMethod`, its handlers take every method, as `app.use` and `app.all` handlers do whatever the rule lists.
 */
function routesOf(rule: GeneratedRule, index: number, settings: RouterSettings, everyMethod = false): RequestHandler {
  const answer: RequestHandler = (_req, res) => {
    res.set('X-Route', String(index)).status(200).end();
  };
  const anyPath = /.*/;
  const router = express.Router(settings);
  const methods = everyMethod ? undefined : rule.methods?.map((method) => method.toLowerCase() as 'get' | 'post' | 'delete');
  if (rule.path?.kind === 'exact') {
    for (const method of methods ?? ['all' as const]) router[method](rule.path.value, answer);
  } else {
    const inner = express.Router(settings);
    for (const method of methods ?? ['all' as const]) inner[method](anyPath, answer);
    router.use(rule.path?.value ?? '/', inner);
  }
  if (rule.domain === undefined) return router;
  const hosts = typeof rule.domain === 'string' ? [rule.domain] : rule.domain;
  const byHost = express.Router(settings);
  // vhost hands on a plain Node request; this one is Express's all along.
  for (const host of hosts) byHost.use(vhost(host, router as unknown as Parameters<typeof vhost>[1]));
  return byHost;
}

/** What accessPolicy decided, read off its answer: a rule's index, -1 for the default, or 'refused'. */
function ruleOfAnswer(answer: RawAnswer): number | 'refused' | 'passed' {
  if (answer.status === 400) return 'refused';
  if (answer.status === 401) {
    const maxAge = /max_age="?(\d+)/.exec(answer.headers['www-authenticate'] ?? '');
    if (maxAge === null) throw new Error(`a 401 without max_age: ${JSON.stringify(answer.headers)}`);
    return Number(maxAge[1]) - 1000;
  }
  if (answer.status === 403) return answer.body.includes('csrf_origin') ? 'refused' : -1;
  if (answer.status === 200) return 'passed';
  throw new Error(`unexpected answer ${answer.status}: ${answer.body}`);
}

describe('accessPolicy and the router agree on which rule a request meets', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let cookie: string;

  beforeAll(async () => {
    redis = await testRedisStore('access-property');
    const app = express();
    applySettings(app, { caseSensitive: false, strict: false });
    app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: TEST_SECRET, loginUrl: LOGIN_URL }));
    app.post('/login', (req, res, next) => {
      establishLogin(req, { source: 'test:users', subject: 'alice', name: 'Alice', roles: [], method: 'password' }).then(
        () => res.status(204).end(),
        next,
      );
    });
    const server = await listening(app);
    try {
      const answer = await rawHttp(server, 'POST /login HTTP/1.1', {
        Host: 'shop.example.test',
        'X-Forwarded-Proto': 'https',
        Origin: 'https://shop.example.test',
        'Content-Length': '0',
      });
      cookie = /^([^;]+)/.exec(answer.headers['set-cookie'] ?? '')![1]!;
    } finally {
      server.close();
    }
  });
  afterAll(() => redis.cleanup());

  it('for generated rules, router settings, paths, methods and hosts', async () => {
    let compared = 0;
    let refused = 0;
    let matchedRules = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(ruleArbitrary, { minLength: 1, maxLength: 5 }).chain((rules) => fc.tuple(fc.constant(rules), requestsFor(rules))),
        fc.record({ caseSensitive: fc.boolean(), strict: fc.boolean() }),
        async ([rules, requests], settings) => {
          const guarded = express();
          applySettings(guarded, settings);
          guarded.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: TEST_SECRET, loginUrl: LOGIN_URL }));
          guarded.use(accessPolicy({ rules: rules.map(toAccessRule) }));
          guarded.use((_req, res) => {
            res.status(200).end();
          });
          guarded.use(errorHandler({ log: false }));
          const routed = express();
          applySettings(routed, settings);
          rules.forEach((rule, index) => routed.use(routesOf(rule, index, settings)));
          const routedAnyMethod = express();
          applySettings(routedAnyMethod, settings);
          rules.forEach((rule, index) => routedAnyMethod.use(routesOf(rule, index, settings, true)));
          const servers: Server[] = [await listening(guarded), await listening(routed), await listening(routedAnyMethod)];
          try {
            for (const request of requests) {
              const headers: Record<string, string> = { Host: request.host, 'X-Forwarded-Proto': 'https' };
              if (request.forwardedHost !== undefined) headers['X-Forwarded-Host'] = request.forwardedHost;
              if (!['GET', 'HEAD', 'OPTIONS'].includes(request.method)) headers['Content-Length'] = '0';
              const line = `${request.method} ${request.path} HTTP/1.1`;
              const decided = ruleOfAnswer(
                await rawHttp(servers[0]!, line, { ...headers, Cookie: cookie, Origin: `https://${request.host.toLowerCase()}` }),
              );
              // OPTIONS reaches every handler of its path whatever the method it serves: the worst case is the routes
              // of every rule taking every method.
              const route = await rawHttp(servers[request.method === 'OPTIONS' ? 2 : 1]!, line, headers);
              const ran = route.headers['x-route'] === undefined ? -1 : Number(route.headers['x-route']);
              // Nothing gets through: every rule asks for two factors, the session has one.
              expect(decided).not.toBe('passed');
              if (decided === 'refused') {
                // Refused only where the router and a decoder read the path apart, or the host is unusable.
                const readings = pathReadings(request.path);
                const fakeRequest = { headers: { host: request.host }, originalUrl: request.path } as never;
                expect(readings === 'malformed-path' || readings.length > 1 || routedHost(fakeRequest) === undefined).toBe(true);
                refused += 1;
              } else if (request.method === 'OPTIONS') {
                // The rule checked is at least as strict as the one of the first handler of its path (among two_factor
                // rules the lowest index, the shortest max_age, wins).
                if (ran !== -1 && decided !== -1) expect(decided).toBeLessThanOrEqual(ran);
                compared += 1;
              } else {
                expect({ request, settings, decided }).toEqual({ request, settings, decided: ran });
                compared += 1;
                if (ran !== -1) matchedRules += 1;
              }
            }
          } finally {
            for (const server of servers) server.close();
          }
        },
      ),
      { numRuns: 300, seed: 20261129, endOnFailure: true },
    );
    // Not vacuous: most requests were compared, a good share of them met a rule's route, and some were refused.
    expect(compared).toBeGreaterThan(refused);
    expect(matchedRules).toBeGreaterThan(compared / 5);
    expect(refused).toBeGreaterThan(0);
  });
});
