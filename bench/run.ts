/**
 * The benchmark runner: `npm run bench` prints the table, `npm run bench -- --write` also rewrites
 * bench/RESULTS.md. The system under test is kept apart from the load generator: each round of each case starts
 * that case's server in a fresh process (bench/server-entry.ts) on 127.0.0.1:0, pinned with `taskset` to one CPU,
 * and autocannon runs in another long-lived process (bench/load-entry.ts) pinned to another CPU, loading each case
 * in turn with the same settings. The runner itself makes the fixtures (keys, tokens, the JWKS server, logins) and
 * is not pinned. A missed target is reported, never a failing exit status: this is a report, not a gate.
 *
 * Options: --write, --node <majors> (default 26: e.g. --node 22,24,26 runs everything once per version, one
 * after the other, and RESULTS.md shows them side by side), --suite <name> (repeatable), --duration <s> per round
 * (default 3), --warmup <s> (default 1), --rounds <n> (default 3), --connections <n> (default 10), --no-pin.
 * BENCH_REDIS_URL overrides redis://127.0.0.1:6379. A Node version other than the running one is found through
 * BENCH_NODE_<major> (its binary) or in .ci/node/<major> (BENCH_NODE_DIR to use another folder), see
 * bench/node-runtimes.ts.
 *
 * Targets are decided apart from the tables: each by an interleaved comparison of its two cases (bench/paired.ts,
 * eight A B B A / B A A B pairs of 1 s slices, the median ratio), which a machine drifting by tens of per cent from one
 * minute to the next cannot decide for it.
 *
 * Each suite's cases run round-robin `rounds` times and each case keeps its best round: on a shared machine a
 * neighbour's burst slows whichever case happens to run then, and the best round is the least disturbed one.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import Redis from 'ioredis';
import { bearerSuite } from './bearer';
import {
  describeMachine,
  evaluateTargets,
  LoadGenerator,
  buildServerCode,
  measureCase,
  planPlacement,
  serverCodeSummary,
  targetLabel,
  useServerBuild,
  verdictWord,
  type BenchSuite,
  type CaseResult,
  type LoadSettings,
  type TargetResult,
} from './harness';
import { runCurves, type CurveResults } from './curves';
import { dpopSuite } from './dpop';
import { eventsSuite } from './events';
import { DEFAULT_NODE_MAJORS, findNode, parseNodeMajors } from './node-runtimes';
import { passwordSection } from './password-cost';
import { acrossVersions, composeReport } from './report';
import { curvesSvg, type PlotPanel } from './plot';
import { qrLoginSection, type FloorComparison, type QrRun } from './qr-suite';
import { measurePaired } from './paired';
import { measureRevocation, type RevocationFigures } from './revocation';
import { sessionsSuite, type SessionFixtures } from './sessions';

const tsxLoader = pathToFileURL(createRequire(__filename).resolve('tsx')).href;

export interface Arguments {
  write: boolean;
  pin: boolean;
  rounds: number;
  suites: string[];
  settings: LoadSettings;
  /** Node major versions to measure on, one full run each (`--node 22,24,26`; Node 26 by default). */
  nodes: string[];
  /** Cases left out of every suite (`--skip <case>`, repeatable), to keep a run on a busy machine short. */
  skip: string[];
  /** False with --no-paced: no extra run per case at half its best rate (the "at 50 % rate" columns read n/a). */
  paced: boolean;
  /** True with --source: the servers run the TypeScript sources through tsx instead of tsc's build. */
  source: boolean;
  /** Set in a per-version child run: write this run's figures as JSON there instead of printing the final report. */
  childOut: string | undefined;
  /** The options as given, minus --node, --write and --child-out: what each per-version child run is started with. */
  forwarded: string[];
}

function parseArguments(argv: string[]): Arguments {
  const settings: LoadSettings = { connections: 10, pipelining: 1, durationSeconds: 3, warmupSeconds: 1 };
  let rounds = 3;
  const suites: string[] = [];
  let write = false;
  let pin = true;
  let nodes = DEFAULT_NODE_MAJORS;
  let childOut: string | undefined;
  let paced = true;
  let source = false;
  const skip: string[] = [];
  const forwarded: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index];
    const value = argv[index + 1];
    if (flag === '--node' && value) {
      nodes = parseNodeMajors(value);
      index += 1;
      continue;
    }
    // Internal: the runner starts one child per Node version with it (measureOnOtherNode).
    if (flag === '--child-out' && value) {
      childOut = value;
      index += 1;
      continue;
    }
    // A per-version run is given the same options; there --write only writes bench/curves.svg.
    if (flag === '--no-pin' || flag === '--write' || flag === '--no-paced' || flag === '--source') forwarded.push(flag);
    else if (value !== undefined) forwarded.push(flag!, value);
    const number = (): number => {
      const parsed = Number(value);
      if (!Number.isFinite(parsed) || parsed < 0) throw new TypeError(`bench: ${flag} needs a non-negative number, got ${String(value)}`);
      index += 1;
      return parsed;
    };
    if (flag === '--write') write = true;
    else if (flag === '--no-pin') pin = false;
    else if (flag === '--no-paced') paced = false;
    else if (flag === '--source') source = true;
    else if (flag === '--skip' && value) {
      skip.push(value);
      index += 1;
    } else if (flag === '--suite' && value) {
      suites.push(value);
      index += 1;
    } else if (flag === '--duration') settings.durationSeconds = number();
    else if (flag === '--warmup') settings.warmupSeconds = number();
    else if (flag === '--connections') settings.connections = Math.max(1, Math.floor(number()));
    else if (flag === '--rounds') rounds = Math.max(1, Math.floor(number()));
    else
      throw new TypeError(
        `bench: unknown option ${String(flag)} (known: --write, --node, --suite, --skip, --no-paced, --source, --duration, --warmup, --connections, --rounds, --no-pin)`,
      );
  }
  return { write, pin, suites, settings, rounds, nodes, childOut, forwarded, skip, paced, source };
}

function formatRate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

function percent(value: number): string {
  return `${Math.round(value * 100)} %`;
}

function table(results: CaseResult[]): string {
  const lines = [
    '| suite | case | req/s | p50 ms | p99 ms | at 50 % rate: req/s offered | p50 ms | p99 ms | requests | non-2xx/errors | server CPU µs/req | server busy | load generator busy |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const result of results) {
    lines.push(
      `| ${result.suite} | ${result.name} | ${formatRate(result.requestsPerSecond)} | ${result.p50Ms} | ${result.p99Ms} | ${result.atRate ? formatRate(result.atRate.ratePerSecond) : 'n/a'} | ${result.atRate?.p50Ms ?? 'n/a'} | ${result.atRate?.p99Ms ?? 'n/a'} | ${result.total} | ${result.failures + (result.atRate?.failures ?? 0)} | ${Math.round(result.serverCpuMicrosPerRequest)} | ${percent(result.serverBusy)} | ${percent(result.loadBusy)} |`,
    );
  }
  return lines.join('\n');
}

/** Issue 30's QR target: at least 1,500 logins/s on one busy core of provider CPU, i.e. at most this much per login. */
const QR_LOGINS_PER_CORE_TARGET = 1500;
const QR_CPU_MS_PER_LOGIN_TARGET = 1000 / QR_LOGINS_PER_CORE_TARGET;
/** The HTTP floor (six bare Express requests) per login on the machine the QR target was set on. */
const QR_TARGET_MACHINE_FLOOR_MS = 0.17;

function targetTable(targets: TargetResult[], qrMain?: QrRun, qrFloor?: FloorComparison): string {
  const lines = ['| suite | target | measured | verdict |', '|---|---|---:|---|'];
  for (const target of targets) {
    const measured = target.ratio === undefined ? 'n/a' : `${target.ratio.toFixed(3)}×`;
    const verdict = `${verdictWord(target)}${target.note ? ` (${target.note})` : ''}`;
    lines.push(`| ${target.suite} | ${targetLabel(target)} | ${measured} | ${verdict} |`);
  }
  if (qrMain) {
    const cpu = qrMain.providerCpuMsPerLogin;
    const perCore = Math.round(1000 / cpu);
    const pass = cpu <= QR_CPU_MS_PER_LOGIN_TARGET && qrMain.failures === 0;
    // Machines of one kind differ by up to three times from hour to hour; the floor, measured in alternation with the
    // provider in the same run, says what the figure means in the terms of the machine the target was set on.
    const inFloors = qrFloor
      ? `; ${qrFloor.floors.toFixed(2)} HTTP floors, provider and floor measured in alternation (${qrFloor.providerCpuMsPerLogin.toFixed(2)} ÷ ${qrFloor.floorCpuMsPerLogin.toFixed(2)} ms), where the target allows ${(QR_CPU_MS_PER_LOGIN_TARGET / QR_TARGET_MACHINE_FLOOR_MS).toFixed(2)} (${QR_CPU_MS_PER_LOGIN_TARGET.toFixed(2)} ÷ ${QR_TARGET_MACHINE_FLOOR_MS} ms on Node 26 on a quiet machine)`
      : '';
    lines.push(
      `| qr-login | provider CPU per login ≤ ${QR_CPU_MS_PER_LOGIN_TARGET.toFixed(2)} ms at 16 in flight (≥ ${QR_LOGINS_PER_CORE_TARGET.toLocaleString('en-US')} logins/s per core) | ${cpu.toFixed(2)} ms (${perCore} per core${inFloors}) | ${pass ? 'PASS' : 'FAIL'} |`,
    );
  }
  return lines.join('\n');
}

function ratioTable(suiteName: string, results: CaseResult[]): string {
  const mine = results.filter((result) => result.suite === suiteName);
  const names = mine.map((result) => result.name);
  const lines = [`| ${suiteName}: row ÷ column | ${names.join(' | ')} |`, `|---|${names.map(() => '---:').join('|')}|`];
  for (const row of mine) {
    const cells = mine.map((column) =>
      column.requestsPerSecond > 0 ? (row.requestsPerSecond / column.requestsPerSecond).toFixed(2) : 'n/a',
    );
    lines.push(`| ${row.name} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function curvePanels(curves: CurveResults, qr: Array<[number, QrRun]>): PlotPanel[] {
  return [
    {
      title: 'Session check (uncached)',
      xLabel: 'sessions in Redis',
      yLabel: 'req/s',
      logX: true,
      points: curves.sessionCheck.map(({ sessions, result }) => ({ x: sessions, y: result.requestsPerSecond })),
    },
    { title: 'Logout everywhere', xLabel: "the user's sessions", yLabel: 'ms', logX: true, points: curves.logoutEverywhere },
    {
      title: 'Bearer ES256, uncached',
      xLabel: 'keys in the JWKS',
      yLabel: 'req/s',
      logX: true,
      points: curves.bearer.map(({ keys, result }) => ({ x: keys, y: result.requestsPerSecond })),
    },
    ...(qr.length > 0
      ? [
          {
            title: 'QR logins',
            xLabel: 'logins in flight',
            yLabel: 'logins/s',
            logX: true,
            points: qr.map(([x, run]) => ({ x, y: run.loginsPerSecond })),
          },
        ]
      : []),
  ];
}

/** Last point ÷ first point, as "×1.23". */
function growth(first: number | undefined, last: number | undefined): string {
  return first && last ? `×${(last / first).toFixed(2)}` : 'n/a';
}

/** Which curves grow, by how much from their first point to their last in this run, and why. */
function curveVerdicts(curves: CurveResults, qr: Array<[number, QrRun]>): string[] {
  const sessions = curves.sessionCheck;
  const logouts = curves.logoutEverywhere;
  const bearer = curves.bearer;
  // The kit's own CPU per request cannot depend on how many keys Redis holds: when it moves, the machine did.
  const cpuFirst = sessions[0]?.result.serverCpuMicrosPerRequest;
  const cpuLast = sessions.at(-1)?.result.serverCpuMicrosPerRequest;
  const cpuMoved = cpuFirst && cpuLast && Math.abs(Math.log(cpuLast / cpuFirst)) > Math.log(1.2);
  const machineNote = cpuMoved
    ? ` In this run the server's own CPU per request moved too (${Math.round(cpuFirst)} → ${Math.round(cpuLast)} µs), which the number of keys in Redis cannot change in the kit's process: the machine's speed changed between these points (one round each), so this run does not measure the curve.`
    : '';
  const lines = [
    '**Which grow, and why** (last point ÷ first point in this run):',
    '',
    `- Session check, ${sessions[0]?.sessions.toLocaleString('en-US')} → ${sessions.at(-1)?.sessions.toLocaleString('en-US')} sessions: req/s ${growth(sessions[0]?.result.requestsPerSecond, sessions.at(-1)?.result.requestsPerSecond)}. Flat: a check reads one key (batched into one \`MGET\` per event-loop turn) from Redis's hash table, whose cost does not depend on how many keys it holds; what varies is noise, and a larger keyspace's cache misses inside Redis.${machineNote}`,
    `- Logout everywhere, ${logouts[0]?.x.toLocaleString('en-US')} → ${logouts.at(-1)?.x.toLocaleString('en-US')} sessions of one user: time ${growth(logouts[0]?.y, logouts.at(-1)?.y)}. Grows with the user's sessions, and only with them: one \`SMEMBERS\` of the user's index, one \`DEL\` naming every session, the index deleted and one invalidation published. Up to a hundred sessions the fixed round trips dominate; at 10,000 the time is Redis deleting 10,000 keys and the reply's size. Other users' sessions cost nothing.`,
    `- Memory: a session's key and JSON stay the same size whatever the number of sessions; a user's index grows by about ${Math.round(curves.memory.perIndexMemberBytes)} bytes per further session (one set member, the session id, with Redis's per-member overhead).`,
    `- Bearer, ${bearer[0]?.keys} → ${bearer.at(-1)?.keys} keys in the JWKS: req/s ${growth(bearer[0]?.result.requestsPerSecond, bearer.at(-1)?.result.requestsPerSecond)}. Flat: the token's \`kid\` finds its key in a map, built once per JWKS fetch; each request costs one ES256 verification whatever the set's size.`,
  ];
  const first = qr[0];
  const last = qr.at(-1);
  if (first && last) {
    lines.push(
      `- QR logins, ${first[0]} → ${last[0]} in flight: logins/s ${growth(first[1].loginsPerSecond, last[1].loginsPerSecond)}, provider CPU per login ${growth(first[1].providerCpuMsPerLogin, last[1].providerCpuMsPerLogin)}, login p50 ${growth(first[1].steps.at(-1)?.p50, last[1].steps.at(-1)?.p50)}. Throughput rises while the provider's core has idle time to fill, and CPU per login falls as more logins share each event-loop turn's Redis pipeline and socket writes; once the core is busy, more logins in flight only queue, so latency grows in proportion (Little's law) while logins/s stays flat.`,
    );
  }
  return lines;
}

function curvesSection(curves: CurveResults, qr: Array<[number, QrRun]>): string {
  const rate = (result: CaseResult) => formatRate(result.requestsPerSecond);
  return [
    '![cost curves](curves.svg)',
    '',
    "Against a private `redis-server --save ''` on a free port, loaded with pipelines; each point a fresh server process, 1 s warm-up and up to 2 s measured (one round, so noisier than the tables above).",
    '',
    '| curve | point | req/s (or ms) | p50 ms | p99 ms | server CPU µs/req | errors |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...curves.sessionCheck.map(
      ({ sessions, result }) =>
        `| session check (kit-require-session, uncached) | ${sessions.toLocaleString('en-US')} sessions | ${rate(result)} | ${result.p50Ms} | ${result.p99Ms} | ${Math.round(result.serverCpuMicrosPerRequest)} | ${result.failures} |`,
    ),
    ...curves.logoutEverywhere.map(
      (point) => `| logout everywhere (one user) | ${point.x.toLocaleString('en-US')} sessions | ${point.y.toFixed(1)} ms | | | | 0 |`,
    ),
    ...curves.bearer.map(
      ({ keys, result }) =>
        `| Bearer ES256 via JWKS, cacheSize 0 | ${keys} keys | ${rate(result)} | ${result.p50Ms} | ${result.p99Ms} | ${Math.round(result.serverCpuMicrosPerRequest)} | ${result.failures} |`,
    ),
    ...qr.map(
      ([inFlight, run]) =>
        `| QR logins | ${inFlight} in flight | ${run.loginsPerSecond.toFixed(0)} logins/s | ${run.steps.at(-1)?.p50.toFixed(1)} (login) | ${run.steps.at(-1)?.p99.toFixed(1)} (login) | ${Math.round(run.providerCpuMsPerLogin * 1000)} per login | ${run.failures} |`,
    ),
    '',
    ...curveVerdicts(curves, qr),
    '',
    `Redis memory (\`MEMORY USAGE\`): **${curves.memory.perSessionBytes} bytes per session** (the key and its JSON); a user's session index \`user-sessions:{id}\` is ${curves.memory.indexOneBytes} bytes with one session and ${curves.memory.indexHundredBytes} bytes with 100 (about ${Math.round(curves.memory.perIndexMemberBytes)} bytes per further session).`,
  ].join('\n');
}

function revocationSection(figures: RevocationFigures): string {
  return [
    '| measured | samples | p50 ms | p99 ms | mean ms | 200s from B after the logout answered |',
    '|---|---:|---:|---:|---:|---:|',
    ...[figures.afterAnswer, figures.fromRequest].map(
      (row) =>
        `| ${row.step} | ${figures.samples} | ${row.p50.toFixed(2)} | ${row.p99.toFixed(2)} | ${row.mean.toFixed(2)} | ${figures.staleAnswers} |`,
    ),
  ].join('\n');
}

async function redisVersion(url: string): Promise<string> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const info = await client.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  } finally {
    client.disconnect();
  }
}

/** One full run on the running Node: its figures, and its part of RESULTS.md. */
export interface NodeRun {
  node: string;
  machine: string;
  seconds: number;
  loadAtStart: string;
  loadAtEnd: string;
  results: CaseResult[];
  targets: TargetResult[];
  /** RESULTS.md's part for this Node version (results, targets, ratios, revocation, QR, curves), level-3 headings. */
  markdown: string;
  /** What the console shows at the end. */
  summary: string;
}

async function measureOnThisNode(args: Arguments): Promise<NodeRun> {
  const { write, pin, suites: only, settings, rounds } = args;
  const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const machine = await describeMachine(await redisVersion(redisUrl));
  const placement = await planPlacement(pin);
  const builders: Array<[string, () => Promise<BenchSuite>]> = [
    ['sessions', () => sessionsSuite(redisUrl)],
    ['bearer', () => bearerSuite()],
    ['dpop', () => dpopSuite(redisUrl)],
    ['events', () => eventsSuite(redisUrl)],
  ];
  const results: CaseResult[] = [];
  const targets: TargetResult[] = [];
  const suiteNotes: string[] = [];
  const started = Date.now();
  // Other work on the machine is not pinned away from the servers; the load average says how much there was.
  const loadAtStart = loadavg()[0]!.toFixed(2);

  console.log(`machine: ${machine}`);
  console.log(
    `settings: ${settings.connections} connections, pipelining ${settings.pipelining}, ${rounds} rounds of ${settings.warmupSeconds} s warm-up + ${settings.durationSeconds} s per case (best round kept)`,
  );
  console.log(`processes: ${placement.summary}`);
  console.log(`server code: ${serverCodeSummary()}`);
  console.log(`1-minute load average at start: ${loadAtStart}`);
  const generator = LoadGenerator.start(placement);
  let qrMarkdown = '';
  let revocationMarkdown = '';
  let curvesMarkdown = '';
  let passwordMarkdown = '';
  let qrInFlight: Array<[number, QrRun]> = [];
  let qrMain: QrRun | undefined;
  let qrFloor: FloorComparison | undefined;
  try {
    for (const [name, build] of builders) {
      if (only.length > 0 && !only.includes(name)) continue;
      const built = await build();
      const suite = { ...built, cases: built.cases.filter((benchCase) => !args.skip.includes(benchCase.name)) };
      try {
        const suiteLoad = loadavg()[0]!.toFixed(2);
        console.log(`\n${suite.name}: ${suite.workload} (1-minute load average ${suiteLoad})`);
        suiteNotes.push(`- ${suite.name} (1-minute load average ${suiteLoad} when it started): ${suite.workload}`);
        const best = new Map<string, CaseResult>();
        for (let round = 1; round <= rounds; round += 1) {
          for (const benchCase of suite.cases) {
            const result = await measureCase(suite, benchCase, settings, placement, generator);
            const previous = best.get(benchCase.name);
            // Failures are summed over rounds, so a round with errors is never hidden by a clean one.
            const failures = result.failures + (previous?.failures ?? 0);
            if (!previous || result.requestsPerSecond > previous.requestsPerSecond) best.set(benchCase.name, { ...result, failures });
            else previous.failures = failures;
            console.log(
              `  [${round}/${rounds}] ${benchCase.name.padEnd(28)} ${formatRate(result.requestsPerSecond).padStart(8)} req/s  p50 ${result.p50Ms} ms  p99 ${result.p99Ms} ms  server ${Math.round(result.serverCpuMicrosPerRequest)} µs/req, busy ${percent(result.serverBusy)}; load generator busy ${percent(result.loadBusy)}${result.failures > 0 ? `  (${result.failures} non-2xx/errors)` : ''}`,
            );
          }
        }
        // Latency where users feel it: each case again at a fixed offered rate, half its best throughput.
        for (const benchCase of args.paced ? suite.cases : []) {
          const top = best.get(benchCase.name)!;
          const rate = Math.max(1, Math.round(top.requestsPerSecond / 2));
          const pacedSettings = { ...settings, durationSeconds: Math.min(settings.durationSeconds, 2) };
          const paced = await measureCase(suite, benchCase, pacedSettings, placement, generator, rate);
          top.atRate = { ratePerSecond: rate, p50Ms: paced.p50Ms, p99Ms: paced.p99Ms, failures: paced.failures };
          console.log(`  [50 %] ${benchCase.name.padEnd(28)} at ${formatRate(rate)} req/s: p50 ${paced.p50Ms} ms  p99 ${paced.p99Ms} ms`);
        }
        results.push(...suite.cases.map((benchCase) => best.get(benchCase.name)!));
        if (suite.name === 'sessions') {
          try {
            const figures = await measureRevocation(suite.fixtures as SessionFixtures, placement, 200);
            revocationMarkdown = revocationSection(figures);
            console.log(
              `  revocation across two processes: p50 ${figures.afterAnswer.p50.toFixed(2)} ms, p99 ${figures.afterAnswer.p99.toFixed(2)} ms after the logout answered; ${figures.staleAnswers} stale answers`,
            );
          } catch (error) {
            revocationMarkdown = `Not measured: ${(error as Error).message}`;
            console.log(`  revocation latency failed: ${(error as Error).message}`);
          }
        }
        const verdicts = evaluateTargets(suite, results);
        // Every verdict is decided by an interleaved comparison of its two cases (bench/paired.ts): their best rounds,
        // minutes apart, differ by more than the machine drifts in between on a shared machine.
        for (const verdict of verdicts) {
          const [a, b] = [verdict.denominator, verdict.numerator].map((name) => suite.cases.find((c) => c.name === name));
          if (!a || !b) continue;
          const paired = await measurePaired(suite, a, b, settings, placement, generator);
          verdict.ratio = paired.ratio;
          verdict.pass = paired.ratio >= verdict.atLeast && paired.failures === 0;
          verdict.note = `paired: median of ${paired.pairs}, range ${paired.low.toFixed(2)}–${paired.high.toFixed(2)}×${paired.failures > 0 ? `; ${paired.failures} non-2xx/errors` : ''}`;
        }
        targets.push(...verdicts);
        for (const verdict of verdicts) {
          const measured = verdict.ratio === undefined ? 'n/a' : `${verdict.ratio.toFixed(3)}×`;
          console.log(`  ${verdictWord(verdict)} ${targetLabel(verdict)}: ${measured}${verdict.note ? ` (${verdict.note})` : ''}`);
        }
      } finally {
        await suite.close?.();
      }
    }

    if (only.length === 0 || only.includes('password')) {
      console.log('\npassword: what a password change and a reset request cost, and the password policy check');
      try {
        passwordMarkdown = await passwordSection(redisUrl);
      } catch (error) {
        passwordMarkdown = `Not measured: ${(error as Error).message}`;
        console.log(`  password failed: ${(error as Error).message}`);
      }
    }

    if (only.length === 0 || only.includes('qr-login')) {
      console.log('\nqr-login: complete logins (create, scan, confirm, redirect, exchange, userinfo), provider in its own process');
      try {
        const section = await qrLoginSection({
          redisUrl,
          placement,
          generator,
          durationSeconds: settings.durationSeconds,
          warmupSeconds: settings.warmupSeconds,
          rounds,
          concurrency: 16,
          curve: true,
        });
        qrMarkdown = section.markdown;
        qrInFlight = section.inFlight;
        qrMain = section.main;
        qrFloor = section.versusFloor;
      } catch (error) {
        qrMarkdown = `Not measured: ${(error as Error).message}`;
        console.log(`  qr-login failed: ${(error as Error).message}`);
      }
    }

    if (only.length === 0 || only.includes('curves')) {
      console.log('\ncurves: costs as the work grows (private Redis on a free port)');
      try {
        const curves = await runCurves(settings, placement, generator);
        curvesMarkdown = curvesSection(curves, qrInFlight);
        if (write) {
          await writeFile(join(__dirname, 'curves.svg'), curvesSvg(curvePanels(curves, qrInFlight)));
          console.log('wrote bench/curves.svg');
        }
      } catch (error) {
        curvesMarkdown = `Not measured: ${(error as Error).message}`;
        console.log(`  curves failed: ${(error as Error).message}`);
      }
    }
  } finally {
    await generator.stop();
  }

  const seconds = Math.round((Date.now() - started) / 1000);
  const loadAtEnd = loadavg()[0]!.toFixed(2);
  const ratios = builders
    .map(([name]) => name)
    .filter((name) => results.some((result) => result.suite === name))
    .map((name) => ratioTable(name, results));
  const markdown = [
    `- Machine: ${machine}; run took ${seconds} s`,
    `- 1-minute load average: ${loadAtStart} when this version's run started, ${loadAtEnd} when it ended (other work on the machine is not kept off the servers' CPU).`,
    ...suiteNotes,
    '',
    '#### Results',
    '',
    table(results),
    '',
    '#### Targets',
    '',
    targetTable(targets, qrMain, qrFloor),
    '',
    '#### Ratios (requests per second)',
    '',
    ratios.join('\n\n'),
    '',
    ...(revocationMarkdown
      ? [
          '#### Revocation across processes (session cache)',
          '',
          "Two server processes of `kit-require-session-cached` on one Redis: a user logs in on A, B serves the session twice (the second from its cache), A logs the user out, and the runner polls B until it answers 401. Measured from the logout's answer on A (and from sending it) to the first 401 on B; one poll is one HTTP round trip, so the figures are upper bounds.",
          '',
          revocationMarkdown,
          '',
        ]
      : []),
    ...(passwordMarkdown ? ['#### Password change, reset request and policy', '', passwordMarkdown, ''] : []),
    ...(qrMarkdown
      ? [
          '#### QR login',
          '',
          `The provider (\`qrLoginProvider\` on Redis, ES256 tokens) runs in its own process (${placement.serverCpu === undefined ? 'not pinned' : `pinned to CPU ${placement.serverCpu}`}); the client drives complete logins from the load generator's process (${placement.loadCpu === undefined ? 'not pinned' : `CPU ${placement.loadCpu}`}) over keep-alive HTTP. A login is six requests: create, scan, confirm, redirect, exchange, userinfo. "provider CPU ms/login" is the provider process's user + system CPU over the measured run ÷ completed logins; "per core" is what one fully busy core would serve at that cost.`,
          '',
          qrMarkdown.replace(/^#{2,3} /gm, '##### '),
          '',
        ]
      : []),
    ...(curvesMarkdown ? ['#### Cost curves', '', curvesMarkdown, ''] : []),
  ].join('\n');
  const summary = `\n${table(results)}\n\n${targetTable(targets, qrMain, qrFloor)}\n\n${ratios.join('\n\n')}\n\nfull run on Node ${process.version}: ${seconds} s`;
  return { node: process.version, machine, seconds, loadAtStart, loadAtEnd, results, targets, markdown, summary };
}

/** Runs bench/run.ts under another Node binary for one version, and reads back its figures. */
async function measureOnOtherNode(major: string, args: Arguments): Promise<NodeRun> {
  const node = await findNode(major);
  const folder = await mkdtemp(join(tmpdir(), 'ssobench-'));
  const out = join(folder, `node-${major}.json`);
  try {
    console.log(`\n=== Node ${major}: ${node} ===`);
    const child = spawn(node, ['--import', tsxLoader, __filename, ...args.forwarded, '--child-out', out], { stdio: 'inherit' });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`bench: the run on Node ${major} exited with ${String(code)}`);
    return JSON.parse(await readFile(out, 'utf8')) as NodeRun;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = parseArguments(process.argv.slice(2));
  if (args.childOut !== undefined) {
    // A per-version run started by the runner below: measure, hand the figures back, print nothing more.
    const run = await measureOnThisNode(args);
    await writeFile(args.childOut, JSON.stringify(run));
    return;
  }
  // Built once, before any version runs: every server process of every version runs the same JavaScript.
  if (!args.source) useServerBuild(await buildServerCode());
  const current = process.versions.node.split('.')[0]!;
  const runs: NodeRun[] = [];
  // One version after the other, never side by side: each run has the server CPU to itself.
  for (const major of args.nodes) {
    runs.push(
      major === current && !process.env[`BENCH_NODE_${major}`] ? await measureOnThisNode(args) : await measureOnOtherNode(major, args),
    );
  }
  for (const run of runs) console.log(`\n=== Node ${run.node} ===${run.summary}`);
  if (args.nodes.length > 1) console.log(`\n${acrossVersions(runs)}`);
  if (args.write) {
    await writeFile(
      join(__dirname, 'RESULTS.md'),
      await composeReport(runs, {
        ...args.settings,
        rounds: args.rounds,
        placement: (await planPlacement(args.pin)).summary,
        serverCode: serverCodeSummary(),
      }),
    );
    console.log('wrote bench/RESULTS.md');
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
