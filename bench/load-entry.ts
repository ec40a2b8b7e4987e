/**
 * The load generator's process: started once per run by bench/harness.ts (pinned to its own CPU when `taskset`
 * exists), it runs autocannon on its main thread for each `run` message and answers with the figures and the CPU
 * time it spent. It does nothing else, so the server under test never shares a CPU or an event loop with it.
 */
import { createRequire } from 'node:module';
import { proofSigner } from './dpop-signer';
import type { AutocannonRequest, LoadFigures, LoadMessage, Reply } from './harness';
import { pacedLoad } from './paced-load';
import { runQrClient } from './qr-login';

/** The subset of autocannon's programmatic API used here (the package ships no types). */
interface AutocannonOptions {
  url: string;
  connections: number;
  pipelining: number;
  duration: number;
  requests?: CannonRequest[];
}
/** A request as autocannon takes it: `setupRequest` runs before each send, to sign a new DPoP proof. */
type CannonRequest = Omit<AutocannonRequest, 'dpop'> & { setupRequest?: (request: CannonRequest) => CannonRequest };
interface AutocannonResult {
  requests: { total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  duration: number;
}
type Autocannon = (options: AutocannonOptions, callback: (error: Error | null, result: AutocannonResult) => void) => unknown;

const autocannon = createRequire(__filename)('autocannon') as Autocannon;

function cannon(options: AutocannonOptions): Promise<AutocannonResult> {
  return new Promise((resolve, reject) => {
    autocannon(options, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

/** The rotation as autocannon takes it: a request with a DPoP spec gets a fresh proof at every send. */
function cannonRequests(requests: AutocannonRequest[]): CannonRequest[] {
  return requests.map(({ dpop, ...request }) => {
    if (dpop === undefined) return request;
    const nextProof = proofSigner(dpop);
    return { ...request, setupRequest: (current) => ({ ...current, headers: { ...current.headers, dpop: nextProof() } }) };
  });
}

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

async function handle(message: Extract<LoadMessage, { type: 'run' }>): Promise<Reply> {
  const { settings } = message;
  const before = cpuMicros();
  if (message.overallRate) {
    const paced = await pacedLoad(message.url, message.requests, message.overallRate, message.durationSeconds);
    return { id: message.id, figures: { ...paced, cpuMicros: cpuMicros() - before } };
  }
  const result = await cannon({
    url: message.url,
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration: message.durationSeconds,
    requests: cannonRequests(message.requests),
  });
  const figures: LoadFigures = {
    total: result.requests.total,
    durationSeconds: result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
    cpuMicros: cpuMicros() - before,
  };
  return { id: message.id, figures };
}

process.on('message', (message: LoadMessage) => {
  if (message.type === 'close') {
    process.send?.({ id: message.id } satisfies Reply, () => process.disconnect());
    return;
  }
  if (message.type === 'qr') {
    const before = cpuMicros();
    runQrClient(message.url, message.fixtures, message.plan).then(
      (figures) => process.send?.({ id: message.id, qr: { ...figures, cpuMicros: cpuMicros() - before } } satisfies Reply),
      (error: unknown) => process.send?.({ id: message.id, error: (error as Error).message } satisfies Reply),
    );
    return;
  }
  handle(message).then(
    (reply) => process.send?.(reply),
    (error: unknown) => process.send?.({ id: message.id, error: (error as Error).message } satisfies Reply),
  );
});
// The runner went away: nothing more to do.
process.on('disconnect', () => process.exit(0));
