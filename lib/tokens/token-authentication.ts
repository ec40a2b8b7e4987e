import type { Authentication } from '../session/authentication';
import { meetsRequirement, type AuthenticationRequirement } from '../session/step-up';
import type { JwtPayload } from './types';

/**
 * The authentication a token states: its `acr`, `amr` and `auth_time` (OpenID Connect Core §2), read strictly (a
 * non-string `acr`, a non-array `amr` or a non-integer `auth_time` count as absent). Any verified token is at
 * least one factor.
 *
 * @example
 * authenticationOfToken({ acr: '2fa', amr: ['pwd', 'otp'], auth_time: 1800000000 });
 */
export function authenticationOfToken(claims: JwtPayload): Authentication {
  const authTime = claims.auth_time;
  const acr = typeof claims.acr === 'string' ? claims.acr : '';
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((method): method is string => typeof method === 'string') : [];
  const at = typeof authTime === 'number' && Number.isInteger(authTime) ? authTime : Number.NEGATIVE_INFINITY;
  // A verified token without amr stands for one factor of unknown kind, at auth_time (never fresh without it).
  return { acr, amr, authTime: at, factors: (amr.length > 0 ? amr : ['unknown']).map((method) => ({ method, at })) };
}

/**
 * Whether a token meets a route's requirement at `nowSeconds`: its level from `acr` (the kit's values) or `amr`,
 * and with `maxAgeSeconds` an `auth_time` at most that old (a token without `auth_time` fails it).
 *
 * @example
 * tokenMeets(req.auth!.payload, { acr: '2fa', maxAgeSeconds: 300 }, Math.floor(Date.now() / 1000));
 */
export function tokenMeets(claims: JwtPayload, requirement: AuthenticationRequirement, nowSeconds: number): boolean {
  return meetsRequirement(authenticationOfToken(claims), requirement, nowSeconds);
}
