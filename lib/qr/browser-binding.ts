import { timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { randomToken } from '../util/random-token';
import { sha256 } from '../util/digest';

/**
 * SHA-256 of a binding token, base64url: what the request record keeps (the cookie value itself is never stored).
 *
 * @example
 * const bindingHash = hashBinding(setBindingCookie(res, 'qr_binding', path, 240));
 */
export function hashBinding(token: string): string {
  return sha256(token, 'base64url');
}

/**
 * All values of cookie `name` in the request (several may match when paths overlap).
 *
 * @example
 * readCookies(req, 'qr_binding'); // ['…']
 */
export function readCookies(req: Request, name: string): string[] {
  const header = req.headers.cookie;
  if (!header) return [];
  const values: string[] = [];
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index < 0 || part.slice(0, index).trim() !== name) continue;
    values.push(part.slice(index + 1).trim());
  }
  return values;
}

/**
 * True when the request carries the binding cookie whose hash the record holds; compared in constant time.
 *
 * @example
 * if (!hasBinding(req, 'qr_binding', record.bindingHash)) throw new ForbiddenError();
 */
export function hasBinding(req: Request, cookieName: string, bindingHash: string): boolean {
  const expected = Buffer.from(bindingHash, 'base64url');
  let match = false;
  for (const value of readCookies(req, cookieName)) {
    const actual = Buffer.from(hashBinding(value), 'base64url');
    if (actual.length === expected.length && timingSafeEqual(actual, expected)) match = true;
  }
  return match;
}

/**
 * Sets a fresh binding cookie scoped to one request's path, so only this browser can follow the request and collect
 * its redirect, and two tabs with two QR codes do not overwrite each other's cookie.
 *
 * @example
 * const token = setBindingCookie(res, 'qr_binding', `/sns/qr-logins/${authCode}`, 240);
 */
export function setBindingCookie(res: Response, cookieName: string, path: string, maxAgeSeconds: number): string {
  const token = randomToken(32);
  res.cookie(cookieName, token, { httpOnly: true, secure: true, sameSite: 'lax', path, maxAge: maxAgeSeconds * 1000 });
  return token;
}
