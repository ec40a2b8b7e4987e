import { deleteQrKeys, qrFixtures, summarise, type QrClientFigures, type QrClientPlan, type QrFixtures } from './qr-login';
import { startCaseServer, type LoadGenerator, type Placement } from './harness';

/** One measured QR run: the client's figures and the provider process's CPU time over it. */
export interface QrRun extends QrClientFigures {
  /** Provider CPU (user + system) per completed login, in milliseconds. */
  providerCpuMsPerLogin: number;
  /** Provider CPU time ÷ wall time (1 = one core fully used). */
  providerBusy: number;
  /** Client (load generator) CPU time ÷ wall time. */
  clientBusy: number;
}

/** Settings of {@link qrLoginSection}. */
export interface QrSectionOptions {
  redisUrl: string;
  placement: Placement;
  generator: LoadGenerator;
  /** Seconds of the measured run of each round. */
  durationSeconds: number;
  warmupSeconds: number;
  rounds: number;
  /** Logins in flight for the main row. */
  concurrency: number;
  /** Also measure 1 and 256 in flight. */
  curve: boolean;
}

/** Logins a server must have answered before it is measured, however long they take (see {@link warmUp}). */
const WARMUP_LOGINS = 4000;

/**
 * Warms a server up for `seconds`, then on until it has answered {@link WARMUP_LOGINS} logins. V8 optimises a
 * function after enough calls, not after enough time, and the provider is far more code than the floor: after 1,000
 * logins its next three seconds still cost 1.2–1.6 times what it costs once settled (a fresh process measured in
 * one-second slices, the same with five idle seconds between warm-up and slices, so it is the calls that count), where
 * the floor settles within a second. After 3,000–4,000 logins the slices are flat. No warm-up at all when `seconds` is 0.
 *
 * @example
 * await warmUp(generator, server.url, fixtures, 16, 1);
 */
async function warmUp(generator: LoadGenerator, url: string, fixtures: QrFixtures, concurrency: number, seconds: number): Promise<void> {
  if (seconds <= 0) return;
  const first = await generator.runQr(url, fixtures, { concurrency, durationSeconds: seconds });
  if (first.logins < WARMUP_LOGINS) await generator.runQr(url, fixtures, { concurrency, logins: WARMUP_LOGINS - first.logins });
}

/**
 * Starts a fresh provider process, warms it up, then runs `plan` from the load generator's process and reads the
 * provider's CPU time around the measured run.
 *
 * @example
 * const run = await measureQr(fixtures, { concurrency: 16, durationSeconds: 3 }, 1, placement, generator);
 */
export async function measureQr(
  fixtures: QrFixtures,
  plan: QrClientPlan,
  warmupSeconds: number,
  placement: Placement,
  generator: LoadGenerator,
  caseName = 'provider',
): Promise<QrRun> {
  const server = await startCaseServer('qr-login', caseName, fixtures, placement);
  try {
    await warmUp(generator, server.url, fixtures, plan.concurrency, warmupSeconds);
    const before = await server.cpuMicros();
    const figures = await generator.runQr(server.url, fixtures, plan);
    const cpu = (await server.cpuMicros()) - before;
    const completed = figures.logins - figures.failures;
    return {
      ...figures,
      providerCpuMsPerLogin: completed > 0 ? cpu / completed / 1000 : 0,
      providerBusy: cpu / (figures.seconds * 1e6),
      clientBusy: figures.cpuMicros / (figures.seconds * 1e6),
    };
  } finally {
    await server.stop();
  }
}

/** The provider against the HTTP floor, measured in alternation (see {@link measureAgainstFloor}). */
export interface FloorComparison {
  /** Provider CPU per completed login over all its slices, in milliseconds. */
  providerCpuMsPerLogin: number;
  /** The floor's CPU per completed login over all its slices, in milliseconds. */
  floorCpuMsPerLogin: number;
  /** Provider ÷ floor, each over all its slices. */
  floors: number;
  /** The median of the slice pairs' own ratios, and their lowest and highest. */
  medianPairFloors: number;
  pairRange: [number, number];
  pairs: number;
  sliceSeconds: number;
}

/**
 * The provider's CPU per login in HTTP floors, robust to a machine whose speed drifts: a provider process and a floor
 * process run side by side (both pinned to the server CPU, only one under load at a time), are warmed up, then take
 * turns under the same load in short slices, the order swapped at every pair. Whatever slows the machine during the
 * run slows both alike, where two runs one after the other can differ by a third on a shared machine. Each process's
 * CPU is read at the pairs' boundaries, not around its own slice, so work it defers past its slice still counts.
 *
 * @example
 * const comparison = await measureAgainstFloor(fixtures, 16, { pairs: 10, sliceSeconds: 1, warmupSeconds: 1 }, placement, generator);
 */
export async function measureAgainstFloor(
  fixtures: QrFixtures,
  concurrency: number,
  slices: { pairs: number; sliceSeconds: number; warmupSeconds: number },
  placement: Placement,
  generator: LoadGenerator,
): Promise<FloorComparison> {
  const provider = await startCaseServer('qr-login', 'provider', fixtures, placement);
  try {
    const floor = await startCaseServer('qr-login', 'http-floor', fixtures, placement);
    try {
      const sides = [
        { server: provider, cpu: 0, logins: 0 },
        { server: floor, cpu: 0, logins: 0 },
      ];
      for (const side of sides) await warmUp(generator, side.server.url, fixtures, concurrency, slices.warmupSeconds);
      // Both processes' CPU is read at every pair's start and end, so what a server does after its slice (the garbage
      // collector finishing, say) while the other one is under load is counted to it.
      const cpuNow = () => Promise.all(sides.map((side) => side.server.cpuMicros()));
      const pairRatios: number[] = [];
      let before = await cpuNow();
      for (let pair = 0; pair < slices.pairs; pair += 1) {
        const completed = [0, 0];
        for (const index of pair % 2 === 0 ? [0, 1] : [1, 0]) {
          const figures = await generator.runQr(sides[index]!.server.url, fixtures, { concurrency, durationSeconds: slices.sliceSeconds });
          if (figures.logins === 0 || figures.failures > 0)
            throw new Error(`a slice of the comparison with the floor had ${figures.failures} failed logins of ${figures.logins}`);
          completed[index] = figures.logins;
        }
        if (pair === slices.pairs - 1) await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        const after = await cpuNow();
        const perLogin = sides.map((side, index) => {
          const cpu = after[index]! - before[index]!;
          side.cpu += cpu;
          side.logins += completed[index]!;
          return cpu / completed[index]!;
        });
        pairRatios.push(perLogin[0]! / perLogin[1]!);
        before = after;
      }
      const sorted = [...pairRatios].sort((a, b) => a - b);
      const [mine, floorSide] = sides as [(typeof sides)[0], (typeof sides)[0]];
      const providerCpuMsPerLogin = mine.cpu / mine.logins / 1000;
      const floorCpuMsPerLogin = floorSide.cpu / floorSide.logins / 1000;
      return {
        providerCpuMsPerLogin,
        floorCpuMsPerLogin,
        floors: providerCpuMsPerLogin / floorCpuMsPerLogin,
        medianPairFloors: sorted[Math.floor(sorted.length / 2)]!,
        pairRange: [sorted[0]!, sorted.at(-1)!],
        pairs: slices.pairs,
        sliceSeconds: slices.sliceSeconds,
      };
    } finally {
      await floor.stop();
    }
  } finally {
    await provider.stop();
  }
}

/** Slice pairs of the provider-against-floor comparison: about 25 s of the run. */
const FLOOR_PAIRS = 10;
/** How long both servers are left idle after the last pair before their CPU is read, for work they deferred. */
const SETTLE_MS = 250;

function row(label: string, run: QrRun): string {
  const login = run.steps.find((step) => step.step === 'login');
  return `| ${label} | ${run.loginsPerSecond.toFixed(0)} | ${run.providerCpuMsPerLogin.toFixed(2)} | ${(1000 / run.providerCpuMsPerLogin).toFixed(0)} | ${login?.p50.toFixed(1)} | ${login?.p99.toFixed(1)} | ${run.logins} | ${run.failures} | ${Math.round(run.providerBusy * 100)} % | ${Math.round(run.clientBusy * 100)} % |`;
}

/**
 * The QR-login section of the report: complete logins (create, scan, confirm, redirect, exchange, userinfo) against
 * the provider in its own pinned process, driven from the load generator's process; the best of `rounds` closed-loop
 * runs, then an open-loop run at half that rate for latency, then (with `curve`) 1 and 256 logins in flight.
 *
 * @example
 * const { text, markdown, main } = await qrLoginSection({ redisUrl, placement, generator, durationSeconds: 3, warmupSeconds: 1, rounds: 3, concurrency: 16, curve: true });
 */
export async function qrLoginSection(options: QrSectionOptions): Promise<{
  text: string;
  markdown: string;
  main: QrRun;
  floor: QrRun;
  versusFloor: FloorComparison;
  inFlight: Array<[number, QrRun]>;
}> {
  const { placement, generator, durationSeconds, warmupSeconds } = options;
  const fixtures = qrFixtures(options.redisUrl);
  try {
    let best: QrRun | undefined;
    for (let round = 1; round <= options.rounds; round += 1) {
      const run = await measureQr(fixtures, { concurrency: options.concurrency, durationSeconds }, warmupSeconds, placement, generator);
      console.log(
        `  [${round}/${options.rounds}] ${options.concurrency} in flight: ${run.loginsPerSecond.toFixed(0)} logins/s, provider ${run.providerCpuMsPerLogin.toFixed(2)} ms CPU/login, busy ${Math.round(run.providerBusy * 100)} %; client busy ${Math.round(run.clientBusy * 100)} %${run.failures ? `  (${run.failures} failures)` : ''}`,
      );
      if (!best || run.loginsPerSecond > best.loginsPerSecond) best = { ...run, failures: run.failures + (best?.failures ?? 0) };
    }
    const main = best!;
    const rate = Math.max(1, Math.round(main.loginsPerSecond / 2));
    const fixed = await measureQr(
      fixtures,
      { concurrency: options.concurrency, durationSeconds, ratePerSecond: rate },
      warmupSeconds,
      placement,
      generator,
    );
    console.log(
      `  at ${rate} logins/s offered: login p50 ${fixed.steps.at(-1)?.p50.toFixed(1)} ms, p99 ${fixed.steps.at(-1)?.p99.toFixed(1)} ms`,
    );
    // Another server case under the main row's load: the provider auto-pipelining, and the HTTP floor.
    const sameLoad = async (caseName: string, label: string): Promise<QrRun> => {
      const run = await measureQr(
        fixtures,
        { concurrency: options.concurrency, durationSeconds },
        warmupSeconds,
        placement,
        generator,
        caseName,
      );
      console.log(
        `  ${options.concurrency} in flight, ${label}: ${run.loginsPerSecond.toFixed(0)} logins/s, ${run.providerCpuMsPerLogin.toFixed(2)} ms CPU/login`,
      );
      return run;
    };
    const pipelined = await sameLoad('provider-autopipelining', 'enableAutoPipelining');
    const floor = await sameLoad('http-floor', 'HTTP floor (canned answers)');
    const versusFloor = await measureAgainstFloor(
      fixtures,
      options.concurrency,
      { pairs: FLOOR_PAIRS, sliceSeconds: 1, warmupSeconds },
      placement,
      generator,
    );
    console.log(
      `  ${options.concurrency} in flight, provider and floor in alternation (${versusFloor.pairs} pairs of ${versusFloor.sliceSeconds} s): ${versusFloor.providerCpuMsPerLogin.toFixed(2)} and ${versusFloor.floorCpuMsPerLogin.toFixed(2)} ms CPU/login, ${versusFloor.floors.toFixed(2)} floors (pairs ${versusFloor.pairRange.map((ratio) => ratio.toFixed(2)).join('–')}, median ${versusFloor.medianPairFloors.toFixed(2)})`,
    );
    const inFlight: Array<[number, QrRun]> = [[options.concurrency, main]];
    if (options.curve) {
      for (const concurrency of [1, 256]) {
        const run = await measureQr(
          fixtures,
          { concurrency, durationSeconds: Math.max(1, durationSeconds - 1) },
          warmupSeconds,
          placement,
          generator,
        );
        console.log(
          `  ${concurrency} in flight: ${run.loginsPerSecond.toFixed(0)} logins/s, provider ${run.providerCpuMsPerLogin.toFixed(2)} ms CPU/login`,
        );
        inFlight.push([concurrency, run]);
      }
      inFlight.sort((a, b) => a[0] - b[0]);
    }
    const stepRows = main.steps.map((step) => {
      const atRate = fixed.steps.find((other) => other.step === step.step) ?? summarise(step.step, []);
      return `| ${step.step} | ${step.p50.toFixed(2)} | ${step.p99.toFixed(2)} | ${atRate.p50.toFixed(2)} | ${atRate.p99.toFixed(2)} |`;
    });
    const header = [
      '| run | logins/s | provider CPU ms/login | logins/s per core (1000 ÷ CPU ms) | login p50 ms | login p99 ms | logins | failures | provider busy | client busy |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ];
    const markdown = [
      ...header,
      row(`${options.concurrency} in flight (best of ${options.rounds})`, main),
      row(`fixed rate ${rate} logins/s (50 % of max)`, fixed),
      row(`${options.concurrency} in flight, store connection with enableAutoPipelining`, pipelined),
      ...inFlight
        .filter(([concurrency]) => concurrency !== options.concurrency)
        .map(([concurrency, run]) => row(`${concurrency} in flight`, run)),
      row(`HTTP floor, ${options.concurrency} in flight: the six requests answered by Express with canned answers`, floor),
      '',
      `Of the provider's ${main.providerCpuMsPerLogin.toFixed(2)} ms of CPU per login, ${floor.providerCpuMsPerLogin.toFixed(2)} ms is the floor: six HTTP requests through Express with the provider's body parsers and answers of the same shape and size, canned (\`bench/qr-floor.ts\`: no Redis, no tokens, no state). The remaining ${(main.providerCpuMsPerLogin - floor.providerCpuMsPerLogin).toFixed(2)} ms is the kit's own work: Redis commands, signing and verifying tokens, hashing secrets, the login's state.`,
      '',
      `Measured in alternation (a provider process and a floor process side by side, taking turns under the same load in ${versusFloor.pairs} pairs of ${versusFloor.sliceSeconds} s slices, the order swapped at every pair, so a drift of the machine's speed reaches both alike), the provider costs ${versusFloor.providerCpuMsPerLogin.toFixed(2)} ms and the floor ${versusFloor.floorCpuMsPerLogin.toFixed(2)} ms per login: **${versusFloor.floors.toFixed(2)} floors** (the pairs ranged ${versusFloor.pairRange.map((ratio) => ratio.toFixed(2)).join('–')}, median ${versusFloor.medianPairFloors.toFixed(2)}).`,
      '',
      `Per step (ms), at full load with ${options.concurrency} in flight and at the fixed rate of ${rate} logins/s:`,
      '',
      '| step | p50 full load | p99 full load | p50 at 50 % | p99 at 50 % |',
      '|---|---:|---:|---:|---:|',
      ...stepRows,
    ].join('\n');
    const text = markdown;
    return { text, markdown, main, floor, versusFloor, inFlight };
  } finally {
    await deleteQrKeys(fixtures).catch(() => undefined);
  }
}
