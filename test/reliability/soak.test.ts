import { runSoak } from '../../bench/soak-runner';

// The CI-sized soak: 20 s instead of bench/soak.ts's 10 minutes. Long enough for sessions (5 s idle timeout) to
// expire several times over, so a leak per login or per expiry shows; gradual growth needs the long run.
describe('a 20-second soak of logins and reads across two apps', () => {
  it('keeps heap and Redis memory level, answers every read for the right user and never fails with a 5xx', async () => {
    const report = await runSoak({
      durationMs: 20_000,
      sampleIntervalMs: 2_000,
      concurrency: 4,
      cycleMs: 250,
      idleTimeoutSeconds: 5,
      maxHeapGrowthBytes: 16 * 1024 * 1024,
      maxRedisGrowthBytes: 2 * 1024 * 1024,
    });
    console.log(`soak (20 s): ${report.requests} reads, ${report.logins} logins\n${report.verdicts.join('\n')}`);
    expect(report.requests).toBeGreaterThan(0);
    expect(report.verdicts.filter((line) => line.startsWith('FAIL'))).toEqual([]);
  }, 40_000);
});
