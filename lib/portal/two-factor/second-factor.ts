import type { Request } from 'express';
import type { RecoveryCodes } from '../../credentials/recovery-codes';
import type { TotpAuthenticator } from '../../credentials/totp-authenticator';
import type { AuthenticationLevel } from '../../session/step-up';
import { escapeHtml } from '../portal-pages';

/**
 * One way to present a second factor on the portal's step-up page. The kit registers the authenticator app
 * (`totp`) and recovery codes (`recovery`); a passkey method plugs in as one more entry through
 * `loginPortal({ twoFactor: { methods: [...] } })`.
 */
export interface SecondFactor {
  /** Short id, the value of the form's `method` field: `totp`, `recovery`, `passkey`. */
  readonly id: string;
  /** The button and heading text, e.g. `Use your authenticator app`. */
  readonly label: string;
  /** The RFC 8176 method reference a success adds to the session's `amr`: `otp`, `hwk`, `swk`. */
  readonly amr: string;
  /** The highest level this method can reach together with the password (`2fa`, or `phr` for hardware keys). */
  readonly level: AuthenticationLevel;
  /** Whether the user can use this method now (has enrolled it). */
  isAvailable(userId: string): Promise<boolean>;
  /**
   * The method's own fields inside the step-up form (already escaped HTML), e.g. a one-time code input; may be
   * async, e.g. to store a single-use challenge for this user first.
   */
  renderFields(userId: string, req: Request): string | Promise<string>;
  /** Scripts of the portal's own origin the method needs on the step-up page (the strict CSP allows only those). */
  readonly scripts?: readonly string[];
  /**
   * Checks what the form sent; true when the factor is proven, or the proof's own method references when they
   * depend on what was presented (a passkey is `hwk` or `swk`). Counted by the factor throttle before it runs.
   */
  verify(userId: string, form: Record<string, unknown>, req: Request): Promise<boolean | { amr: readonly string[] }>;
}

// Browsers compile a pattern with the "v" flag, where a bare "-" in a class is a syntax error and the whole pattern is
// ignored: the hyphen is escaped.
const RECOVERY_CODE_PATTERN = '[A-Za-z0-9 \\-]{10,40}';

function codeInput(id: string, label: string, pattern: string, autocomplete: string): string {
  return (
    `<div class="field"><label for="${id}">${escapeHtml(label)}</label>` +
    `<input id="${id}" name="code" type="text" inputmode="${autocomplete === 'one-time-code' ? 'numeric' : 'text'}" ` +
    `autocomplete="${autocomplete}" autocapitalize="none" spellcheck="false" required maxlength="40" pattern="${pattern}"></div>`
  );
}

/**
 * The authenticator-app method (`amr` `otp`): a 6-digit code, accepted once per time step.
 *
 * @example
 * const methods = [totpFactor(totp), recoveryCodeFactor(recovery, totp)];
 */
export function totpFactor(totp: TotpAuthenticator): SecondFactor {
  return {
    id: 'totp',
    label: 'Use your authenticator app',
    amr: 'otp',
    level: '2fa',
    isAvailable: (userId) => totp.isEnrolled(userId),
    renderFields: () => codeInput('totp-code', 'Code from your authenticator app', '[0-9 ]{6,7}', 'one-time-code'),
    verify: async (userId, form) => typeof form.code === 'string' && (await totp.verify(userId, form.code)) === 'accepted',
  };
}

/**
 * The recovery-code method (`amr` `otp`, one-time codes too): each code works once. The codes back up the
 * authenticator app `totp` holds: they are offered only while that app is enrolled (and its secret opens), since
 * codes hashed under a sealing key that is gone match nothing, and the user is then sent to set an app up again.
 *
 * @example
 * const methods = [totpFactor(totp), recoveryCodeFactor(recovery, totp)];
 */
export function recoveryCodeFactor(recovery: RecoveryCodes, totp: TotpAuthenticator): SecondFactor {
  return {
    id: 'recovery',
    label: 'Use a recovery code',
    amr: 'otp',
    level: '2fa',
    isAvailable: async (userId) => (await totp.isEnrolled(userId)) && (await recovery.remaining(userId)) > 0,
    renderFields: () => codeInput('recovery-code', 'Recovery code', RECOVERY_CODE_PATTERN, 'off'),
    verify: async (userId, form) => typeof form.code === 'string' && (await recovery.use(userId, form.code)),
  };
}
