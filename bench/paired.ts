/**
 * A/B comparisons tighter than the machine's drift. On a shared machine the same case reads 40 % apart from one
 * minute to the next (CPU steal, frequency), so a bound like "events cost at most 3 %" cannot be read off two
 * best-of-three figures taken minutes apart. Here both servers run side by side (each in its own process, pinned to
 * the same server CPU, loaded one at a time) and the load alternates between them in short slices, A B B A then
 * B A A B, so that a drift within a pair cancels out; the verdict is the median ratio over the pairs. An A/A check
 * (one case against a second process of itself, Node 26, 8 pairs) read 0.971× and 0.988×: about 3 % is this
 * method's resolution on a shared 2-core machine.
 */
import { startCaseServer, type BenchCase, type BenchSuite, type LoadGenerator, type LoadSettings, type Placement } from './harness';

/** The outcome of one interleaved comparison of `b` against `a`. */
export interface PairedFigures {
  /** Median over the pairs of b's req/s ÷ a's req/s. */
  ratio: number;
  low: number;
  high: number;
  pairs: number;
  sliceSeconds: number;
  /** Non-2xx answers and errors over every slice of both cases. */
  failures: number;
}

/** How many ABBA pairs and how long each slice: eight pairs of 1 s slices is about 40 s per comparison. */
export const PAIRED_PLAN = { pairs: 8, sliceSeconds: 1 };

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Measures `b` against `a` in interleaved slices after warming both up, and stops both servers whatever happens.
 *
 * @example
 * const figures = await measurePaired(suite, offCase, onCase, settings, placement, generator);
 * console.log(`${figures.ratio.toFixed(3)}× (${figures.low.toFixed(3)}–${figures.high.toFixed(3)})`);
 */
export async function measurePaired(
  suite: BenchSuite,
  a: BenchCase,
  b: BenchCase,
  settings: LoadSettings,
  placement: Placement,
  generator: LoadGenerator,
  plan = PAIRED_PLAN,
): Promise<PairedFigures> {
  const first = await startCaseServer(suite.name, a.name, suite.fixtures, placement);
  const second = await startCaseServer(suite.name, b.name, suite.fixtures, placement).catch(async (error: unknown) => {
    await first.stop();
    throw error;
  });
  try {
    const sides = [
      { url: first.url, requests: await a.requests(first.url, suite.fixtures) },
      { url: second.url, requests: await b.requests(second.url, suite.fixtures) },
    ];
    let failures = 0;
    const rate = async (side: (typeof sides)[number], seconds: number): Promise<number> => {
      const figures = await generator.run(side.url, side.requests, settings, seconds);
      failures += figures.failures;
      return figures.total / figures.durationSeconds;
    };
    for (const side of sides) await rate(side, Math.max(settings.warmupSeconds, plan.sliceSeconds));
    failures = 0;
    const ratios: number[] = [];
    for (let pair = 0; pair < plan.pairs; pair += 1) {
      // A B B A, then B A A B: whichever case runs right after a switch (colder caches) changes from pair to pair.
      const order = pair % 2 === 0 ? [0, 1, 1, 0] : [1, 0, 0, 1];
      const sums = [0, 0];
      for (const index of order) sums[index]! += await rate(sides[index]!, plan.sliceSeconds);
      ratios.push(sums[1]! / sums[0]!);
    }
    return {
      ratio: median(ratios),
      low: Math.min(...ratios),
      high: Math.max(...ratios),
      pairs: plan.pairs,
      sliceSeconds: plan.sliceSeconds,
      failures,
    };
  } finally {
    await Promise.all([first.stop(), second.stop()]);
  }
}
