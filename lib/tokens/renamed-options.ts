import { OptionsError } from '../util/options';

/** Options of the tokens area renamed before 1.0, by factory: old name → new name. */
export const RENAMED = {
  jwks: { timeoutMs: 'timeoutSeconds', cooldownMs: 'cooldownSeconds', maxAgeMs: 'maxAgeSeconds', minAgeMs: 'minAgeSeconds' },
  tokenService: {
    accessTokenTtlSeconds: 'accessTokenLifetimeSeconds',
    idTokenTtlSeconds: 'idTokenLifetimeSeconds',
    refreshTokenTtlSeconds: 'refreshTokenLifetimeSeconds',
  },
  refreshTokens: { ttlSeconds: 'lifetimeSeconds', accessTokenTtlSeconds: 'accessTokenLifetimeSeconds' },
} as const;

/**
 * Refuses an option under its former name with the name to write instead, before the general unknown-option
 * check (whose spelling suggestions cannot guess a rename such as `ttlSeconds` → `lifetimeSeconds`).
 *
 * @example
 * refuseRenamedOptions('JwksCache', options, RENAMED.jwks);
 */
export function refuseRenamedOptions(factory: string, options: unknown, renames: Readonly<Record<string, string>>): void {
  if (typeof options !== 'object' || options === null) return;
  for (const [old, current] of Object.entries(renames)) {
    if (Object.prototype.hasOwnProperty.call(options, old)) {
      const unit = old.endsWith('Ms') ? ' (seconds, not milliseconds; fractions allowed)' : '';
      throw new OptionsError(`${factory}: option "${old}" was renamed "${current}"${unit}`);
    }
  }
}
