/** What a sample measures: time on the wall clock, or CPU time of this process (every thread, scrypt's included). */
export type TimingClock = 'wall' | 'cpu';

function clockNow(clock: TimingClock): number {
  if (clock === 'wall') return Number(process.hrtime.bigint()) / 1e6;
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * Times each case `rounds` times and answers the median milliseconds of each. The cases are interleaved (one of each
 * per round, the order rotating), so a busy spell of a shared machine slows them alike, and one untimed round comes
 * first, so caches and lazily built state (a decoy hash) are not counted. Compare medians with a tolerance, never
 * single timings. The `cpu` clock counts the work done, not the time spent waiting for a core: on a loaded machine
 * it tells two amounts of work apart where the wall clock drowns them in waiting.
 *
 * @example
 * const medians = await interleavedMedians({ known: () => check('alice'), unknown: () => check('nobody') }, 15);
 */
export async function interleavedMedians<Name extends string>(
  cases: Record<Name, () => Promise<unknown>>,
  rounds: number,
  clock: TimingClock = 'wall',
): Promise<Record<Name, number>> {
  const names = Object.keys(cases) as Name[];
  const samples = new Map<Name, number[]>(names.map((name) => [name, []]));
  for (let round = -1; round < rounds; round += 1) {
    const start = Math.max(round, 0) % names.length;
    for (const name of [...names.slice(start), ...names.slice(0, start)]) {
      const began = clockNow(clock);
      await cases[name]();
      if (round >= 0) samples.get(name)!.push(clockNow(clock) - began);
    }
  }
  return Object.fromEntries(names.map((name) => [name, median(samples.get(name)!)])) as Record<Name, number>;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/**
 * The ratio of each median to the `reference` one, rounded to two decimals, with whether it lies within `tolerance`
 * (a factor either way): `{ unknown: { ratio: 1.04, within: true } }`, so a failing test prints the figures.
 *
 * @example
 * expect(ratiosTo(medians, 'known', 1.6)).toEqual({ unknown: expect.objectContaining({ within: true }) });
 */
export function ratiosTo<Name extends string>(
  medians: Record<Name, number>,
  reference: Name,
  tolerance: number,
): Record<string, { ratio: number; within: boolean }> {
  const base = medians[reference];
  return Object.fromEntries(
    (Object.keys(medians) as Name[])
      .filter((name) => name !== reference)
      .map((name) => {
        const ratio = medians[name] / base;
        return [name, { ratio: Math.round(ratio * 100) / 100, within: ratio < tolerance && ratio > 1 / tolerance }];
      }),
  );
}
