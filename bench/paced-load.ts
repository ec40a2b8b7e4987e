import { Agent, request as httpRequest } from 'node:http';
import { proofSigner } from './dpop-signer';
import type { AutocannonRequest, LoadFigures } from './harness';

/**
 * An open-loop load: requests start on a fixed schedule (`ratePerSecond`, evenly spaced) whatever the answers'
 * speed, cycling through `requests`, for `durationSeconds`. Each latency is measured from the request's scheduled
 * start, so time spent waiting for a free socket or a busy server counts, as a user would feel it. autocannon's own
 * rate limit sends each connection's quota at the start of every second, which measures bursts instead.
 *
 * @example
 * const figures = await pacedLoad('http://127.0.0.1:3000', requests, 2000, 2);
 */
export async function pacedLoad(
  base: string,
  requests: AutocannonRequest[],
  ratePerSecond: number,
  durationSeconds: number,
): Promise<LoadFigures> {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const latencies: number[] = [];
  let failures = 0;
  const interval = 1000 / ratePerSecond;
  const started = performance.now();
  const end = started + durationSeconds * 1000;
  const running: Promise<void>[] = [];
  // A DPoP proof is single-use: such a request gets a new one each time it is sent.
  const signers = requests.map((spec) => (spec.dpop ? proofSigner(spec.dpop) : undefined));
  const fire = (scheduled: number, spec: AutocannonRequest, nextProof: (() => string) | undefined) =>
    new Promise<void>((resolve) => {
      const headers = nextProof ? { ...spec.headers, dpop: nextProof() } : (spec.headers ?? {});
      const req = httpRequest(
        { host: url.hostname, port: url.port, method: spec.method ?? 'GET', path: spec.path ?? '/', headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - scheduled);
            if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) failures += 1;
            resolve();
          });
        },
      );
      req.on('error', () => {
        failures += 1;
        resolve();
      });
      req.end(spec.body);
    });
  let sent = 0;
  while (started + sent * interval < end) {
    const scheduled = started + sent * interval;
    const wait = scheduled - performance.now();
    // Always yield to the event loop, even when the next start is due within a millisecond: at 1,000 requests/s and
    // more a loop that does not yield starves the answers it is timing. Timers tick in whole milliseconds, which
    // would add up to a millisecond to every latency, so a start due sooner is awaited with setImmediate: the load
    // generator has a core of its own.
    await new Promise((resolve) => (wait > 1 ? setTimeout(resolve, wait - 1) : setImmediate(resolve)));
    // Catch up on every request due by now (timers are coarser than the interval at high rates).
    while (started + sent * interval <= performance.now() && started + sent * interval < end) {
      running.push(fire(started + sent * interval, requests[sent % requests.length]!, signers[sent % requests.length]));
      sent += 1;
    }
  }
  await Promise.all(running);
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
  return {
    total: sorted.length,
    durationSeconds: (performance.now() - started) / 1000,
    p50Ms: Math.round(at(50) * 100) / 100,
    p99Ms: Math.round(at(99) * 100) / 100,
    failures,
    cpuMicros: 0,
  };
}
