import { createHash } from 'node:crypto';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import { readLimited } from '../util/read-limited';

/** What a breach check answers for one password. */
export interface BreachCheckResult {
  /** How often the password appears in the breach corpus; 0 when it does not. */
  count: number;
}

/**
 * A source of breached passwords the password policy asks (ASVS 6.2.12). It rejects when it cannot answer (down,
 * slow, garbled); the policy then accepts or refuses as its `whenBreachCheckFails` option says. The kit ships
 * {@link rangeBreachCheck}; implement it over your own corpus if you keep one.
 */
export interface BreachCheck {
  check(password: string): Promise<BreachCheckResult>;
}

/** Options of {@link rangeBreachCheck}. */
export interface RangeBreachCheckOptions {
  /**
   * The range API, to which the first five hex digits of the password's SHA-1 are appended. Default
   * `https://api.pwnedpasswords.com/range/` (Have I Been Pwned's Pwned Passwords; free, no key).
   */
  url?: string;
  /** How long one lookup may take, the whole answer included. Default 2 seconds. */
  timeoutSeconds?: number;
  /** Ask the service to pad its answer with fake entries, so its size does not hint at the prefix. Default true. */
  padding?: boolean;
  /** The User-Agent sent (the Pwned Passwords API asks for one naming the application). Default `express-sso-kit`. */
  userAgent?: string;
}

const OPTIONS: OptionSchema = {
  url: {
    type: 'string',
    expected: 'an https URL ending in "/", e.g. "https://api.pwnedpasswords.com/range/"',
    check: (url: string) => {
      try {
        const parsed = new URL(url);
        if (parsed.protocol !== 'https:' && !isLoopback(parsed.hostname))
          return `must be https (or http on a loopback address), got "${url}"`;
        return url.endsWith('/') ? undefined : `must end in "/" (the hash prefix is appended), got "${url}"`;
      } catch {
        return `must be an absolute URL, got "${url}"`;
      }
    },
  },
  timeoutSeconds: { type: 'number', check: within(0.1, 30) },
  padding: { type: 'boolean' },
  userAgent: {
    type: 'string',
    check: (agent: string) => (/^[\x21-\x7e][\x20-\x7e]{0,199}$/.test(agent) ? undefined : 'must be printable ASCII'),
  },
};

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

// A padded range answer is 800 to 1,000 lines of 40 bytes; far above this is not one.
const MAX_ANSWER_BYTES = 1024 * 1024;
const LINE = /^([0-9A-Fa-f]{35}):(\d+)$/;

/**
 * A breach lookup could not answer; its message says why, for logs, never the password or its hash.
 *
 * @example
 * await rangeBreachCheck({ timeoutSeconds: 2 }).check(password); // rejects with BreachCheckUnavailableError when the API is down
 */
export class BreachCheckUnavailableError extends Error {
  override readonly name = 'BreachCheckUnavailableError';
  readonly code = 'breach_check_unavailable';
}

/**
 * A {@link BreachCheck} over a k-anonymity range API, the shape of Have I Been Pwned's Pwned Passwords: the
 * password's SHA-1 is computed here, only its first five hex digits are sent (`GET <url><prefix>`), and the answer
 * lists the suffixes of every breached hash with that prefix, each with a count; the password never leaves the
 * process and the service cannot tell which of the ~500 hashes of the prefix was asked about. With `padding` the
 * service adds fake entries (count 0) so the answer's size hides the prefix too. A lookup that times out, fails or
 * answers garbage rejects with a {@link BreachCheckUnavailableError}.
 *
 * @example
 * const policy = passwordPolicy({ breachCheck: rangeBreachCheck({ timeoutSeconds: 2 }) });
 */
export function rangeBreachCheck(options: RangeBreachCheckOptions = {}): BreachCheck {
  checkOptions('rangeBreachCheck', options as unknown, OPTIONS);
  const base = options.url ?? 'https://api.pwnedpasswords.com/range/';
  const timeoutMillis = Math.round((options.timeoutSeconds ?? 2) * 1000);
  const headers: Record<string, string> = { 'User-Agent': options.userAgent ?? 'express-sso-kit', Accept: 'text/plain' };
  if (options.padding ?? true) headers['Add-Padding'] = 'true';

  return {
    async check(password: string): Promise<BreachCheckResult> {
      if (typeof password !== 'string') throw new OptionsError('rangeBreachCheck: the password must be a string');
      // The NFC form, the one the kit hashes and stores (see docs/accounts.md), as UTF-8.
      const digest = createHash('sha1').update(password.normalize('NFC'), 'utf8').digest('hex').toUpperCase();
      const prefix = digest.slice(0, 5);
      const suffix = digest.slice(5);
      let text: string;
      try {
        const response = await fetch(`${base}${prefix}`, { headers, redirect: 'error', signal: AbortSignal.timeout(timeoutMillis) });
        if (response.status !== 200) {
          await response.body?.cancel().catch(() => undefined);
          throw new BreachCheckUnavailableError(`the breach range API answered ${response.status}`);
        }
        text = await readLimited(response, MAX_ANSWER_BYTES);
      } catch (error) {
        if (error instanceof BreachCheckUnavailableError) throw error;
        // By name, not `instanceof`: fetch's errors may come from another realm (a test runner's VM context).
        const timedOut = (error as { name?: unknown } | null)?.name === 'TimeoutError';
        const reason = timedOut ? 'did not answer in time' : 'could not be read';
        throw new BreachCheckUnavailableError(`the breach range API ${reason}`, { cause: error });
      }
      let count = 0;
      let lines = 0;
      for (const line of text.split('\n')) {
        const entry = line.trim();
        if (entry === '') continue;
        const match = LINE.exec(entry);
        if (!match) throw new BreachCheckUnavailableError('the breach range API answered something that is not a range list');
        lines += 1;
        if (match[1]!.toUpperCase() === suffix) count = Number(match[2]);
      }
      // An empty answer is not "no breach": a real range always lists hundreds of suffixes.
      if (lines === 0) throw new BreachCheckUnavailableError('the breach range API answered an empty list');
      return { count };
    },
  };
}
