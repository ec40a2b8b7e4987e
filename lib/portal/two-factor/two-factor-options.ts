import type { Request, Response } from 'express';
import type { CredentialStore } from '../../credentials/credential-store';
import { RecoveryCodes } from '../../credentials/recovery-codes';
import { createSecretSealer, type SecretSealer } from '../../credentials/secret-sealer';
import { TotpAuthenticator } from '../../credentials/totp-authenticator';
import type { KeyValueStore } from '../../store/port';
import { checkOptions, OptionsError, type OptionSchema } from '../../util/options';
import { FACTOR_DEVICE_COOKIE, readDeviceCookie, writeDeviceCookie } from '../throttle/device-cookie';
import { LoginThrottle, type AllowedLogin, type ThrottleDecision } from '../throttle/login-throttle';
import type { LoginThrottleOptions } from '../throttle/login-throttle-options';
import { recoveryCodeFactor, totpFactor, type SecondFactor } from './second-factor';
import { sha256 } from '../../util/digest';

/** Options of the portal's second factors (`loginPortal({ twoFactor })`). */
export interface PortalTwoFactorOptions {
  /** Where TOTP enrolments, recovery codes (and passkeys) live: `KeyValueCredentialStore` or `PostgresCredentialStore`. */
  credentials: CredentialStore;
  /** 32 random bytes sealing TOTP secrets at rest (and keying the recovery-code hashes). */
  sealingKey: Buffer | string;
  /** Former sealing keys, still opening what they sealed (rotation). */
  previousSealingKeys?: ReadonlyArray<Buffer | string>;
  /** The name authenticator apps show next to the account, e.g. `Example Corp`. */
  issuer: string;
  /** More second-factor methods shown on the step-up page after the kit's own (e.g. passkeys). */
  methods?: readonly SecondFactor[];
  /** Enrolling or changing a factor needs a sign-in at most this old, in seconds. Default 300. */
  recentLoginSeconds?: number;
}

/** The second factors, built once from the options. */
export interface TwoFactorSettings {
  credentials: CredentialStore;
  sealer: SecretSealer;
  totp: TotpAuthenticator;
  recovery: RecoveryCodes;
  /** Every method of the step-up page, the kit's first. */
  methods: readonly SecondFactor[];
  /** Counts factor attempts like password attempts, in its own namespace. */
  throttle: LoginThrottle;
  /**
   * Counts one factor attempt of the signed-in user from this request (see {@link LoginThrottle.attempt}); a browser
   * that completed a second factor of this user before presents its factor device token and spends its own budget.
   */
  attempt(req: Request, userId: string): Promise<ThrottleDecision>;
  /** After a factor was proven: takes the attempt back and gives the browser its factor device token. */
  recordSuccess(req: Request, res: Response, decision: AllowedLogin): Promise<void>;
  recentLoginSeconds: number;
}

const SCHEMA: OptionSchema = {
  credentials: {
    type: 'object',
    required: true,
    expected: 'a CredentialStore, e.g. new KeyValueCredentialStore(store)',
    check: (value: Partial<CredentialStore>) =>
      typeof value.advanceTotpStep === 'function' ? undefined : 'must be a CredentialStore, e.g. new KeyValueCredentialStore(store)',
  },
  sealingKey: { type: ['buffer', 'string'], required: true, expected: '32 random bytes, e.g. crypto.randomBytes(32)' },
  previousSealingKeys: { type: 'array' },
  issuer: { type: 'string', required: true, expected: 'the name authenticator apps show, e.g. "Example Corp"' },
  methods: { type: 'array', expected: 'an array of SecondFactor methods' },
  recentLoginSeconds: {
    type: 'integer',
    expected: 'a whole number of seconds from 30 to 3600',
    check: (value: number) => (value < 30 || value > 3600 ? `must be from 30 to 3600, got ${value}` : undefined),
  },
};

/**
 * Checks the `twoFactor` options of `loginPortal` and builds the sealer, the TOTP authenticator, the recovery codes
 * and the factor throttle once.
 *
 * @example
 * const twoFactor = resolveTwoFactor({ credentials, sealingKey, issuer: 'Example' }, store, {});
 */
export function resolveTwoFactor(options: PortalTwoFactorOptions, store: KeyValueStore, throttle: LoginThrottleOptions): TwoFactorSettings {
  checkOptions('loginPortal: twoFactor', options, SCHEMA);
  const sealer = createSecretSealer({
    key: options.sealingKey,
    ...(options.previousSealingKeys === undefined ? {} : { previousKeys: options.previousSealingKeys }),
  });
  const totp = new TotpAuthenticator({ credentials: options.credentials, sealer, issuer: options.issuer });
  const recovery = new RecoveryCodes(options.credentials, sealer);
  const extra = options.methods ?? [];
  const ids = new Set(['totp', 'recovery']);
  extra.forEach((method, index) => {
    if (method === null || typeof method !== 'object' || typeof method.verify !== 'function' || typeof method.id !== 'string') {
      throw new OptionsError(`loginPortal: twoFactor.methods[${index}] must be a SecondFactor { id, label, amr, level, ... }`);
    }
    if (ids.has(method.id)) throw new OptionsError(`loginPortal: twoFactor.methods[${index}] repeats the method id "${method.id}"`);
    ids.add(method.id);
  });
  // Same policy as passwords, own counters: a code guessed wrong never spends the password budget, nor the reverse.
  const factorThrottle = new LoginThrottle(store, { ...throttle, namespace: 'second-factor-throttle' });
  return {
    credentials: options.credentials,
    sealer,
    totp,
    recovery,
    methods: [totpFactor(totp), recoveryCodeFactor(recovery, totp), ...extra],
    throttle: factorThrottle,
    // Counted under a digest of the user id: the throttle folds case in usernames, and user ids are case-sensitive.
    attempt: (req, userId) =>
      factorThrottle.attempt({
        username: sha256(userId, 'hex'),
        address: req.ip ?? req.socket.remoteAddress ?? '',
        deviceTokens: readDeviceCookie(req, FACTOR_DEVICE_COOKIE),
      }),
    // Someone holding the password cannot lock the user out of the second factor by failing it from everywhere.
    recordSuccess: async (req, res, decision) => {
      writeDeviceCookie(req, res, await factorThrottle.recordSuccess(decision), FACTOR_DEVICE_COOKIE);
    },
    recentLoginSeconds: options.recentLoginSeconds ?? 300,
  };
}
