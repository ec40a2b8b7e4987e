import { parseCookie } from 'cookie';
import type { Request, Response } from 'express';
import { debugChannel } from '../util/debug';
import type { IssuedDeviceTokens } from './login-throttle';

/** The cookie a browser keeps its device tokens in (one per user of the browser, newest first). */
export const DEVICE_COOKIE = 'sso.device';

const SEPARATOR = '~';
// Four tokens of 76 characters and their separators; anything longer is not ours.
const MAX_VALUE_LENGTH = 4 * 77;
const debug = debugChannel('portal');

/**
 * The device tokens the browser sent in the portal's device cookie. The header is read segment by segment with the
 * `cookie` package's rules (RFC 6265); the cookie sent twice with different values is an ambiguity nobody honest
 * produces (a sibling subdomain planting one), so then no token counts.
 *
 * @example
 * const deviceTokens = readDeviceCookie(req);
 */
export function readDeviceCookie(req: Request): string[] {
  const header = req.headers.cookie;
  if (typeof header !== 'string' || !header.includes(DEVICE_COOKIE)) return [];
  const values = new Set<string>();
  for (const segment of header.split(';')) {
    const value = parseCookie(segment)[DEVICE_COOKIE];
    if (value !== undefined) values.add(value);
  }
  const [value] = values;
  if (values.size > 1 || value === undefined || value.length > MAX_VALUE_LENGTH) {
    debug('ignored the device cookie: %s', values.size > 1 ? 'sent twice with different values' : 'malformed');
    return [];
  }
  return value.split(SEPARATOR).filter((token) => token !== '');
}

/**
 * Stores the browser's device tokens: HttpOnly (no script reads them), Secure, SameSite=Lax, host-only (no Domain,
 * so sibling subdomains neither receive nor set it) and limited to the portal's login path.
 *
 * @example
 * writeDeviceCookie(req, res, await throttle.recordSuccess(decision));
 */
export function writeDeviceCookie(req: Request, res: Response, issued: IssuedDeviceTokens): void {
  res.cookie(DEVICE_COOKIE, issued.tokens.join(SEPARATOR), {
    httpOnly: true,
    secure: true,
    sameSite: 'lax',
    path: `${req.baseUrl}/login`,
    maxAge: issued.maxAgeSeconds * 1000,
  });
}
