import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { BadRequestError } from '../../http/errors';
import { authenticationOf } from '../../session/authentication';
import { AUTHENTICATION_LEVELS, freshFactors, type AuthenticationLevel, type AuthenticationRequirement } from '../../session/step-up';
import type { SessionUser } from '../../session/types';
import { requestUrl } from '../../util/request-origin';

const MAX_AGE_LIMIT = 31_536_000;

/**
 * What the step-up page was asked for, read strictly from the query or the form (bad values are a 400); no `acr`
 * means `2fa`.
 *
 * @example
 * requirementOf(req.query.acr, req.query.max_age); // { acr: '2fa', maxAgeSeconds: 300 }
 */
export function requirementOf(acrText: unknown, maxAgeText: unknown): AuthenticationRequirement {
  const acr = acrText === undefined || acrText === '' ? '2fa' : acrText;
  if (typeof acr !== 'string' || !AUTHENTICATION_LEVELS.includes(acr as never)) {
    throw new BadRequestError({ code: 'invalid_request', detail: 'acr must be 1fa, 2fa or phr.' });
  }
  const level = acr as AuthenticationLevel;
  if (maxAgeText === undefined || maxAgeText === '') return { acr: level };
  if (typeof maxAgeText !== 'string' || !/^[0-9]{1,9}$/.test(maxAgeText) || Number(maxAgeText) > MAX_AGE_LIMIT) {
    throw new BadRequestError({ code: 'invalid_request', detail: 'max_age must be a whole number of seconds.' });
  }
  return { acr: level, maxAgeSeconds: Number(maxAgeText) };
}

/**
 * The portal URL of `path` with `return_to` (and more query) for a redirect within the portal.
 *
 * @example
 * portalUrl(req, '/login', { return_to: hereUrl(req) }); // '/login?return_to=https%3A%2F%2F…'
 */
export function portalUrl(req: Request, path: string, query: Record<string, string | undefined>): string {
  const search = Object.entries(query)
    .filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '')
    .map(([key, value]) => `${key}=${encodeURIComponent(value)}`)
    .join('&');
  return `${req.baseUrl}${path}${search ? `?${search}` : ''}`;
}

/**
 * The absolute URL of the request itself, to come back to after a detour (login, enrolment); '' without a usable
 * host, so the detour carries no `return_to` rather than a path the login page would resolve against another site.
 *
 * @example
 * hereUrl(req); // 'https://auth.example.test/step-up?acr=2fa'
 */
export function hereUrl(req: Request): string {
  return requestUrl(req) ?? '';
}

/**
 * An async route whose rejection goes to `next` (Express 4 does not do it by itself).
 *
 * @example
 * router.get('/two-factor', asyncRoute(async (req, res) => { ... }));
 */
export function asyncRoute(handler: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return function portalRoute(req: Request, res: Response, next: NextFunction) {
    handler(req, res).catch(next);
  };
}

/**
 * The password must be typed again when the requirement has a max age and no password is that recent.
 *
 * @example
 * needsPassword(req.user!, { acr: '2fa', maxAgeSeconds: 300 }, nowSeconds);
 */
export function needsPassword(user: SessionUser, requirement: AuthenticationRequirement, nowSeconds: number): boolean {
  if (requirement.maxAgeSeconds === undefined) return false;
  return !freshFactors(authenticationOf(user), requirement.maxAgeSeconds, nowSeconds).some((factor) => factor.method === 'pwd');
}
