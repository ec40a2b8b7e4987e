import { randomBytes, type KeyObject } from 'node:crypto';
import type { KeyValueStore } from '../../store/port';
import { debugChannel } from '../../util/debug';
import { OptionsError } from '../../util/options';
import { clientNetwork } from './client-network';
import { deviceTokenKey, issueDeviceToken, readDeviceToken, verifyDeviceToken, type DeviceToken } from './device-token';
import {
  resolveThrottleOptions,
  type LoginThrottleOptions,
  type ResolvedThrottleOptions,
  type ThrottleLimit,
} from './login-throttle-options';
import { normalizeUsername } from '../user-directory';
import { sha256 } from '../../util/digest';

/** What the throttle needs to know about one password login. */
export interface LoginAttemptFacts {
  /** The username as typed. */
  username: string;
  /** The client address (`req.ip`, with `trust proxy` set so it is the client and not your proxy). */
  address: string;
  /** The device tokens the browser presented (the portal's device cookie). */
  deviceTokens?: readonly string[];
}

/** Which limit refused a login. */
export type ThrottleScope = 'network' | 'account-and-network' | 'account';

/** An attempt whose password may be checked; `trusted` when a device token of this user vouched for the browser. */
export interface AllowedLogin {
  readonly allowed: true;
  readonly trusted: boolean;
}

/** An attempt refused without checking the password. */
export interface RefusedLogin {
  readonly allowed: false;
  readonly retryAfterSeconds: number;
  readonly scope: ThrottleScope;
}

/** The answer of {@link LoginThrottle.attempt}. */
export type ThrottleDecision = AllowedLogin | RefusedLogin;

/** The device tokens a browser should hold after signing in, and how long the cookie holding them should last. */
export interface IssuedDeviceTokens {
  /** A fresh token for the user who signed in, then unexpired tokens of the browser's other users. */
  tokens: string[];
  maxAgeSeconds: number;
}

/** The counters one allowed attempt incremented, so a success can take its own attempt back. */
interface CountedWindow {
  successesKey: string;
  windowSeconds: number;
}

interface AttemptState {
  username: string;
  presented: readonly string[];
  counted: readonly CountedWindow[];
  device: DeviceToken | undefined;
}

/** At most this many device tokens (users of one browser) are read from, and kept in, one cookie. */
export const MAX_DEVICE_TOKENS = 4;

const debug = debugChannel('portal');
const attempts = new WeakMap<AllowedLogin, AttemptState>();

/**
 * Throttling of password guessing that does not lock users out (OWASP "Slow Down Online Guessing Attacks with Device
 * Cookies"), counted in the kit store so every portal instance shares it. A browser that signed in as the user
 * before presents a device token and is limited only by its own failures (`perDevice`; past that, the token is
 * revoked and the browser is a stranger again). Every other client is limited per network (`perNetwork`), per
 * account and network (`perAccountAndNetwork`) and per account from everywhere (`perAccount`, the slow limit that
 * bounds a distributed attack). IPv6 clients count per /64 (`ipv6PrefixLength`).
 *
 * Counters are fixed windows named by the window's number, so an injected `clock` moves them. Every attempt is
 * counted with one atomic increment *before* the password is checked, so parallel guesses cannot slip past a limit;
 * a success takes its own attempt back, so counters hold failures and attempts in flight. Unknown usernames are
 * counted like known ones: a refusal never tells whether an account exists.
 *
 * @example
 * const throttle = new LoginThrottle(store, { deviceTokenSecret: process.env.DEVICE_SECRET });
 * const decision = await throttle.attempt({ username, address: req.ip ?? '', deviceTokens });
 * if (decision.allowed && (await users.verifyPassword(username, password))) issued = await throttle.recordSuccess(decision);
 */
export class LoginThrottle {
  private readonly options: Readonly<ResolvedThrottleOptions>;
  private storedKey: Promise<KeyObject> | undefined;

  constructor(
    private readonly store: KeyValueStore,
    options: LoginThrottleOptions = {},
  ) {
    if (!store || typeof store.increment !== 'function') {
      throw new OptionsError('LoginThrottle: pass the kit store (RedisStore or MemoryStore) as the first argument');
    }
    this.options = Object.freeze(resolveThrottleOptions('LoginThrottle', options));
  }

  /**
   * Counts one login attempt and says whether its password may be checked. Call it before checking the password.
   *
   * @example
   * const decision = await throttle.attempt({ username, address: req.ip ?? '', deviceTokens: readDeviceCookie(req) });
   * if (!decision.allowed) res.set('Retry-After', String(decision.retryAfterSeconds)).status(429);
   */
  async attempt(facts: LoginAttemptFacts): Promise<ThrottleDecision> {
    const username = String(facts.username);
    const now = this.options.clock() / 1000;
    const presented = (facts.deviceTokens ?? []).slice(0, MAX_DEVICE_TOKENS);
    const device = presented.length > 0 ? await this.knownDevice(username, presented, now) : undefined;
    if (device !== undefined) {
      const limit = this.options.perDevice;
      const count = await this.store.increment(`${this.window(`device:${device.nonce}`, limit, now).key}:a`, limit.windowSeconds);
      if (count <= limit.failures) return this.allow({ username, presented, counted: [], device }, true);
      await this.revoke(device, now);
      debug('revoked a device token after %d failed attempts within %d s; the browser counts as new', limit.failures, limit.windowSeconds);
    }
    const account = sha256(normalizeUsername(username), 'base64url');
    const network = clientNetwork(String(facts.address), this.options.ipv6PrefixLength);
    const counters: [ThrottleScope, ThrottleLimit, string][] = [
      ['network', this.options.perNetwork, `network:${network}`],
      ['account-and-network', this.options.perAccountAndNetwork, `account-network:${account}:${network}`],
      ['account', this.options.perAccount, `account:${account}`],
    ];
    const counted: CountedWindow[] = [];
    for (const [scope, limit, name] of counters) {
      const { key, endsAt } = this.window(name, limit, now);
      const [tried, succeeded] = await Promise.all([this.store.increment(`${key}:a`, limit.windowSeconds), this.store.get(`${key}:s`)]);
      if (tried - Number(succeeded ?? 0) > limit.failures) {
        debug(
          'refused a login from %s: the %s limit of %d failures per %d s is reached',
          network,
          scope,
          limit.failures,
          limit.windowSeconds,
        );
        return { allowed: false, scope, retryAfterSeconds: Math.max(1, Math.ceil(endsAt - now)) };
      }
      counted.push({ successesKey: `${key}:s`, windowSeconds: limit.windowSeconds });
    }
    return this.allow({ username, presented, counted, device: undefined }, false);
  }

  /**
   * After the password was right: takes the attempt back from the counters, spends the device token it came with,
   * and returns the device tokens the browser should now hold (a fresh one for this user first, then unexpired
   * tokens of the browser's other users).
   *
   * @example
   * const issued = await throttle.recordSuccess(decision);
   * res.cookie('device', issued.tokens.join('~'), { maxAge: issued.maxAgeSeconds * 1000, httpOnly: true, secure: true });
   */
  async recordSuccess(decision: AllowedLogin): Promise<IssuedDeviceTokens> {
    const state = attempts.get(decision);
    if (state === undefined) throw new OptionsError('LoginThrottle.recordSuccess: pass the allowed decision attempt() returned, once');
    attempts.delete(decision);
    const now = this.options.clock() / 1000;
    await Promise.all(state.counted.map(({ successesKey, windowSeconds }) => this.store.increment(successesKey, windowSeconds)));
    if (state.device !== undefined) await this.revoke(state.device, now);
    const key = await this.key();
    const others = state.presented.filter((text) => {
      const token = readDeviceToken(text);
      return token !== undefined && token.expiresAt > now && 'refusal' in verifyDeviceToken(key, text, state.username, now);
    });
    const lifetime = this.options.deviceTokenLifetimeSeconds;
    const fresh = issueDeviceToken(key, state.username, now, lifetime);
    return { tokens: [fresh, ...others.slice(0, MAX_DEVICE_TOKENS - 1)], maxAgeSeconds: lifetime };
  }

  private allow(state: AttemptState, trusted: boolean): AllowedLogin {
    const decision: AllowedLogin = Object.freeze({ allowed: true, trusted });
    attempts.set(decision, state);
    return decision;
  }

  private window(name: string, limit: ThrottleLimit, now: number): { key: string; endsAt: number } {
    const index = Math.floor(now / limit.windowSeconds);
    return { key: `${this.options.namespace}:${name}:${index}`, endsAt: (index + 1) * limit.windowSeconds };
  }

  /** The device token of this user among those presented, unless it is revoked. */
  private async knownDevice(username: string, presented: readonly string[], now: number): Promise<DeviceToken | undefined> {
    const key = await this.key();
    const refusals: string[] = [];
    for (const text of presented) {
      const checked = verifyDeviceToken(key, text, username, now);
      if ('refusal' in checked) {
        refusals.push(checked.refusal);
        continue;
      }
      if ((await this.store.get(this.revokedKey(checked.token))) === null) return checked.token;
      refusals.push('revoked');
    }
    debug('no device token of this account among %d presented (%s); the browser counts as new', presented.length, refusals.join(', '));
    return undefined;
  }

  private revokedKey(token: DeviceToken): string {
    return `${this.options.namespace}:device-revoked:${token.nonce}`;
  }

  private async revoke(token: DeviceToken, now: number): Promise<void> {
    await this.store.set(this.revokedKey(token), '1', Math.max(1, Math.ceil(token.expiresAt - now)));
  }

  /** The HMAC key: from the options, or one random key kept in the store and shared by every instance. */
  private key(): Promise<KeyObject> {
    if (this.options.deviceTokenKey !== undefined) return Promise.resolve(this.options.deviceTokenKey);
    this.storedKey ??= this.loadStoredKey().catch((error: unknown) => {
      this.storedKey = undefined;
      throw error;
    });
    return this.storedKey;
  }

  private async loadStoredKey(): Promise<KeyObject> {
    const name = `${this.options.namespace}:device-token-key`;
    await this.store.setIfAbsent(name, randomBytes(32).toString('base64url'));
    const stored = await this.store.get(name);
    if (stored === null) throw new Error('LoginThrottle: the device-token key is missing from the store');
    return deviceTokenKey(Buffer.from(stored, 'base64url'));
  }
}
