import { KeyObject } from 'node:crypto';
import { checkOptions, within, type OptionSchema } from '../../util/options';
import { DEFAULT_IPV6_PREFIX_LENGTH } from './client-network';
import { deviceTokenKey } from './device-token';

/** One fixed-window limit: at most `failures` failed logins per `windowSeconds`. */
export interface ThrottleLimit {
  failures: number;
  windowSeconds: number;
}

/** Options of {@link LoginThrottle} (and `loginPortal({ throttle })`). */
export interface LoginThrottleOptions {
  /** Failures allowed to new browsers per account and client network. Default 5 per 15 minutes. */
  perAccountAndNetwork?: ThrottleLimit;
  /**
   * Failures allowed to new browsers per account from all networks together: the slower limit that bounds a
   * distributed guessing attack. Browsers that signed in as the user before are not counted. Default 10 per hour.
   */
  perAccount?: ThrottleLimit;
  /** Failures allowed to new browsers per client network across all accounts. Default 50 per 15 minutes. */
  perNetwork?: ThrottleLimit;
  /** Failures allowed per device token; one more and the token is revoked. Default 10 per hour. */
  perDevice?: ThrottleLimit;
  /** Bits of an IPv6 address that name one client network. Default 64. IPv4 clients count per address. */
  ipv6PrefixLength?: number;
  /** A secret of at least 32 characters the device-token key is derived from (HKDF-SHA-256). */
  deviceTokenSecret?: string;
  /**
   * The device-token HMAC key itself, at least 32 bytes. Without this or `deviceTokenSecret` a random key is made
   * once and kept in the store (without expiry), shared by every instance.
   */
  deviceTokenKey?: Buffer | KeyObject;
  /** How long a browser stays known after its last sign-in. Default 30 days. */
  deviceTokenLifetimeSeconds?: number;
  /** Key namespace inside the store. Default `login-throttle`. */
  namespace?: string;
  /** The time in epoch milliseconds. Default `Date.now`; tests pass their own clock instead of sleeping. */
  clock?: () => number;
}

/** The options of a throttle with every default applied. */
export interface ResolvedThrottleOptions {
  perAccountAndNetwork: ThrottleLimit;
  perAccount: ThrottleLimit;
  perNetwork: ThrottleLimit;
  perDevice: ThrottleLimit;
  ipv6PrefixLength: number;
  /** The HMAC key of device tokens, when the options gave one (else the throttle keeps one in the store). */
  deviceTokenKey: KeyObject | undefined;
  deviceTokenLifetimeSeconds: number;
  namespace: string;
  clock: () => number;
}

/** The limits a throttle uses unless told otherwise. */
export const DEFAULT_THROTTLE_LIMITS: Readonly<Record<'perAccountAndNetwork' | 'perAccount' | 'perNetwork' | 'perDevice', ThrottleLimit>> =
  Object.freeze({
    perAccountAndNetwork: Object.freeze({ failures: 5, windowSeconds: 15 * 60 }),
    perAccount: Object.freeze({ failures: 10, windowSeconds: 60 * 60 }),
    perNetwork: Object.freeze({ failures: 50, windowSeconds: 15 * 60 }),
    perDevice: Object.freeze({ failures: 10, windowSeconds: 60 * 60 }),
  });

/** How long a device token lasts unless told otherwise: 30 days. */
export const DEFAULT_DEVICE_TOKEN_LIFETIME_SECONDS = 30 * 24 * 60 * 60;

const DAY = 24 * 60 * 60;
const LIMIT: OptionSchema = {
  failures: { type: 'integer', required: true, check: within(1, 1_000_000) },
  windowSeconds: { type: 'number', required: true, expected: 'a number of seconds', check: within(1, 31 * DAY) },
};
const limit = (example: string) => ({ type: 'object', expected: `{ failures, windowSeconds }, e.g. ${example}` }) as const;

function keyProblem(key: Buffer | KeyObject): string | undefined {
  if (Buffer.isBuffer(key)) return key.length >= 32 ? undefined : `must be at least 32 bytes, got ${key.length}`;
  if (key instanceof KeyObject && key.type === 'secret' && (key.symmetricKeySize ?? 0) >= 32) return undefined;
  return 'must be a Buffer or secret KeyObject of at least 32 bytes';
}

const SCHEMA: OptionSchema = {
  perAccountAndNetwork: limit('{ failures: 5, windowSeconds: 900 }'),
  perAccount: limit('{ failures: 10, windowSeconds: 3600 }'),
  perNetwork: limit('{ failures: 50, windowSeconds: 900 }'),
  perDevice: limit('{ failures: 10, windowSeconds: 3600 }'),
  ipv6PrefixLength: { type: 'integer', expected: 'a prefix length from 8 to 128, e.g. 64', check: within(8, 128) },
  deviceTokenSecret: {
    type: 'string',
    check: (secret: string) =>
      secret.length >= 32 ? undefined : 'must be at least 32 characters; generate one with `openssl rand -base64 48`',
  },
  deviceTokenKey: { type: ['buffer', 'object'], check: keyProblem },
  deviceTokenLifetimeSeconds: { type: 'number', expected: 'a number of seconds', check: within(60, 400 * DAY) },
  namespace: {
    type: 'string',
    check: (namespace: string) => (/^[A-Za-z0-9:_-]+$/.test(namespace) ? undefined : `must match [A-Za-z0-9:_-]+, got "${namespace}"`),
  },
  clock: { type: 'function' },
};

/**
 * Checks throttle options by the kit's one options rule and applies the defaults. `where` names the caller in
 * messages (`LoginThrottle`, or `loginPortal throttle`). The caller's object is only read.
 *
 * @example
 * const resolved = resolveThrottleOptions('LoginThrottle', { perAccount: { failures: 10, windowSeconds: 3600 } });
 */
export function resolveThrottleOptions(where: string, options: LoginThrottleOptions): ResolvedThrottleOptions {
  // Checked as unknown: the assertion would otherwise narrow `options` and lose its declared types.
  checkOptions(where, options as unknown, SCHEMA, { exclusive: [['deviceTokenSecret', 'deviceTokenKey']] });
  const limits = { ...DEFAULT_THROTTLE_LIMITS };
  const secretOrKey = options.deviceTokenSecret ?? options.deviceTokenKey;
  for (const name of Object.keys(limits) as (keyof typeof limits)[]) {
    const given = options[name];
    if (given === undefined) continue;
    checkOptions(`${where}: ${name}`, given, LIMIT);
    limits[name] = { failures: given.failures, windowSeconds: given.windowSeconds };
  }
  return {
    ...limits,
    ipv6PrefixLength: options.ipv6PrefixLength ?? DEFAULT_IPV6_PREFIX_LENGTH,
    deviceTokenKey: secretOrKey === undefined ? undefined : deviceTokenKey(secretOrKey),
    deviceTokenLifetimeSeconds: options.deviceTokenLifetimeSeconds ?? DEFAULT_DEVICE_TOKEN_LIFETIME_SECONDS,
    namespace: options.namespace ?? 'login-throttle',
    clock: options.clock ?? Date.now,
  };
}
