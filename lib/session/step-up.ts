import { UnauthorizedError } from '../http/errors';
import { levelOf, type Authentication, type AuthenticationFactor } from './authentication';

/** The levels the kit orders: one factor, two factors, phishing-resistant (a hardware-bound passkey). */
export type AuthenticationLevel = '1fa' | '2fa' | 'phr';

/** The levels, weakest first; `phr` ≥ `2fa` ≥ `1fa`. */
export const AUTHENTICATION_LEVELS: readonly AuthenticationLevel[] = ['1fa', '2fa', 'phr'];

const RANK: Record<string, number> = { '1fa': 1, '2fa': 2, phr: 3 };

/** What a route asks of the authentication: a level, and optionally how recent its factors must be. */
export interface AuthenticationRequirement {
  /** The least level; default `1fa`. */
  acr?: AuthenticationLevel;
  /** The factors giving the level must be at most this old, in seconds (RFC 9470 `max_age`). */
  maxAgeSeconds?: number;
}

/**
 * The rank of an `acr` value: 1–3 for the kit's levels, 0 for anything else (an identity provider's own value is
 * never taken to mean more than its methods show).
 *
 * @example
 * levelRank('2fa'); // 2
 */
export function levelRank(acr: string | undefined): number {
  return acr === undefined ? 0 : (RANK[acr] ?? 0);
}

/** The rank an authentication reaches from its own `acr` or, when that is not one of the kit's, from its methods. */
function rankOf(acr: string, amr: readonly string[]): number {
  return Math.max(levelRank(acr), levelRank(levelOf(amr)));
}

/**
 * Whether a session's authentication meets a requirement at `nowSeconds`. Without `maxAgeSeconds` the level
 * recorded counts; with it, only the factors presented within that many seconds count, so "a second factor in the
 * last five minutes" is not met by a password now and a code an hour ago.
 *
 * @example
 * meetsRequirement(user.authentication, { acr: '2fa', maxAgeSeconds: 300 }, Math.floor(Date.now() / 1000));
 */
export function meetsRequirement(authentication: Authentication, requirement: AuthenticationRequirement, nowSeconds: number): boolean {
  const needed = levelRank(requirement.acr ?? '1fa');
  if (requirement.maxAgeSeconds === undefined) return rankOf(authentication.acr, authentication.amr) >= needed;
  const maxAge = requirement.maxAgeSeconds;
  const fresh = freshFactors(authentication, maxAge, nowSeconds).map((factor) => factor.method);
  if (fresh.length === 0) return false;
  // When every factor is fresh the recorded level stands (an identity provider's acr included).
  const all = fresh.length === authentication.factors.length;
  return (all ? rankOf(authentication.acr, fresh) : levelRank(levelOf(fresh))) >= needed;
}

/** The factors presented within `maxAgeSeconds` of `nowSeconds`. */
export function freshFactors(authentication: Authentication, maxAgeSeconds: number, nowSeconds: number): AuthenticationFactor[] {
  return authentication.factors.filter((factor) => nowSeconds - factor.at <= maxAgeSeconds);
}

/**
 * The authentication after the user presented one more factor now: the method joins `amr` (or has its time
 * renewed), the level is worked out again from the methods, and `authTime` becomes now. The identity is not part
 * of it: a step-up raises the current session, it never starts another user's.
 *
 * @example
 * raiseAuthentication(user.authentication, 'otp', now); // { acr: '2fa', amr: ['pwd', 'otp'], authTime: now, ... }
 */
export function raiseAuthentication(authentication: Authentication, method: string, nowSeconds: number): Authentication {
  const factors = [...authentication.factors.filter((factor) => factor.method !== method), { method, at: nowSeconds }];
  const amr = authentication.amr.includes(method) ? [...authentication.amr] : [...authentication.amr, method];
  const computed = levelOf(amr);
  // An identity provider's stronger level is kept; the kit never lowers what was reached.
  const acr = levelRank(authentication.acr) > levelRank(computed) ? authentication.acr : computed;
  return { acr, amr, authTime: nowSeconds, factors };
}

/**
 * The RFC 9470 challenge of a requirement, e.g. `Bearer error="insufficient_user_authentication",
 * error_description="...", acr_values="2fa", max_age=300`.
 *
 * @example
 * stepUpChallenge({ acr: '2fa', maxAgeSeconds: 300 }, 'api');
 */
export function stepUpChallenge(requirement: AuthenticationRequirement, realm?: string): string {
  const parts = [
    ...(realm === undefined ? [] : [`realm="${realm}"`]),
    'error="insufficient_user_authentication"',
    `error_description="${describeRequirement(requirement)}"`,
    ...(requirement.acr === undefined ? [] : [`acr_values="${requirement.acr}"`]),
    ...(requirement.maxAgeSeconds === undefined ? [] : [`max_age=${requirement.maxAgeSeconds}`]),
  ];
  return `Bearer ${parts.join(', ')}`;
}

function describeRequirement(requirement: AuthenticationRequirement): string {
  const level =
    requirement.acr === 'phr'
      ? 'A phishing-resistant authentication is required'
      : requirement.acr === '2fa'
        ? 'A second factor is required'
        : 'A new authentication is required';
  return requirement.maxAgeSeconds === undefined ? level : `${level} within the last ${requirement.maxAgeSeconds} seconds`;
}

/**
 * 401 `insufficient_user_authentication` (RFC 9470): authenticated, but not strongly or recently enough for this
 * route. Carries the challenge with `acr_values` and `max_age`, and the same in the problem body.
 *
 * @example
 * next(new InsufficientAuthenticationError({ acr: '2fa', maxAgeSeconds: 300 }, { stepUpUrl }));
 */
export class InsufficientAuthenticationError extends UnauthorizedError {
  override name = 'InsufficientAuthenticationError';
  constructor(requirement: AuthenticationRequirement, options: { realm?: string; stepUpUrl?: string; challenge?: string } = {}) {
    super({
      code: 'insufficient_user_authentication',
      detail: `${describeRequirement(requirement)}.`,
      headers: { 'WWW-Authenticate': options.challenge ?? stepUpChallenge(requirement, options.realm) },
      extensions: {
        ...(requirement.acr === undefined ? {} : { acr_values: requirement.acr }),
        ...(requirement.maxAgeSeconds === undefined ? {} : { max_age: requirement.maxAgeSeconds }),
        ...(options.stepUpUrl === undefined ? {} : { step_up_url: options.stepUpUrl }),
      },
    });
  }
}

/** The option schema entries of a requirement, shared by every factory that takes one. */
export const REQUIREMENT_OPTIONS = {
  acr: {
    type: 'string',
    expected: `one of ${AUTHENTICATION_LEVELS.map((level) => `"${level}"`).join(', ')}`,
    check: (value: string) =>
      AUTHENTICATION_LEVELS.includes(value as AuthenticationLevel)
        ? undefined
        : `must be one of ${AUTHENTICATION_LEVELS.join(', ')}, got ${JSON.stringify(value)}`,
  },
  maxAgeSeconds: {
    type: 'integer',
    expected: 'a whole number of seconds from 0 to 31536000',
    check: (value: number) => (value < 0 || value > 31_536_000 ? `must be from 0 to 31536000, got ${value}` : undefined),
  },
} as const;
