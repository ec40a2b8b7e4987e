import { parseCookie } from 'cookie';
import type { Request, Response } from 'express';

/** The cookies a mailed link's token moves into, by the page the link opens. */
export const LINK_COOKIES = { reset: 'sso.reset-link', verify: 'sso.verify-link' } as const;

/** Which mailed link: a password reset or an address verification. */
export type LinkKind = keyof typeof LINK_COOKIES;

const TOKEN = /^[A-Za-z0-9_.-]{1,100}$/;

/**
 * Moves a mailed link's token out of the URL into a cookie limited to the link's page (HttpOnly, Secure,
 * SameSite=Lax, host-only, `path` the page's own), so the address bar, the history, the Referer of anything the page
 * loads and the access logs of later requests never see it.
 *
 * @example
 * writeLinkCookie(res, 'reset', `${req.baseUrl}/password/reset`, token, 900);
 */
export function writeLinkCookie(res: Response, kind: LinkKind, path: string, token: string, maxAgeSeconds: number): void {
  res.cookie(LINK_COOKIES[kind], token, { httpOnly: true, secure: true, sameSite: 'lax', path, maxAge: maxAgeSeconds * 1000 });
}

/** Removes the link's cookie (used, expired, or replaced). */
export function clearLinkCookie(res: Response, kind: LinkKind, path: string): void {
  res.clearCookie(LINK_COOKIES[kind], { httpOnly: true, secure: true, sameSite: 'lax', path });
}

/**
 * The token the link's cookie holds; '' when absent, malformed, or sent twice with different values (a planted
 * second cookie is an attack, not a choice to make).
 *
 * @example
 * const token = readLinkCookie(req, 'reset');
 */
export function readLinkCookie(req: Request, kind: LinkKind): string {
  const header = req.headers.cookie;
  const name = LINK_COOKIES[kind];
  if (typeof header !== 'string' || !header.includes(name)) return '';
  const values = new Set<string>();
  for (const segment of header.split(';')) {
    const value = parseCookie(segment)[name];
    if (value !== undefined) values.add(value);
  }
  const [value] = values;
  return values.size === 1 && value !== undefined && TOKEN.test(value) ? value : '';
}
