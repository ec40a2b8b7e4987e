import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import type { BreachCheck } from './breach-check';
import {
  commonPasswordListFile,
  commonPasswords,
  DEFAULT_COMMON_PASSWORD_COUNT,
  foldForComparison,
  MAX_COMMON_PASSWORD_COUNT,
} from './common-passwords';

/** Options of {@link passwordPolicy}. */
export interface PasswordPolicyOptions {
  /** The fewest characters (Unicode code points) a password may have: 8 to 64. Default 8; 15 is recommended. */
  minLength?: number;
  /** The most characters a password may have: 64 to 512, never below `minLength`. Default 256. Longer ones are refused, never cut. */
  maxLength?: number;
  /**
   * How many of the most common passwords (of 8 characters or more) are refused: 1,000 to 1,000,000, or 0 to
   * refuse none (below ASVS level 1). Default 100,000. The list is read once, when the first password is checked
   * (or at {@link PasswordPolicy.preload}).
   */
  commonPasswordCount?: number;
  /** Words tied to your service (its name, products, domain) that no password may contain. */
  contextWords?: string[];
  /** Context words (the service's, and the parts of the user's name, username and address) shorter than this are ignored: 3 to 16. Default 4. */
  minContextWordLength?: number;
  /** Where breached passwords are looked up (ASVS 6.2.12), e.g. {@link rangeBreachCheck}. Default none. */
  breachCheck?: BreachCheck;
  /**
   * What a check does when the breach lookup fails (down, slow, garbled): `accept` (default) lets the password pass
   * the other rules alone and reports `breachCheckFailed`; `refuse` refuses it with `breach_check_unavailable`.
   */
  whenBreachCheckFails?: 'accept' | 'refuse';
}

/** What the policy knows of the user a password is for; any part may be missing (a sign-up form has no id yet). */
export interface PasswordContext {
  username?: string;
  name?: string;
  email?: string;
}

/** The rule a password broke, as a stable code for programs. */
export type PasswordRefusalCode =
  | 'too_short'
  | 'too_long'
  | 'invalid_characters'
  | 'common'
  | 'context_word'
  | 'personal_information'
  | 'breached'
  | 'breach_check_unavailable';

/** One broken rule: a stable code and a sentence for the person choosing the password. */
export interface PasswordRefusal {
  code: PasswordRefusalCode;
  message: string;
}

/** The answer of {@link PasswordPolicy.check}. */
export interface PasswordVerdict {
  accepted: boolean;
  /** Every rule the password broke, in the order they are checked; empty when accepted. */
  refusals: PasswordRefusal[];
  /** True when a breach check is configured but could not answer (the password was judged without it, or refused). */
  breachCheckFailed: boolean;
}

/** The rules a new password must pass, from {@link passwordPolicy}. */
export interface PasswordPolicy {
  readonly minLength: number;
  readonly maxLength: number;
  /** A sentence for the form, e.g. "Use 8 to 256 characters. Any characters may be used; a few unrelated words make a strong password." */
  readonly hint: string;
  /** Checks a new password against every rule; the breach lookup only for a password the offline rules accept. */
  check(password: string, context?: PasswordContext): Promise<PasswordVerdict>;
  /** Reads the common-password list now (at start-up), so the first check does not wait for it. */
  preload(): Promise<void>;
}

const OPTIONS: OptionSchema = {
  minLength: { type: 'integer', check: within(8, 64) },
  maxLength: { type: 'integer', check: within(64, 512) },
  commonPasswordCount: {
    type: 'integer',
    expected: `0, or a whole number from 1000 to ${MAX_COMMON_PASSWORD_COUNT}`,
    check: (count: number) =>
      count === 0 || (count >= 1000 && count <= MAX_COMMON_PASSWORD_COUNT)
        ? undefined
        : `must be 0 or from 1000 to ${MAX_COMMON_PASSWORD_COUNT}, got ${count}`,
  },
  contextWords: { type: 'string[]' },
  minContextWordLength: { type: 'integer', check: within(3, 16) },
  breachCheck: {
    type: 'object',
    expected: 'a BreachCheck such as rangeBreachCheck()',
    check: (check: { check?: unknown }) =>
      typeof check.check === 'function' ? undefined : 'must have check(password), e.g. rangeBreachCheck()',
  },
  whenBreachCheckFails: {
    type: 'string',
    check: (value: string) => (value === 'accept' || value === 'refuse' ? undefined : `must be "accept" or "refuse", got "${value}"`),
  },
};

const debug = debugChannel('accounts');
const WORD_SEPARATORS = /[^\p{L}\p{N}]+/u;
const LONE_SURROGATE = /\p{Cs}/u;

/** The folded words of the user's own details worth refusing: the whole username and mailbox, and each part of them and of the name. */
function personalWords(context: PasswordContext, minLength: number): string[] {
  const words = new Set<string>();
  const add = (text: unknown) => {
    if (typeof text !== 'string') return;
    const folded = foldForComparison(text.trim());
    words.add(folded);
    for (const part of folded.split(WORD_SEPARATORS)) words.add(part);
  };
  add(context.username);
  add(context.name);
  if (typeof context.email === 'string') {
    const at = context.email.lastIndexOf('@');
    add(at === -1 ? context.email : context.email.slice(0, at));
    // The domain's labels but the last (the top-level domain says nothing about the user).
    if (at !== -1)
      for (const label of context.email
        .slice(at + 1)
        .split('.')
        .slice(0, -1))
        add(label);
  }
  return [...words].filter((word) => [...word].length >= minLength);
}

/**
 * The password rules of ASVS 5.0 V6.2 and NIST SP 800-63B, as a pure check (no Express): at least `minLength`
 * characters (default 8; 15 recommended), at most `maxLength` (default 256; never fewer than 64) and never cut,
 * any characters (no composition rules), not among the 100,000 most common passwords, not containing the
 * service's context words nor the user's own name, username or address, and, with `breachCheck`, not found in
 * known breaches. Length is counted in code points of the NFC form (the form the kit hashes); lists and words are
 * compared case-insensitively and after NFKC, so `Ｐａｓｓｗｏｒｄ１２３` counts as `password123`.
 *
 * @example
 * const policy = passwordPolicy({ minLength: 12, contextWords: ['acme', 'roadrunner'], breachCheck: rangeBreachCheck() });
 * const verdict = await policy.check(newPassword, { username: account.username, name: account.name, email: account.email });
 * if (!verdict.accepted) showErrors(verdict.refusals.map((refusal) => refusal.message));
 */
export function passwordPolicy(options: PasswordPolicyOptions = {}): PasswordPolicy {
  checkOptions('passwordPolicy', options as unknown, OPTIONS);
  const minLength = options.minLength ?? 8;
  const maxLength = options.maxLength ?? 256;
  if (maxLength < minLength) throw new OptionsError(`passwordPolicy: maxLength (${maxLength}) must not be below minLength (${minLength})`);
  const commonCount = options.commonPasswordCount ?? DEFAULT_COMMON_PASSWORD_COUNT;
  // Found now, so a missing list stops the app at start-up rather than at someone's password change.
  if (commonCount > 0) commonPasswordListFile();
  const minWordLength = options.minContextWordLength ?? 4;
  const serviceWords = [...new Set((options.contextWords ?? []).map((word) => foldForComparison(word.trim())))].filter(
    (word) => [...word].length >= minWordLength,
  );
  const breachCheck = options.breachCheck;
  const refuseWhenUnchecked = options.whenBreachCheckFails === 'refuse';

  async function offlineRefusals(password: string, context: PasswordContext): Promise<PasswordRefusal[]> {
    const refusals: PasswordRefusal[] = [];
    const length = [...password.normalize('NFC')].length;
    if (length < minLength) {
      refusals.push({
        code: 'too_short',
        message: `Use at least ${minLength} characters. A few unrelated words make a long password that is easy to remember.`,
      });
    } else if (length > maxLength) {
      refusals.push({ code: 'too_long', message: `Use at most ${maxLength} characters.` });
    }
    if (LONE_SURROGATE.test(password)) {
      refusals.push({
        code: 'invalid_characters',
        message: 'The password contains characters that cannot be stored. Remove them and try again.',
      });
    }
    const folded = foldForComparison(password);
    if (commonCount > 0 && (await commonPasswords(commonCount)).has(folded)) {
      refusals.push({
        code: 'common',
        message: 'This is one of the most common passwords, so it is among the first an attacker tries. Choose another.',
      });
    }
    const serviceWord = serviceWords.find((word) => folded.includes(word));
    if (serviceWord !== undefined) {
      refusals.push({
        code: 'context_word',
        message: `Do not use "${serviceWord}" in your password: it is linked to this service and easy to guess.`,
      });
    }
    if (personalWords(context, minWordLength).some((word) => folded.includes(word))) {
      refusals.push({ code: 'personal_information', message: 'Do not use your name, username or email address in your password.' });
    }
    return refusals;
  }

  return {
    minLength,
    maxLength,
    hint: `Use ${minLength} to ${maxLength} characters. Any characters may be used; a few unrelated words make a strong password.`,
    async check(password: string, context: PasswordContext = {}): Promise<PasswordVerdict> {
      const text = typeof password === 'string' ? password : '';
      const refusals = await offlineRefusals(text, context ?? {});
      if (refusals.length > 0 || !breachCheck) return { accepted: refusals.length === 0, refusals, breachCheckFailed: false };
      try {
        const { count } = await breachCheck.check(text);
        if (count > 0) {
          refusals.push({ code: 'breached', message: 'This password has appeared in a data breach, so attackers try it. Choose another.' });
        }
        return { accepted: refusals.length === 0, refusals, breachCheckFailed: false };
      } catch (error) {
        debug(
          'the breach check failed (%s); the password is %s',
          (error as Error).message,
          refuseWhenUnchecked ? 'refused' : 'judged without it',
        );
        if (refuseWhenUnchecked) {
          refusals.push({
            code: 'breach_check_unavailable',
            message: 'We could not check this password against known data breaches just now. Try again in a minute.',
          });
        }
        return { accepted: refusals.length === 0, refusals, breachCheckFailed: true };
      }
    },
    async preload(): Promise<void> {
      if (commonCount > 0) await commonPasswords(commonCount);
    },
  };
}
