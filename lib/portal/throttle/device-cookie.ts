import { parseCookie } from 'cookie';
import type { Request, Response } from 'express';
import { debugChannel } from '../../util/debug';
import type { IssuedDeviceTokens } from './login-throttle';

/** The cookie a browser keeps its device tokens in (one per user of the browser, newest first). */
export const DEVICE_COOKIE = 'sso.device';
/**
 * The cookie a browser that completed a second factor keeps its factor device tokens in: the factor throttle's own,
 * so a browser that passed the step-up before keeps its own budget of codes.
 */
export const FACTOR_DEVICE_COOKIE = 'sso.factor-device';

/** The portal path each device cookie is sent to: the form whose attempts it vouches for. */
const COOKIE_PATHS: Record<DeviceCookieName, string> = { [DEVICE_COOKIE]: '/login', [FACTOR_DEVICE_COOKIE]: '/step-up' };

/** The two device cookies of the portal. */
export type DeviceCookieName = typeof DEVICE_COOKIE | typeof FACTOR_DEVICE_COOKIE;

const SEPARATOR = '~';
// Four tokens of 76 characters and their separators; anything longer is not ours.
const MAX_VALUE_LENGTH = 4 * 77;
const debug = debugChannel('portal');

/**
 * The device tokens the browser sent in one of the portal's device cookies (the password one by default). The header is read segment by segment with the
 * `cookie` package's rules (RFC 6265); the cookie sent twice with different values is an ambiguity nobody honest
 * produces (a sibling subdomain planting one), so then no token counts.
 *
 * @example
 * const deviceTokens = readDeviceCookie(req);
 */
export function readDeviceCookie(req: Request, name: DeviceCookieName = DEVICE_COOKIE): string[] {
  const header = req.headers.cookie;
  if (typeof header !== 'string' || !header.includes(name)) return [];
  const values = new Set<string>();
  for (const segment of header.split(';')) {
    const value = parseCookie(segment)[name];
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
 * so sibling subdomains neither receive nor set it) and limited to the portal path of the form it vouches for
 * (`/login` for passwords, `/step-up` for second factors).
 *
 * @example
 * writeDeviceCookie(req, res, await throttle.recordSuccess(decision));
 */
export function writeDeviceCookie(req: Request, res: Response, issued: IssuedDeviceTokens, name: DeviceCookieName = DEVICE_COOKIE): void {
  res.cookie(name, issued.tokens.join(SEPARATOR), {
    httpOnly: true,
    secure: true,
    sameSite: 'lax',
    path: `${req.baseUrl}${COOKIE_PATHS[name]}`,
    maxAge: issued.maxAgeSeconds * 1000,
  });
}
