import { createHash } from 'node:crypto';
import type { KeyValueStore } from '../store/port';

/** One fixed-window limit: at most `failures` failed logins per `windowSeconds`. */
export interface ThrottleLimit {
  failures: number;
  windowSeconds: number;
}

/** Options of {@link LoginThrottle}. */
export interface LoginThrottleOptions {
  /** Failed logins allowed per account (username) and window. Default 5 per 15 minutes. */
  perAccount?: ThrottleLimit;
  /** Failed logins allowed per client IP and window. Default 50 per 15 minutes. */
  perIp?: ThrottleLimit;
  /** Key namespace inside the store. Default `login-throttle`. */
  namespace?: string;
}

/** The answer of {@link LoginThrottle.check}. */
export type ThrottleDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number; scope: 'account' | 'ip' };

export const DEFAULT_ACCOUNT_LIMIT: Readonly<ThrottleLimit> = Object.freeze({ failures: 5, windowSeconds: 15 * 60 });
export const DEFAULT_IP_LIMIT: Readonly<ThrottleLimit> = Object.freeze({ failures: 50, windowSeconds: 15 * 60 });

function validateLimit(limit: unknown, name: string): ThrottleLimit {
  const l = limit as Partial<ThrottleLimit> | null;
  if (
    !l ||
    !Number.isInteger(l.failures) ||
    (l.failures as number) < 1 ||
    !Number.isInteger(l.windowSeconds) ||
    (l.windowSeconds as number) < 1
  ) {
    throw new TypeError(
      `LoginThrottle: ${name} must be { failures: positive integer, windowSeconds: positive integer }, e.g. { failures: 5, windowSeconds: 900 }`,
    );
  }
  return { failures: l.failures as number, windowSeconds: l.windowSeconds as number };
}

/**
 * Brute-force throttling of password logins, counted in the kit store so every portal instance shares it.
 *
 * - Per account: every attempt is counted *before* the password is checked (one atomic INCR), so parallel
 *   guesses cannot slip past the limit; a successful login clears the count. The limit therefore bounds failed
 *   attempts per window.
 * - Per IP: failed attempts are counted after the check (so a busy office behind one address is not locked out
 *   by its own successful logins).
 *
 * Once a limit is reached, further attempts are refused without checking the password until the window ends.
 * Unknown usernames are counted like known ones, so a refusal never tells whether an account exists.
 *
 * @example
 * const throttle = new LoginThrottle(store, { perAccount: { failures: 5, windowSeconds: 900 } });
 * const decision = await throttle.attempt('alice', req.ip);
 */
export class LoginThrottle {
  readonly perAccount: ThrottleLimit;
  readonly perIp: ThrottleLimit;
  private readonly namespace: string;

  constructor(
    private readonly store: KeyValueStore,
    options: LoginThrottleOptions = {},
  ) {
    if (!store || typeof store.increment !== 'function') {
      throw new TypeError('LoginThrottle: pass the kit store (RedisStore or MemoryStore) as the first argument');
    }
    if (options === null || typeof options !== 'object')
      throw new TypeError('LoginThrottle: options must be an object { perAccount, perIp }');
    this.perAccount = validateLimit(options.perAccount ?? DEFAULT_ACCOUNT_LIMIT, 'perAccount');
    this.perIp = validateLimit(options.perIp ?? DEFAULT_IP_LIMIT, 'perIp');
    this.namespace = options.namespace ?? 'login-throttle';
    if (typeof this.namespace !== 'string' || !/^[A-Za-z0-9:_-]+$/.test(this.namespace)) {
      throw new TypeError(`LoginThrottle: namespace must match [A-Za-z0-9:_-]+, got ${JSON.stringify(this.namespace)}`);
    }
  }

  // Usernames are hashed so the store never holds what people typed in the username field (often a password).
  private accountKey(username: string): string {
    const digest = createHash('sha256').update(username.normalize('NFKC').trim().toLowerCase()).digest('base64url');
    return `${this.namespace}:account:${digest}`;
  }

  private ipKey(ip: string): string {
    return `${this.namespace}:ip:${ip}`;
  }

  private async retryAfter(key: string, limit: ThrottleLimit): Promise<number> {
    const ttl = await this.store.ttlMillis(key);
    return ttl > 0 ? Math.ceil(ttl / 1000) : limit.windowSeconds;
  }

  /**
   * Counts an attempt for this username from this IP and says whether its password may be checked.
   *
   * @example
   * const decision = await throttle.attempt(username, req.ip);
   * if (!decision.allowed) res.set('Retry-After', String(decision.retryAfterSeconds)).status(429);
   */
  async attempt(username: string, ip: string): Promise<ThrottleDecision> {
    const accountKey = this.accountKey(username);
    const ipKey = this.ipKey(ip);
    const [accountAttempts, ipFailures] = await Promise.all([
      this.store.increment(accountKey, this.perAccount.windowSeconds),
      this.store.get(ipKey).then((value) => Number(value ?? '0')),
    ]);
    if (ipFailures >= this.perIp.failures) {
      return { allowed: false, retryAfterSeconds: await this.retryAfter(ipKey, this.perIp), scope: 'ip' };
    }
    if (accountAttempts > this.perAccount.failures) {
      return { allowed: false, retryAfterSeconds: await this.retryAfter(accountKey, this.perAccount), scope: 'account' };
    }
    return { allowed: true };
  }

  /**
   * Records that an allowed attempt failed (the account's count already holds it; this counts it for the IP).
   *
   * @example
   * if (!user) await throttle.recordFailure(req.ip);
   */
  async recordFailure(ip: string): Promise<void> {
    await this.store.increment(this.ipKey(ip), this.perIp.windowSeconds);
  }

  /**
   * Clears the account's count after a successful login (the IP's failures stay: one IP guessing many accounts
   * should not reset itself by logging into its own).
   *
   * @example
   * await throttle.recordSuccess(username);
   */
  async recordSuccess(username: string): Promise<void> {
    await this.store.delete(this.accountKey(username));
  }
}
