import { Secret, TOTP } from 'otpauth';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import type { CredentialStore, StoredTotp } from './credential-store';
import { SealedSecretError, type SecretSealer } from './secret-sealer';

/** Options of {@link TotpAuthenticator}. */
export interface TotpAuthenticatorOptions {
  /** Where enrolments and the last accepted step live. */
  credentials: CredentialStore;
  /** Seals the secrets at rest (see `createSecretSealer`). */
  sealer: SecretSealer;
  /** The issuer an authenticator app shows next to the account, e.g. `Example Corp`. */
  issuer: string;
}

/** The outcome of checking a code. */
export type TotpCheck = 'accepted' | 'rejected' | 'not_enrolled';

const OPTIONS: OptionSchema = {
  credentials: { type: 'object', required: true, expected: 'a CredentialStore' },
  sealer: { type: 'object', required: true, expected: 'a SecretSealer from createSecretSealer({ key })' },
  issuer: { type: 'string', required: true, expected: 'the name authenticator apps show, e.g. "Example Corp"' },
};

const PERIOD_SECONDS = 30;
const DIGITS = 6;
// One step either side absorbs a phone clock a little off and a code typed as it rolled over (RFC 6238 §5.2).
const WINDOW = 1;
const CODE = /^[0-9]{6}$/;

const debug = debugChannel('credentials');

/**
 * TOTP (RFC 6238: SHA-1, 6 digits, 30 s, the parameters every authenticator app reads) over a
 * {@link CredentialStore}. A code is accepted within one step either side, and only once: its time step must move
 * the user's last accepted step forward (`advanceTotpStep`, atomic), so a replayed or an older code fails even
 * when two requests race. Secrets are sealed before they reach the store. An enrolment whose sealed secret no
 * longer opens (its sealing key lost, or dropped from the previous keys) counts as none: `isEnrolled` is false and
 * `verify` answers `not_enrolled`, so the user can set an app up again after signing in with a password, instead of
 * being asked for a code nobody can check. Throttling is the caller's (the portal's factor throttle).
 *
 * @example
 * const totp = new TotpAuthenticator({ credentials, sealer, issuer: 'Example Corp' });
 * const secret = totp.newSecret();
 * const uri = totp.uri(secret, 'alice'); // otpauth://totp/Example%20Corp:alice?...
 * if (await totp.enrol('local|alice', secret, '123456')) { ... }
 */
export class TotpAuthenticator {
  private readonly credentials: CredentialStore;
  private readonly sealer: SecretSealer;
  private readonly issuer: string;

  constructor(options: TotpAuthenticatorOptions) {
    checkOptions('TotpAuthenticator', options, OPTIONS);
    if (options.issuer.trim() === '' || options.issuer.includes(':')) {
      throw new OptionsError('TotpAuthenticator: issuer must be a non-empty name without ":", e.g. "Example Corp"');
    }
    this.credentials = options.credentials;
    this.sealer = options.sealer;
    this.issuer = options.issuer;
  }

  /** A new random secret (160 bits, base32), to show once during enrolment. */
  newSecret(): string {
    return new Secret({ size: 20 }).base32;
  }

  /** The `otpauth://` URI an authenticator app scans for this secret. */
  uri(secret: string, accountName: string): string {
    return this.totp(secret, accountName).toString();
  }

  /**
   * Saves the enrolment once the user proved their app has the secret by typing its current code; the code's step
   * is recorded so it cannot be used again to sign in. False (nothing saved) for a wrong code.
   */
  async enrol(userId: string, secret: string, code: string, nowMillis = Date.now()): Promise<boolean> {
    const step = this.matchingStep(secret, code, nowMillis);
    if (step === undefined || !(await this.credentials.advanceTotpStep(userId, step))) return false;
    await this.credentials.setTotp(userId, { sealedSecret: this.sealer.seal(userId, secret), createdAt: Math.floor(nowMillis / 1000) });
    return true;
  }

  /** Checks a code of the user's enrolled app: `accepted` at most once per time step. */
  async verify(userId: string, code: string, nowMillis = Date.now()): Promise<TotpCheck> {
    const stored = await this.credentials.getTotp(userId);
    const secret = this.openSecret(userId, stored);
    if (stored === undefined || secret === undefined) return 'not_enrolled';
    const step = this.matchingStep(secret, code, nowMillis);
    if (step === undefined) return 'rejected';
    // The step moves forward only once: a replay, or an older code after a newer one, is refused here.
    if (!(await this.credentials.advanceTotpStep(userId, step))) return 'rejected';
    if (this.sealer.needsResealing(stored.sealedSecret)) {
      await this.credentials.setTotp(userId, { ...stored, sealedSecret: this.sealer.seal(userId, secret) });
    }
    return 'accepted';
  }

  /**
   * Removes the user's authenticator app (its sealed secret and last accepted time step); true when one was
   * enrolled. An app set up again gets a new secret, so no code of the removed one works afterwards.
   */
  remove(userId: string): Promise<boolean> {
    return this.credentials.removeTotp(userId);
  }

  /** Whether the user has an enrolled authenticator app whose secret opens with the configured keys. */
  async isEnrolled(userId: string): Promise<boolean> {
    return this.openSecret(userId, await this.credentials.getTotp(userId)) !== undefined;
  }

  /** The stored secret, opened; undefined when none is stored or it does not open (then it counts as no enrolment). */
  private openSecret(userId: string, stored: StoredTotp | undefined): string | undefined {
    if (stored === undefined) return undefined;
    try {
      return this.sealer.open(userId, stored.sealedSecret);
    } catch (error) {
      if (!(error instanceof SealedSecretError)) throw error;
      // The record stays: should the key come back (put back into the previous keys), so does the enrolment.
      debug(
        'an authenticator app does not open with the configured sealing keys (its key was lost or dropped from ' +
          'previousSealingKeys, or the record was altered): it counts as not set up, and its user sets it up again',
      );
      return undefined;
    }
  }

  private totp(secret: string, label = 'user'): TOTP {
    return new TOTP({
      issuer: this.issuer,
      label,
      algorithm: 'SHA1',
      digits: DIGITS,
      period: PERIOD_SECONDS,
      secret: Secret.fromBase32(secret),
    });
  }

  /** The time step the code belongs to (within the window), or undefined when it matches none. */
  private matchingStep(secret: string, code: string, nowMillis: number): number | undefined {
    const token = code.replace(/\s/g, '');
    if (!CODE.test(token)) return undefined;
    const delta = this.totp(secret).validate({ token, timestamp: nowMillis, window: WINDOW });
    return delta === null ? undefined : Math.floor(nowMillis / 1000 / PERIOD_SECONDS) + delta;
  }
}
