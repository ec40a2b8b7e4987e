import type { KeyValueStore } from '../../store/port';
import { debugChannel } from '../../util/debug';
import type { ThrottleLimit } from '../throttle/login-throttle-options';

/** An attempt that may be verified; call `succeeded()` when it was, so it does not count as a failure. */
export interface AllowedPasskeyAttempt {
  readonly allowed: true;
  succeeded(): Promise<void>;
}

/** An attempt refused before anything was verified. */
export interface RefusedPasskeyAttempt {
  readonly allowed: false;
  readonly retryAfterSeconds: number;
}

const debug = debugChannel('portal');

/**
 * Throttling of failed passkey attempts, counted in the kit store so every portal instance shares it. Each attempt
 * is counted with one atomic increment per scope (a network, a user) *before* the assertion is verified, so parallel
 * attempts cannot slip past the limit; a success takes its own attempt back, so the counters hold failures and
 * attempts in flight. Windows are fixed and named by their number.
 *
 * @example
 * const throttle = new PasskeyThrottle(store, { failures: 10, windowSeconds: 900 });
 * const attempt = await throttle.attempt([`network:${clientNetwork(req.ip ?? '')}`]);
 * if (!attempt.allowed) throw new TooManyRequestsError(attempt.retryAfterSeconds);
 */
export class PasskeyThrottle {
  constructor(
    private readonly store: KeyValueStore,
    private readonly limit: ThrottleLimit,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Counts one attempt in each scope and says whether it may be verified.
   *
   * @example
   * const attempt = await throttle.attempt([`user:${userId}`]);
   */
  async attempt(scopes: readonly string[]): Promise<AllowedPasskeyAttempt | RefusedPasskeyAttempt> {
    const now = this.clock() / 1000;
    const index = Math.floor(now / this.limit.windowSeconds);
    const keys = scopes.map((scope) => `passkey-throttle:{${scope}}:${index}`);
    const counts = await Promise.all(
      keys.map(async (key) => {
        const [tried, succeeded] = await Promise.all([
          this.store.increment(`${key}:a`, this.limit.windowSeconds),
          this.store.get(`${key}:s`),
        ]);
        return tried - Number(succeeded ?? 0);
      }),
    );
    if (counts.some((failures) => failures > this.limit.failures)) {
      debug('refused a passkey attempt: %d failures per %d s reached', this.limit.failures, this.limit.windowSeconds);
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((index + 1) * this.limit.windowSeconds - now)) };
    }
    return {
      allowed: true,
      succeeded: async () => {
        await Promise.all(keys.map((key) => this.store.increment(`${key}:s`, this.limit.windowSeconds)));
      },
    };
  }
}
