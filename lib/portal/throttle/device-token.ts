import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import { normalizeUsername } from '../user-directory';
import { randomToken } from '../../util/random-token';

/**
 * Device tokens, after OWASP's "Slow Down Online Guessing Attacks with Device Cookies": a browser that signed in as
 * a user gets `d1.<nonce>.<expires>.<mac>`, an HMAC-SHA-256 over the nonce, the expiry (epoch seconds) and the
 * normalized username. The username is bound by the MAC, not written into the token, so the cookie does not say
 * who signed in. Pure functions: the throttle decides what a valid token is worth.
 */

/** The public part of a device token. */
export interface DeviceToken {
  /** Random per device and per sign-in (16 bytes, base64url); the throttle counts failures and revocations by it. */
  nonce: string;
  /** Epoch seconds after which the token is worthless. */
  expiresAt: number;
}

/** Why {@link verifyDeviceToken} refused a token. */
export type DeviceTokenRefusal = 'malformed' | 'expired' | 'bad-signature';

const VERSION = 'd1';
const NONCE = /^[A-Za-z0-9_-]{22}$/;
const EXPIRY = /^[1-9][0-9]{0,11}$/;
const MAC = /^[A-Za-z0-9_-]{43}$/;
const KEY_INFO = 'express-sso-kit login-throttle device token';

/**
 * The HMAC key of device tokens: a key given as is, or one derived from a secret with HKDF-SHA-256 (RFC 5869), so the
 * secret itself never keys anything else.
 *
 * @example
 * const key = deviceTokenKey(process.env.PORTAL_DEVICE_SECRET!);
 */
export function deviceTokenKey(secretOrKey: string | Buffer | KeyObject): KeyObject {
  if (typeof secretOrKey === 'string') {
    return createSecretKey(Buffer.from(hkdfSync('sha256', Buffer.from(secretOrKey, 'utf8'), 'express-sso-kit', KEY_INFO, 32)));
  }
  return Buffer.isBuffer(secretOrKey) ? createSecretKey(Buffer.from(secretOrKey)) : secretOrKey;
}

function mac(key: KeyObject, username: string, token: DeviceToken): Buffer {
  return createHmac('sha256', key)
    .update(`${VERSION}|${token.nonce}|${token.expiresAt}|${normalizeUsername(username)}`)
    .digest();
}

/**
 * A fresh device token for a user who just signed in: a new random nonce, valid for `lifetimeSeconds`.
 *
 * @example
 * const token = issueDeviceToken(key, 'alice', Date.now() / 1000, 30 * 24 * 3600);
 */
export function issueDeviceToken(key: KeyObject, username: string, nowSeconds: number, lifetimeSeconds: number): string {
  const token: DeviceToken = { nonce: randomToken(16), expiresAt: Math.floor(nowSeconds + lifetimeSeconds) };
  return `${VERSION}.${token.nonce}.${token.expiresAt}.${mac(key, username, token).toString('base64url')}`;
}

/**
 * The public part of a well-formed token, without checking its MAC (used only to keep other users' tokens in the
 * cookie until they expire); undefined for anything else.
 *
 * @example
 * readDeviceToken(cookieToken)?.expiresAt;
 */
export function readDeviceToken(text: string): DeviceToken | undefined {
  const parts = typeof text === 'string' ? text.split('.') : [];
  if (parts.length !== 4 || parts[0] !== VERSION) return undefined;
  const [, nonce = '', expires = '', signature = ''] = parts;
  if (!NONCE.test(nonce) || !EXPIRY.test(expires) || !MAC.test(signature)) return undefined;
  return { nonce, expiresAt: Number(expires) };
}

/**
 * Checks a device token for this username: well formed, not expired, and its MAC made with this key for this
 * username (compared in constant time). A token of another user, or one made with another key, is `bad-signature`.
 *
 * @example
 * const checked = verifyDeviceToken(key, cookieToken, 'alice', Date.now() / 1000);
 * if ('token' in checked) trustDevice(checked.token.nonce);
 */
export function verifyDeviceToken(
  key: KeyObject,
  text: string,
  username: string,
  nowSeconds: number,
): { token: DeviceToken } | { refusal: DeviceTokenRefusal } {
  const token = readDeviceToken(text);
  if (token === undefined) return { refusal: 'malformed' };
  if (token.expiresAt <= nowSeconds) return { refusal: 'expired' };
  // Compared as text, so a second spelling of the same bytes (base64url's unused low bits) is no token.
  const given = Buffer.from(text.slice(text.lastIndexOf('.') + 1), 'ascii');
  const expected = Buffer.from(mac(key, username, token).toString('base64url'), 'ascii');
  return given.length === expected.length && timingSafeEqual(given, expected) ? { token } : { refusal: 'bad-signature' };
}
