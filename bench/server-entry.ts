/**
 * A case's server process: started by bench/harness.ts for one round of one case (pinned to the server CPU when
 * `taskset` exists). It receives the suite, the case name and the suite's fixtures, builds that case's app exactly as
 * the suite defines it, listens on 127.0.0.1:0 and answers with its port; then it reports its own CPU time when asked
 * and closes everything when told to.
 */
import { bearerCases } from './bearer';
import type { BenchCase, CaseApp, Reply, ServerMessage } from './harness';
import { listen } from './harness';
import { curveCases } from './curves';
import { dpopCases } from './dpop';
import { eventsCases } from './events';
import { qrCases } from './qr-login';
import { sessionCases } from './sessions';

const suites: Record<string, () => BenchCase[]> = {
  bearer: bearerCases,
  dpop: dpopCases as () => BenchCase[],
  sessions: sessionCases,
  events: eventsCases as () => BenchCase[],
  'qr-login': qrCases as () => BenchCase[],
  curves: curveCases as () => BenchCase[],
};

let running: { built: CaseApp; close(): Promise<void> } | undefined;

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

async function handle(message: ServerMessage): Promise<Reply> {
  switch (message.type) {
    case 'start': {
      const cases = suites[message.suite]?.();
      const benchCase = cases?.find((candidate) => candidate.name === message.caseName);
      if (!benchCase) throw new Error(`no case ${message.suite}/${message.caseName}`);
      const built = await benchCase.app(message.fixtures);
      const server = await listen(built.app);
      running = { built, close: server.close };
      return { id: message.id, port: Number(new URL(server.url).port) };
    }
    case 'cpu':
      return { id: message.id, cpuMicros: cpuMicros() };
    case 'close':
      if (running) {
        await running.close();
        await running.built.close?.();
        running = undefined;
      }
      return { id: message.id };
  }
}

process.on('message', (message: ServerMessage) => {
  handle(message).then(
    (reply) => process.send?.(reply, () => (message.type === 'close' ? process.disconnect() : undefined)),
    (error: unknown) => process.send?.({ id: message.id, error: (error as Error).stack ?? String(error) } satisfies Reply),
  );
});
// The runner went away (or let go after `close`): exit even if a client library still holds a socket.
process.on('disconnect', () => process.exit(0));
