import { OptionsError } from '../util/options';

/**
 * Throws an `OptionsError` for an option that was renamed or removed before 1.0, saying what replaces it, so an
 * upgrade fails loudly at start-up rather than silently dropping a security setting. Runs before `checkOptions`,
 * whose "did you mean" cannot guess a rename such as `secureCookie` → `allowInsecureLocalDevelopment`. Each value
 * completes the sentence `option "<old>" was …`.
 *
 * @example
 * refuseRenamedOptions('ssoSession', options, { absoluteTimeoutSeconds: 'renamed to absoluteLifetimeSeconds' });
 */
export function refuseRenamedOptions(factory: string, options: unknown, renamed: Readonly<Record<string, string>>): void {
  if (options === null || typeof options !== 'object') return;
  for (const [old, replacement] of Object.entries(renamed)) {
    if (Object.prototype.hasOwnProperty.call(options, old)) {
      throw new OptionsError(`${factory}: option "${old}" was ${replacement}`);
    }
  }
}

/** What replaced the `csrf` option of `requireSession` and `sessionsResource`. */
export const CSRF_MOVED =
  'removed: ssoSession checks the origin of every state-changing request its cookie authenticates; list sibling apps in ssoSession({ csrf: { allowedOrigins: [...] } })';
