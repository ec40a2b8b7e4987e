import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import type { Server } from 'node:http';
import { promisify } from 'node:util';
import type { Express } from 'express';

/** The subset of autocannon's programmatic API the runner uses (the package ships no types). */
interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}
interface AutocannonOptions {
  url: string;
  connections: number;
  pipelining: number;
  duration: number;
  workers?: number;
  requests?: AutocannonRequest[];
}
interface Histogram {
  average: number;
  mean: number;
  p50: number;
  p99: number;
  p2_5: number;
}
interface AutocannonResult {
  requests: Histogram & { total: number };
  latency: Histogram;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  duration: number;
}
type Autocannon = (options: AutocannonOptions, callback: (error: Error | null, result: AutocannonResult) => void) => unknown;

const load = createRequire(__filename);
const autocannon = load('autocannon') as Autocannon;

/** The settings every case of one run shares, so ratios compare like with like. */
export interface LoadSettings {
  connections: number;
  pipelining: number;
  durationSeconds: number;
  warmupSeconds: number;
}

/** A server under test, listening on a loopback port, with the requests the load generator cycles through. */
export interface RunningCase {
  url: string;
  /** Cycled through in order by every connection (e.g. 100 distinct tokens or session cookies). */
  requests: AutocannonRequest[];
  close(): Promise<void>;
}

/** One line of a suite: a name and how to start its server. */
export interface BenchCase {
  name: string;
  /** What is being measured, for the results table. */
  description: string;
  start(): Promise<RunningCase>;
}

/** A ratio the issue asks for: `numerator / denominator >= atLeast` on requests per second. */
export interface BenchTarget {
  numerator: string;
  denominator: string;
  atLeast: number;
}

export interface BenchSuite {
  name: string;
  /** How the load is made, printed with the results (token mix, cookies, …). */
  workload: string;
  cases: BenchCase[];
  targets: BenchTarget[];
  /** Releases what the suite shares between its cases (a JWKS server, Redis connections). */
  close?(): Promise<void>;
}

export interface CaseResult {
  suite: string;
  name: string;
  description: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Non-2xx answers plus connection errors and timeouts; anything above 0 makes the figure suspect. */
  failures: number;
}

export interface TargetResult extends BenchTarget {
  suite: string;
  ratio: number | undefined;
  pass: boolean;
  note?: string;
}

function cannon(options: AutocannonOptions): Promise<AutocannonResult> {
  return new Promise((resolve, reject) => {
    autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

/**
 * Loads one case: a warm-up run that is thrown away, then the measured run with the same settings. The load
 * generator runs in a worker thread, so it does not compete with the server for the main event loop.
 *
 * @example
 * const result = await measureCase('sessions', bareCase, { connections: 10, pipelining: 1, durationSeconds: 5, warmupSeconds: 1 });
 */
export async function measureCase(suite: string, benchCase: BenchCase, settings: LoadSettings): Promise<CaseResult> {
  const running = await benchCase.start();
  try {
    const base = {
      url: running.url,
      connections: settings.connections,
      pipelining: settings.pipelining,
      workers: 1,
      requests: running.requests,
    };
    if (settings.warmupSeconds > 0) await cannon({ ...base, duration: settings.warmupSeconds });
    const result = await cannon({ ...base, duration: settings.durationSeconds });
    return {
      suite,
      name: benchCase.name,
      description: benchCase.description,
      requestsPerSecond: result.requests.total / result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      total: result.requests.total,
      failures: result.non2xx + result.errors + result.timeouts,
    };
  } finally {
    await running.close();
  }
}

/**
 * Evaluates a suite's targets against its measured cases; a target whose cases saw errors fails whatever its ratio.
 *
 * @example
 * const verdicts = evaluateTargets(suite, results); // [{ numerator, denominator, atLeast, ratio, pass }]
 */
export function evaluateTargets(suite: BenchSuite, results: CaseResult[]): TargetResult[] {
  const find = (name: string) => results.find((result) => result.suite === suite.name && result.name === name);
  return suite.targets.map((target) => {
    const numerator = find(target.numerator);
    const denominator = find(target.denominator);
    if (!numerator || !denominator || denominator.requestsPerSecond === 0) {
      return { ...target, suite: suite.name, ratio: undefined, pass: false, note: 'not measured' };
    }
    const ratio = numerator.requestsPerSecond / denominator.requestsPerSecond;
    const suspect = numerator.failures > 0 || denominator.failures > 0;
    return {
      ...target,
      suite: suite.name,
      ratio,
      pass: ratio >= target.atLeast && !suspect,
      ...(suspect ? { note: 'a case answered non-2xx or had errors' } : {}),
    };
  });
}

/**
 * Listens on an ephemeral loopback port and returns the base URL and a close function.
 *
 * @example
 * const server = await listen(app); // server.url === 'http://127.0.0.1:<port>'
 */
export async function listen(app: Express): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = await new Promise<Server>((resolve) => {
    const created = app.listen(0, '127.0.0.1', () => resolve(created));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * CPU model, core count, kernel, Node and Redis versions, for the results file.
 *
 * @example
 * await describeMachine('7.0.15'); // 'AMD EPYC × 2 cores, Linux 6.1, Node v20.20.2, Redis 7.0.15'
 */
export async function describeMachine(redisVersion: string): Promise<string> {
  const cpu = cpus();
  let kernel: string;
  try {
    kernel = (await promisify(execFile)('uname', ['-sr'])).stdout.trim();
  } catch {
    kernel = process.platform;
  }
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'} × ${cpu.length} cores, ${kernel}, Node ${process.version}, Redis ${redisVersion}`;
}
