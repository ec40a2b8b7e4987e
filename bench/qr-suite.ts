import { formatQrLoginBench, runQrLoginBench } from './qr-login';

/**
 * The QR-login section of the report. Its figures come from the QR area's own `runQrLoginBench` (complete logins
 * through create, scan, confirm, redirect, code exchange and userinfo, on Redis), not from autocannon: a login is a
 * sequence of dependent requests, not one request repeated.
 *
 * @example
 * const markdown = await qrLoginSection({ logins: 300, concurrency: 16 });
 */
export async function qrLoginSection(options: {
  logins: number;
  concurrency: number;
  redisUrl: string;
}): Promise<{ text: string; markdown: string }> {
  const result = await runQrLoginBench(options);
  const text = formatQrLoginBench(result);
  const rows = result.steps.map((step) => `| ${step.step} | ${step.p50.toFixed(2)} | ${step.p99.toFixed(2)} | ${step.mean.toFixed(2)} |`);
  const markdown = [
    `${result.logins} complete QR logins, ${result.concurrency} in flight, in ${result.seconds.toFixed(1)} s: ` +
      `**${result.loginsPerSecond.toFixed(0)} logins/s**, ${result.failures} failures.`,
    '',
    '| step | p50 ms | p99 ms | mean ms |',
    '|---|---:|---:|---:|',
    ...rows,
  ].join('\n');
  return { text, markdown };
}
