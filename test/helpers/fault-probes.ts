import { runInNewContext } from 'node:vm';

/**
 * Records unhandled promise rejections while installed, so a fault test can assert there were none. Jest would
 * otherwise only print them, or crash a later test.
 *
 * @example
 * const rejections = recordUnhandledRejections();
 * // … faults …
 * expect(rejections.seen).toEqual([]);
 * rejections.stop();
 */
export function recordUnhandledRejections(): { seen: unknown[]; stop(): void } {
  const seen: unknown[] = [];
  const listener = (reason: unknown): void => {
    seen.push(reason);
  };
  process.on('unhandledRejection', listener);
  return { seen, stop: () => process.off('unhandledRejection', listener) };
}

let collect: (() => void) | undefined;

/**
 * The heap in use right after a full garbage collection, in bytes. Needs a process started with `--expose-gc`
 * (the test scripts put it in NODE_OPTIONS): turning it on at run time would change a V8 flag under a Jest worker
 * that goes on to run other files, which Node documents as unpredictable.
 *
 * @example
 * const before = heapAfterGc();
 */
export function heapAfterGc(): number {
  if (!collect) {
    // A new context gets `gc` when the flag is on; Jest's test context does not copy it from the worker's.
    if (runInNewContext('typeof gc') !== 'function') {
      throw new Error(
        "heapAfterGc: start the tests with --expose-gc (npm run test:jest sets NODE_OPTIONS='--experimental-vm-modules --expose-gc')",
      );
    }
    collect = runInNewContext('gc') as () => void;
  }
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

/**
 * Polls `check` until it returns true, failing after `timeoutMs`. For waiting on an observable state (a 503 seen,
 * a failover done) instead of sleeping a guessed time.
 *
 * @example
 * await until(() => statuses.includes(503), 5000, 'a 503 during the outage');
 */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** One request of a {@link startSteadyLoad} run. */
export interface LoadObservation {
  /** Epoch ms when the request was sent. */
  at: number;
  status: number;
  durationMs: number;
  /** The user the cookie belongs to. */
  expected: string;
  /** The user a 200 named. */
  answered?: string;
  /** The problem `code` of an error answer. */
  code?: string;
  retryAfter?: string;
  contentType?: string;
  /** A socket error or client-side timeout instead of an answer. */
  error?: string;
}

/**
 * A steady request load: `workers` loops, each sending the next request as soon as the previous one answered,
 * recording status, duration, problem code and Retry-After of every answer.
 *
 * @example
 * const load = startSteadyLoad((cookie) => apps.get('shop', '/me', cookie), users);
 * const observations = await load.stop();
 */
export function startSteadyLoad(
  send: (cookie: string, turn: number) => Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>,
  users: ReadonlyArray<{ id: string; cookie: string }>,
  workers = 4,
): { observations: LoadObservation[]; stop(): Promise<LoadObservation[]> } {
  const observations: LoadObservation[] = [];
  let running = true;
  const loops = Array.from({ length: workers }, async (_, worker) => {
    let turn = worker;
    while (running) {
      const user = users[turn % users.length]!;
      turn += workers;
      const at = Date.now();
      try {
        const res = await send(user.cookie, turn);
        const observation: LoadObservation = { at, status: res.status, durationMs: Date.now() - at, expected: user.id };
        const contentType = res.headers['content-type'];
        if (typeof contentType === 'string') observation.contentType = contentType;
        const retryAfter = res.headers['retry-after'];
        if (typeof retryAfter === 'string') observation.retryAfter = retryAfter;
        try {
          const body = JSON.parse(res.body) as { id?: string; code?: string };
          if (res.status === 200) observation.answered = body.id;
          else if (body.code !== undefined) observation.code = body.code;
        } catch {
          // Not JSON: left for the assertions on status and content type.
        }
        observations.push(observation);
      } catch (error) {
        observations.push({ at, status: 0, durationMs: Date.now() - at, expected: user.id, error: (error as Error).message });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  });
  return {
    observations,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return observations;
    },
  };
}

/**
 * The observations that break fail-closed: anything but a 200 naming the right user or a 503 problem+json with
 * Retry-After (an outage must never read as "logged out" or crash with a 500).
 *
 * @example
 * expect(failClosedViolations(load.observations)).toEqual([]);
 */
export function failClosedViolations(observations: readonly LoadObservation[]): LoadObservation[] {
  return observations.filter((o) => {
    if (o.status === 200) return o.answered !== o.expected;
    if (o.status === 503) return o.retryAfter === undefined || !o.contentType?.startsWith('application/problem+json');
    return true;
  });
}
