import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { cpus } from 'node:os';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Express } from 'express';
import type Redis from 'ioredis';
import { turnIntoDictionaries } from '../lib/util/request-shape';
import type { DpopProofSpec } from './dpop-signer';
import type { QrClientFigures, QrClientPlan, QrFixtures } from './qr-login';

/**
 * What the kit's entry middlewares do first on Node 22 (`prepareForProperties`), as a middleware, for the
 * "bare-prepared" cases: bare Express with that one step, on every Node version (the kit takes it only where it
 * pays), so that each version's run shows what the step saves or costs there.
 */
export const preparedRequests: import('express').RequestHandler = (req, res, next) => {
  turnIntoDictionaries(req, res);
  next();
};

/** One request of the load generator's rotation (autocannon's request shape). */
export interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Sign a fresh DPoP proof into the `DPoP` header each time this request is sent (a proof is single-use). */
  dpop?: DpopProofSpec;
}

/** The settings every case of one run shares, so ratios compare like with like. */
export interface LoadSettings {
  connections: number;
  pipelining: number;
  durationSeconds: number;
  warmupSeconds: number;
}

/** An app built inside a case's server process, and what to release when the process is told to stop. */
export interface CaseApp {
  app: Express;
  close?(): Promise<void>;
}

/**
 * One line of a suite. `app` runs in the case's own server process (bench/server-entry.ts), built from the suite's
 * fixtures; `requests` runs in the runner once that server listens (it may log users in through it first).
 */
export interface BenchCase<F = unknown> {
  name: string;
  /** What is being measured, for the results table. */
  description: string;
  app(fixtures: F): CaseApp | Promise<CaseApp>;
  /** Cycled through in order by every connection (e.g. 100 distinct tokens or session cookies). */
  requests(url: string, fixtures: F): AutocannonRequest[] | Promise<AutocannonRequest[]>;
}

/**
 * Deletes a suite's keys (everything under its random prefix) from the machine's Redis, with SCAN, when the suite
 * closes.
 *
 * @example
 * await deleteByPrefix(client, 'ssobench:1a2b3c4d:');
 */
export async function deleteByPrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
}

/** A ratio the issue asks for: `numerator / denominator >= atLeast` on requests per second. */
export interface BenchTarget {
  numerator: string;
  denominator: string;
  atLeast: number;
  /**
   * Not a target but a floor, measured the same way: how close anything doing the work the target's case must do
   * (a Redis read, an Express middleware) comes to the target's denominator, or how the kit compares with that.
   * Reported as "floor", never as PASS or FAIL; `atLeast` is then the target it is read against.
   */
  floor?: true;
}

/**
 * PASS or FAIL for a target, "floor" for a floor comparison.
 *
 * @example
 * verdictWord({ ...target, pass: true }); // 'PASS'
 */
export function verdictWord(target: Pick<TargetResult, 'pass' | 'floor'>): string {
  if (target.floor) return 'floor';
  return target.pass ? 'PASS' : 'FAIL';
}

/**
 * How a target reads: "a ≥ 0.9× b", or "a ÷ b" for a floor.
 *
 * @example
 * targetLabel({ numerator: 'kit-hs256', denominator: 'bare', atLeast: 0.9 }); // 'kit-hs256 ≥ 0.9× bare'
 */
export function targetLabel(target: BenchTarget): string {
  return target.floor
    ? `${target.numerator} ÷ ${target.denominator} (floor)`
    : `${target.numerator} ≥ ${target.atLeast}× ${target.denominator}`;
}

export interface BenchSuite<F = unknown> {
  name: string;
  /** How the load is made, printed with the results (token mix, cookies, …). */
  workload: string;
  /** Made once by the runner and sent (as JSON) to every case's server process: keys, secrets, URLs, prefixes. */
  fixtures: F;
  cases: BenchCase<F>[];
  targets: BenchTarget[];
  /** Releases what the suite shares between its cases (a JWKS server, Redis keys). */
  close?(): Promise<void>;
}

export interface CaseResult {
  suite: string;
  /** p50 and p99 at a fixed offered rate (half the best round's req/s), filled in by the runner. */
  atRate?: { ratePerSecond: number; p50Ms: number; p99Ms: number; failures: number };
  name: string;
  description: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Non-2xx answers plus connection errors and timeouts; anything above 0 makes the figure suspect. */
  failures: number;
  /** CPU time (user + system) of the server process per answered request, during the measured run. */
  serverCpuMicrosPerRequest: number;
  /** CPU time of the server process ÷ wall time of the measured run (1 = one core fully busy). */
  serverBusy: number;
  /** The same for the load generator process. */
  loadBusy: number;
}

export interface TargetResult extends BenchTarget {
  suite: string;
  ratio: number | undefined;
  pass: boolean;
  note?: string;
}

/** Where the load generator and the servers run: one CPU each when `taskset` exists and two CPUs are available. */
export interface Placement {
  loadCpu: number | undefined;
  serverCpu: number | undefined;
  /** Said in the settings line and in RESULTS.md. */
  summary: string;
}

/** Messages between the runner and its child processes; every reply carries the request's `id`. */
export type ServerMessage =
  | { id: number; type: 'start'; suite: string; caseName: string; fixtures: unknown }
  | { id: number; type: 'cpu' }
  | { id: number; type: 'close' };
export type LoadMessage =
  | {
      id: number;
      type: 'run';
      url: string;
      settings: LoadSettings;
      durationSeconds: number;
      requests: AutocannonRequest[];
      /** A fixed offered rate in requests per second: an evenly paced open loop (bench/paced-load.ts) instead of autocannon. */
      overallRate?: number;
    }
  | { id: number; type: 'qr'; url: string; fixtures: QrFixtures; plan: QrClientPlan }
  | { id: number; type: 'close' };
export interface LoadFigures {
  total: number;
  durationSeconds: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
  /** CPU microseconds the load generator spent during this run. */
  cpuMicros: number;
}
export type Reply = {
  id: number;
  error?: string;
  port?: number;
  cpuMicros?: number;
  figures?: LoadFigures;
  qr?: QrClientFigures & { cpuMicros: number };
};
/** A message before the runner gives it an id. */
type Unnumbered<M> = M extends unknown ? Omit<M, 'id'> : never;
type Outgoing = Unnumbered<ServerMessage> | Unnumbered<LoadMessage>;

const load = createRequire(__filename);
const run = promisify(execFile);

function expandCpuList(list: string): number[] {
  const result: number[] = [];
  for (const part of list.split(',')) {
    const [from, to] = part.trim().split('-').map(Number);
    if (from === undefined || !Number.isInteger(from)) continue;
    for (let cpu = from; cpu <= (to ?? from); cpu += 1) result.push(cpu);
  }
  return result;
}

/**
 * Chooses the CPUs: the load generator on the first CPU this process may use, every server on the last one. Without
 * `taskset` (or with fewer than two CPUs, or `pin: false`) nothing is pinned and the summary says so.
 *
 * @example
 * const placement = await planPlacement(true); // { loadCpu: 0, serverCpu: 1, summary: '…' }
 */
export async function planPlacement(pin: boolean): Promise<Placement> {
  const unpinned = (why: string): Placement => ({
    loadCpu: undefined,
    serverCpu: undefined,
    summary: `nothing pinned (${why}): the load generator and the case's server are separate processes scheduled by the OS`,
  });
  if (!pin) return unpinned('--no-pin');
  let allowed: number[];
  try {
    const { stdout } = await run('taskset', ['-c', '-p', String(process.pid)]);
    allowed = expandCpuList(stdout.slice(stdout.lastIndexOf(':') + 1));
  } catch {
    return unpinned('taskset not available');
  }
  if (allowed.length < 2) return unpinned(`only ${allowed.length} CPU available`);
  const loadCpu = allowed[0]!;
  const serverCpu = allowed[allowed.length - 1]!;
  return {
    loadCpu,
    serverCpu,
    summary: `each case's server in its own process pinned to CPU ${serverCpu} (taskset -c ${serverCpu}), the load generator (autocannon) in another process pinned to CPU ${loadCpu}; the runner (which makes the fixtures and serves the Bearer suite's JWKS) and the Redis server are not pinned`,
  };
}

const tsxLoader = pathToFileURL(load.resolve('tsx')).href;

/**
 * Compiles bench/, lib/ and test/helpers/ with tsc (tsconfig.bench.json) into `.bench-build/` and returns that folder,
 * for {@link useServerBuild}. tsc's JavaScript is what the package ships; tsx's transform, which the runner itself
 * uses, wraps every named function and closure to keep its name, work that a user's build does not do.
 *
 * @example
 * useServerBuild(await buildServerCode());
 */
export async function buildServerCode(): Promise<string> {
  const root = join(__dirname, '..');
  const out = join(root, '.bench-build');
  await rm(out, { recursive: true, force: true });
  await promisify(execFile)(process.execPath, [load.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.bench.json')], { cwd: root });
  return out;
}

/**
 * Runs the server and load-generator processes from a {@link buildServerCode} folder (this process and the
 * per-version runs it starts, through BENCH_SERVER_BUILD) instead of the TypeScript sources through tsx.
 *
 * @example
 * useServerBuild(await buildServerCode());
 */
export function useServerBuild(folder: string): void {
  process.env.BENCH_SERVER_BUILD = folder;
}

/** What the server processes run, for the settings line. */
export function serverCodeSummary(): string {
  return process.env.BENCH_SERVER_BUILD === undefined
    ? 'the TypeScript sources through tsx (--source)'
    : "tsc's JavaScript build of the kit and the cases (the code the package ships), with plain Node";
}

/** A child process of the runner that answers `{ id, type }` requests over IPC. */
class Child {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>();
  private readonly exited: Promise<void>;

  private constructor(
    private readonly label: string,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (reply: Reply) => {
      const waiter = this.pending.get(reply.id);
      if (!waiter) return;
      this.pending.delete(reply.id);
      if (reply.error) waiter.reject(new Error(`${label}: ${reply.error}`));
      else waiter.resolve(reply);
    });
    this.exited = new Promise((resolve) => {
      const fail = (why: string) => {
        for (const waiter of this.pending.values()) waiter.reject(new Error(`${label} ${why} before answering`));
        this.pending.clear();
        resolve();
      };
      child.once('exit', (code, signal) => fail(`exited (${signal ?? code})`));
      // Spawning failed (no exit event follows).
      child.once('error', (error) => fail(`could not start: ${error.message}`));
    });
  }

  /** Starts `bench/<entry>` under Node (its tsc build when there is one, else through tsx), pinned to `cpu` when given. */
  static spawn(label: string, entry: string, cpu: number | undefined, extraNodeArgs: string[] = []): Child {
    const build = process.env.BENCH_SERVER_BUILD;
    const script =
      build === undefined ? ['--import', tsxLoader, join(__dirname, entry)] : [join(build, 'bench', entry.replace(/\.ts$/, '.js'))];
    const nodeArgs = [...extraNodeArgs, ...script];
    const stdio: Array<'ignore' | 'inherit' | 'ipc'> = ['ignore', 'inherit', 'inherit', 'ipc'];
    const child =
      cpu === undefined
        ? spawn(process.execPath, nodeArgs, { stdio })
        : spawn('taskset', ['-c', String(cpu), process.execPath, ...nodeArgs], { stdio });
    return new Child(label, child);
  }

  request(message: Outgoing, timeoutMs = 60_000): Promise<Reply> {
    const id = this.nextId;
    this.nextId += 1;
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.label}: no answer to ${message.type} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.child.send({ ...message, id }, (error) => {
        if (error) this.pending.get(id)?.reject(error);
      });
    });
  }

  /** Asks the child to close and waits for it to exit; kills it if it has not after 5 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      await this.request({ type: 'close' }, 5_000).catch(() => undefined);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
      await this.exited;
      clearTimeout(timer);
    }
  }
}

/**
 * The load generator: autocannon in its own process (bench/load-entry.ts), pinned to `placement.loadCpu`, kept for
 * the whole run and told which URL and requests to load for each measurement.
 *
 * @example
 * const generator = LoadGenerator.start(placement);
 * await generator.stop();
 */
export class LoadGenerator {
  private constructor(private readonly child: Child) {}

  static start(placement: Placement): LoadGenerator {
    return new LoadGenerator(Child.spawn('load generator', 'load-entry.ts', placement.loadCpu));
  }

  async run(
    url: string,
    requests: AutocannonRequest[],
    settings: LoadSettings,
    durationSeconds: number,
    overallRate?: number,
  ): Promise<LoadFigures> {
    const message = { type: 'run' as const, url, settings, durationSeconds, requests, ...(overallRate ? { overallRate } : {}) };
    const reply = await this.child.request(message, (durationSeconds + 60) * 1000);
    return reply.figures!;
  }

  /** Runs complete QR logins (bench/qr-login.ts's client) against the provider at `url`. */
  async runQr(url: string, fixtures: QrFixtures, plan: QrClientPlan): Promise<QrClientFigures & { cpuMicros: number }> {
    const reply = await this.child.request({ type: 'qr', url, fixtures, plan }, ((plan.durationSeconds ?? 60) + 120) * 1000);
    return reply.qr!;
  }

  stop(): Promise<void> {
    return this.child.stop();
  }
}

/** A case's server in its own process: its URL, its CPU time so far, and how to stop it. */
export interface CaseServer {
  url: string;
  cpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts one case's server in a fresh process pinned to the server CPU. BENCH_SERVER_NODE_ARGS adds Node flags to
 * it (e.g. `--cpu-prof --cpu-prof-dir=prof` to profile the server under load).
 *
 * @example
 * const server = await startCaseServer('qr-login', 'provider', fixtures, placement);
 */
export async function startCaseServer(suite: string, caseName: string, fixtures: unknown, placement: Placement): Promise<CaseServer> {
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const server = Child.spawn(`${suite}/${caseName} server`, 'server-entry.ts', placement.serverCpu, extra);
  try {
    const { port } = await server.request({ type: 'start', suite, caseName, fixtures });
    return {
      url: `http://127.0.0.1:${port!}`,
      cpuMicros: async () => (await server.request({ type: 'cpu' })).cpuMicros!,
      stop: () => server.stop(),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/**
 * Measures one case: starts its server in a fresh process pinned to the server CPU, asks the case for its requests,
 * runs a warm-up that is thrown away, then the measured run with the same settings, and reads the server's CPU time
 * around the measured run. The server process is stopped afterwards, whatever happened.
 *
 * @example
 * const result = await measureCase(suite, suite.cases[0], settings, placement, generator);
 */
export async function measureCase(
  suite: BenchSuite,
  benchCase: BenchCase,
  settings: LoadSettings,
  placement: Placement,
  generator: LoadGenerator,
  ratePerSecond?: number,
): Promise<CaseResult> {
  const server = await startCaseServer(suite.name, benchCase.name, suite.fixtures, placement);
  try {
    const { url } = server;
    const requests = await benchCase.requests(url, suite.fixtures);
    if (settings.warmupSeconds > 0) await generator.run(url, requests, settings, settings.warmupSeconds);
    const cpuBefore = await server.cpuMicros();
    const wallBefore = performance.now();
    const figures = await generator.run(url, requests, settings, settings.durationSeconds, ratePerSecond);
    const cpuAfter = await server.cpuMicros();
    const wallMicros = (performance.now() - wallBefore) * 1000;
    const serverCpu = cpuAfter - cpuBefore;
    return {
      suite: suite.name,
      name: benchCase.name,
      description: benchCase.description,
      requestsPerSecond: figures.total / figures.durationSeconds,
      p50Ms: figures.p50Ms,
      p99Ms: figures.p99Ms,
      total: figures.total,
      failures: figures.failures,
      serverCpuMicrosPerRequest: figures.total > 0 ? serverCpu / figures.total : 0,
      serverBusy: serverCpu / wallMicros,
      loadBusy: figures.cpuMicros / (figures.durationSeconds * 1e6),
    };
  } finally {
    await server.stop();
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
    kernel = (await run('uname', ['-sr'])).stdout.trim();
  } catch {
    kernel = process.platform;
  }
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'} × ${cpu.length} cores, ${kernel}, Node ${process.version}, Redis ${redisVersion}`;
}
