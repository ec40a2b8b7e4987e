import { connect } from 'node:net';
import fc from 'fast-check';

/** One route of an app: its methods and its path template, with `:name` parameters (`/sessions/:id`). */
export interface FuzzRoute {
  method: string | readonly string[];
  path: string;
}

/** Headers every request of one identity carries (a session cookie, a Bearer token), besides the target's. */
export interface FuzzIdentity {
  label: string;
  headers: Readonly<Record<string, string>>;
}

/** A listening server and how requests reach it. */
export interface FuzzTarget {
  port: number;
  /** The `Host` of well-formed requests, e.g. `auth.example.test:8443`. */
  host: string;
  /** Headers of every request, e.g. `X-Forwarded-Proto: https` for an app behind a TLS proxy on loopback. */
  headers?: Readonly<Record<string, string>>;
  routes: readonly FuzzRoute[];
  /** Who sends the requests; each path case is sent once per identity. Default: one anonymous identity. */
  identities?: readonly FuzzIdentity[];
}

export interface FuzzOptions {
  /** Seed of the random cases (fast-check); the catalogue cases are fixed. Default 20261121. */
  seed?: number;
  /** How many random cases to add to the catalogue (sent interleaved with it). Default 400. */
  randomCases?: number;
  /** No new request is started after this many milliseconds. Default 25000. */
  deadlineMs?: number;
  /** Requests in flight at once. Default 8. */
  concurrency?: number;
  /** How long one request may take to get a status line. Default 5000. */
  timeoutMs?: number;
}

/** A request that answered 5xx or not at all. The description holds no header values. */
export interface FuzzFailure {
  request: string;
  status: number | 'no answer';
}

export interface FuzzReport {
  planned: number;
  sent: number;
  /** False when the deadline stopped the run before every case was sent. */
  complete: boolean;
  failures: FuzzFailure[];
  /** How many answers had each status. */
  statuses: Record<string, number>;
  /** How many cases each route (`METHOD template`) got answered. */
  perRoute: Record<string, number>;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const BODY_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];

/** Segment values that break decoders and parsers: bad escapes, traversal, NUL, unicode, overlong, separators. */
const SEGMENTS = [
  '%',
  '%E0%A4%A',
  '%ZZ',
  '%ED%A0%80',
  '%C0%AF',
  '%00',
  '..',
  '%2e%2e',
  'a%2Fb',
  '%2A',
  '__proto__',
  'é✓%F0%9F%98%80',
  '%0D%0ASet-Cookie:%20x=y',
  'a'.repeat(2048),
];

/** Whole request-targets that are malformed whatever the route: raw bytes a client should never send. */
const RAW_TARGETS = [
  '/\0',
  '/a b',
  '/\x7f',
  '/\t',
  '//',
  '/../../etc/passwd',
  '/%2e%2e/%2e%2e/',
  `/${'x'.repeat(70_000)}`,
  '*',
  'http://evil.test/',
];

const QUERIES = ['?%', '?return_to=%E0%A4%A&state=%00&code=a&code=b&state[]=x&__proto__[polluted]=1', `?q=${'z'.repeat(9000)}`];

interface HeaderCase {
  label: string;
  headers: Array<[string, string]>;
  /** Send as HTTP/1.0 without the Host header. */
  noHost?: boolean;
}

function headerCases(origin: string): HeaderCase[] {
  const big = 'x'.repeat(20_000);
  return [
    { label: 'HTTP/1.0 without Host', headers: [], noHost: true },
    { label: 'Host garbage', headers: [['Host', '[::1']] },
    { label: 'Host with a bad port', headers: [['Host', 'auth.example.test:99999']] },
    { label: 'X-Forwarded-Host garbage', headers: [['X-Forwarded-Host', '%%%,,, ,evil.test:abc']] },
    {
      label: 'X-Forwarded-Proto and -For garbage',
      headers: [
        ['X-Forwarded-Proto', 'gopher, https'],
        ['X-Forwarded-For', 'not-an-ip, ::::'],
      ],
    },
    {
      label: 'Cookie twice',
      headers: [
        ['Cookie', '__Secure-sso.sid=s%3Aabc.def; sso.sid=s%3Aabc.def'],
        ['Cookie', '__Secure-sso.sid=other'],
      ],
    },
    { label: 'Cookie with bad escapes', headers: [['Cookie', '__Secure-sso.sid=%E0%A4%A; sso.sid=%; qr_binding=%; idp.sid=%00']] },
    { label: 'Cookie without names', headers: [['Cookie', '=;;; ;=x; __Secure-sso.sid; sso.sid']] },
    { label: 'Cookie oversize', headers: [['Cookie', `__Secure-sso.sid=${'a'.repeat(12_000)}`]] },
    { label: 'Authorization scheme only', headers: [['Authorization', 'Bearer']] },
    { label: 'Authorization garbage Bearer', headers: [['Authorization', 'Bearer !!!.@@@.###']] },
    { label: 'Authorization unsigned JWT', headers: [['Authorization', 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']] },
    { label: 'Authorization Basic garbage', headers: [['Authorization', 'Basic %%%%']] },
    {
      label: 'Authorization Basic not UTF-8',
      headers: [['Authorization', `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0xc3]).toString('base64')}`]],
    },
    { label: 'Authorization oversize', headers: [['Authorization', `Bearer ${'a'.repeat(12_000)}`]] },
    { label: 'Origin null', headers: [['Origin', 'null']] },
    { label: 'Origin garbage', headers: [['Origin', 'https://[bad']] },
    { label: 'Origin foreign', headers: [['Origin', 'https://evil.test']] },
    { label: 'Origin with a path', headers: [['Origin', `${origin}/x`]] },
    {
      label: 'preflight garbage',
      headers: [
        ['Origin', origin],
        ['Access-Control-Request-Method', 'P U T'],
        ['Access-Control-Request-Headers', ', ,,x-a b,'],
      ],
    },
    { label: 'Accept garbage', headers: [['Accept', 'text/html;q=abc, */*;q=2, ;;;']] },
    { label: 'Referer garbage', headers: [['Referer', 'http://[::1']] },
    { label: 'User-Agent oversize', headers: [['User-Agent', 'a'.repeat(8000)]] },
    { label: 'Range garbage', headers: [['Range', 'bytes=9-1,x-']] },
    { label: 'huge header', headers: [['X-Big', big]] },
    { label: 'Expect 100-continue', headers: [['Expect', '100-continue']] },
  ];
}

interface BodyCase {
  label: string;
  contentType?: string;
  encoding?: string;
  body: Buffer;
}

const BODIES: BodyCase[] = [
  { label: 'bad JSON', contentType: 'application/json', body: Buffer.from('{"a":') },
  { label: 'JSON of the wrong shape', contentType: 'application/json', body: Buffer.from('[null, {"__proto__": {"x": 1}}]') },
  { label: 'JSON string', contentType: 'application/json', body: Buffer.from('"just a string"') },
  { label: 'deep JSON', contentType: 'application/json', body: Buffer.from(`${'['.repeat(5000)}${']'.repeat(5000)}`) },
  { label: 'JSON not UTF-8', contentType: 'application/json', body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) },
  { label: 'JSON in an unknown charset', contentType: 'application/json; charset=utf-7', body: Buffer.from('{}') },
  { label: 'bad form encoding', contentType: 'application/x-www-form-urlencoded', body: Buffer.from('a=%ZZ&b&=&%E0%A4%A=1&username[]=x') },
  {
    label: 'form with many fields',
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.from(Array.from({ length: 3000 }, (_, i) => `f${i}=1`).join('&')),
  },
  {
    label: 'form of nested keys',
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.from(`${'a'.concat('[x]'.repeat(60))}=1`),
  },
  { label: 'multipart garbage', contentType: 'multipart/form-data; boundary=zzz', body: Buffer.from('--zzz\r\nnot a part\r\n--zzz--') },
  { label: 'wrong content-type', contentType: 'text/plain', body: Buffer.from('{"status":"confirmed"}') },
  { label: 'no content-type', body: Buffer.from('username=alice&password=x') },
  { label: 'gzip that is not gzip', contentType: 'application/json', encoding: 'gzip', body: Buffer.from('not gzip') },
  { label: 'unknown content-encoding', contentType: 'application/json', encoding: 'x-zip', body: Buffer.from('{}') },
  { label: 'oversize JSON', contentType: 'application/json', body: Buffer.from(`{"a":"${'x'.repeat(300_000)}"}`) },
  { label: 'oversize form', contentType: 'application/x-www-form-urlencoded', body: Buffer.from(`a=${'x'.repeat(300_000)}`) },
];

/** A request, built into raw bytes only when sent, and a description of it that carries no header values. */
interface FuzzCase {
  route: string;
  description: string;
  bytes: () => Buffer;
}

function methodsOf(route: FuzzRoute): string[] {
  return typeof route.method === 'string' ? [route.method] : [...route.method];
}

/** The template with every parameter set to `value` (or, for a template without one, `value` appended). */
function fillTemplate(template: string, value: string): string {
  if (!/:[A-Za-z_]/.test(template)) return `${template.replace(/\/$/, '')}/${value}`;
  return template.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, value);
}

function canonicalPath(template: string): string {
  return template.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, 'x1');
}

function shorten(text: string): string {
  const visible = JSON.stringify(text);
  return visible.length > 80 ? `${visible.slice(0, 77)}…"` : visible;
}

interface RawRequest {
  method: string;
  target: string;
  headers: Array<[string, string]>;
  noHost?: boolean;
  body?: Buffer;
}

function toBytes(target: FuzzTarget, identity: FuzzIdentity, request: RawRequest): Buffer {
  const lines = [`${request.method} ${request.target} HTTP/${request.noHost ? '1.0' : '1.1'}`];
  const overridden = new Set(request.headers.map(([name]) => name.toLowerCase()));
  if (!request.noHost && !overridden.has('host')) lines.push(`Host: ${target.host}`);
  for (const [name, value] of [...Object.entries(target.headers ?? {}), ...Object.entries(identity.headers)]) {
    if (!overridden.has(name.toLowerCase())) lines.push(`${name}: ${value}`);
  }
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
  if (request.body) lines.push(`Content-Length: ${request.body.length}`);
  lines.push('Connection: close', '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'utf8'), request.body ?? Buffer.alloc(0)]);
}

/** A Fisher–Yates shuffle driven by a seeded generator (mulberry32), so the order is the same on every run. */
function shuffle<T>(items: T[], seed: number): void {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let index = items.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other] as T, items[index] as T];
  }
}

/**
 * The fixed catalogue, per route: every method × malformed path segment and query, malformed headers and bodies,
 * for each identity; shuffled with the seed, so a run the deadline cuts short still samples all of it.
 */
function catalogue(target: FuzzTarget, identities: readonly FuzzIdentity[], seed: number): FuzzCase[][] {
  const origin = `https://${target.host}`;
  const perRoute: FuzzCase[][] = [];
  for (const route of target.routes) {
    const cases: FuzzCase[] = [];
    const key = `${methodsOf(route).join('|')} ${route.path}`;
    const add = (identity: FuzzIdentity, request: RawRequest, what: string) =>
      cases.push({
        route: key,
        description: `${identity.label}: ${request.method} ${route.path} with ${what}`,
        bytes: () => toBytes(target, identity, request),
      });
    const path = canonicalPath(route.path);
    const own = methodsOf(route);
    const withBody = own.filter((method) => BODY_METHODS.includes(method));
    identities.forEach((identity, index) => {
      // Anonymous requests try every method; an identity's requests the route's own methods, where it gets past
      // authentication to the code behind.
      for (const method of index === 0 ? METHODS : own) {
        for (const segment of SEGMENTS)
          add(identity, { method, target: fillTemplate(route.path, segment), headers: [] }, `segment ${shorten(segment)}`);
        for (const query of QUERIES) add(identity, { method, target: `${path}${query}`, headers: [] }, `query ${shorten(query)}`);
      }
      for (const method of index === 0 ? own : own.slice(0, 1)) {
        for (const header of headerCases(origin)) {
          add(identity, { method, target: path, headers: header.headers, ...(header.noHost ? { noHost: true } : {}) }, header.label);
        }
      }
      for (const body of BODIES) {
        const headers: Array<[string, string]> = [];
        if (body.contentType) headers.push(['Content-Type', body.contentType]);
        if (body.encoding) headers.push(['Content-Encoding', body.encoding]);
        add(identity, { method: withBody[0] ?? 'POST', target: path, headers, body: body.body }, body.label);
      }
    });
    shuffle(cases, seed + perRoute.length);
    perRoute.push(cases);
  }
  const anyone = identities[0] as FuzzIdentity;
  perRoute.push(
    RAW_TARGETS.flatMap((raw) =>
      METHODS.map((method) => ({
        route: 'raw targets',
        description: `${anyone.label}: ${method} raw target ${shorten(raw)}`,
        bytes: () => toBytes(target, anyone, { method, target: raw, headers: [] }),
      })),
    ),
  );
  return perRoute;
}

// Raw unicode goes into paths as UTF-8; whitespace and control characters would end or break the request line.
// eslint-disable-next-line no-control-regex
const UNSAFE_IN_TARGET = /[\s\x00-\x1f\x7f]/g;

/** Random cases from a fixed seed: random route, method, parameter bytes, header and body. */
function randomCases(target: FuzzTarget, identities: readonly FuzzIdentity[], seed: number, count: number): FuzzCase[] {
  const segment = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }).map((text) => encodeURIComponent(text).replace(/%25/g, '%')),
    fc.stringMatching(/^(%[0-9A-Fa-f]{0,2}[a-z]?){1,6}$/),
    fc.string({ unit: 'grapheme', maxLength: 20 }).map((text) => text.replace(UNSAFE_IN_TARGET, '_')),
  );
  const headerName = fc.constantFrom(
    'Cookie',
    'Authorization',
    'Origin',
    'Accept',
    'Content-Type',
    'X-Forwarded-Host',
    'Referer',
    'If-None-Match',
  );
  const headerValue = fc.string({ unit: 'binary-ascii', maxLength: 200 }).map((text) => text.replace(/[\r\n\0]/g, ' '));
  const arbitrary = fc.record({
    route: fc.nat({ max: target.routes.length - 1 }),
    identity: fc.nat({ max: identities.length - 1 }),
    method: fc.constantFrom(...METHODS),
    segment,
    header: fc.option(fc.tuple(headerName, headerValue), { nil: undefined }),
    body: fc.option(fc.uint8Array({ maxLength: 300 }), { nil: undefined }),
    contentType: fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain', 'application/octet-stream'),
  });
  return fc.sample(arbitrary, { seed, numRuns: count }).map((pick) => {
    const route = target.routes[pick.route] as FuzzRoute;
    const identity = identities[pick.identity] as FuzzIdentity;
    const headers: Array<[string, string]> = pick.header ? [pick.header] : [];
    if (pick.body) headers.push(['Content-Type', pick.contentType]);
    const request: RawRequest = {
      method: pick.method,
      target: fillTemplate(route.path, pick.segment),
      headers,
      ...(pick.body ? { body: Buffer.from(pick.body) } : {}),
    };
    return {
      route: `${methodsOf(route).join('|')} ${route.path}`,
      description: `${identity.label}: random ${pick.method} ${route.path} with segment ${shorten(pick.segment)}${pick.header ? ` and a random ${pick.header[0]}` : ''}${pick.body ? ' and a random body' : ''}`,
      bytes: () => toBytes(target, identity, request),
    };
  });
}

/** Sends raw bytes and resolves to the final status (informational 1xx answers skipped), or undefined. */
function send(port: number, bytes: Buffer, timeoutMs: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (status: number | undefined) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(status);
    };
    socket.setTimeout(timeoutMs, () => finish(undefined));
    socket.on('error', () => finish(parseStatus(received)));
    socket.on('close', () => finish(parseStatus(received)));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const status = parseStatus(received);
      if (status !== undefined) finish(status);
    });
    // No half-close: Node's server aborts a request whose client ended its side before the answer.
    socket.on('connect', () => socket.write(bytes));
  });
}

/** The status of the first non-1xx answer whose header block has arrived. */
function parseStatus(received: Buffer): number | undefined {
  let rest = received.toString('latin1');
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) return undefined;
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(rest)?.[1]);
    if (!Number.isInteger(status)) return undefined;
    if (status >= 200) return status;
    rest = rest.slice(end + 4);
  }
}

/** Interleaves the routes' case lists, so a run cut short by the deadline has still reached every route. */
function roundRobin(lists: FuzzCase[][]): FuzzCase[] {
  const out: FuzzCase[] = [];
  const longest = Math.max(...lists.map((list) => list.length));
  for (let index = 0; index < longest; index += 1) for (const list of lists) if (index < list.length) out.push(list[index] as FuzzCase);
  return out;
}

/**
 * Fuzzes a listening server over raw sockets (so it can send what HTTP clients refuse to: NUL and raw unicode in
 * paths, HTTP/1.0 without Host, duplicate and oversize headers, bodies that lie about their encoding) and reports
 * every request answered 5xx or not at all. The catalogue is fixed — per route, every method × malformed path
 * segment and query (an identity's requests: the route's own methods), malformed and oversize headers, malformed and
 * oversize bodies; and raw request-targets — and random cases come from a fixed seed, so a run is reproducible.
 * Requests go out round-robin across routes, each route's cases in a seeded shuffle, until done or the deadline:
 * a run the deadline cuts short has still sampled every route and every kind of case.
 *
 * @example
 * const report = await fuzzHttp({ port, host: 'auth.example.test', routes: [{ method: 'DELETE', path: '/sessions/:id' }] });
 * expect(report.failures).toEqual([]);
 */
export async function fuzzHttp(target: FuzzTarget, options: FuzzOptions = {}): Promise<FuzzReport> {
  const identities = target.identities?.length ? target.identities : [{ label: 'anonymous', headers: {} }];
  const seed = options.seed ?? 20261121;
  const cases = roundRobin([...catalogue(target, identities, seed), randomCases(target, identities, seed, options.randomCases ?? 400)]);
  const deadline = Date.now() + (options.deadlineMs ?? 25_000);
  const report: FuzzReport = { planned: cases.length, sent: 0, complete: true, failures: [], statuses: {}, perRoute: {} };
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      if (Date.now() > deadline) {
        report.complete = false;
        return;
      }
      const fuzzCase = cases[next++] as FuzzCase;
      report.sent += 1;
      const status = await send(target.port, fuzzCase.bytes(), options.timeoutMs ?? 5000);
      const key = status === undefined ? 'no answer' : String(status);
      report.statuses[key] = (report.statuses[key] ?? 0) + 1;
      if (status !== undefined) report.perRoute[fuzzCase.route] = (report.perRoute[fuzzCase.route] ?? 0) + 1;
      if (status === undefined || status >= 500) report.failures.push({ request: fuzzCase.description, status: status ?? 'no answer' });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
  return report;
}
