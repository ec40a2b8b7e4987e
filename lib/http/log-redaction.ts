import type { Request } from 'express';
import { REDACTED } from '../util/debug';

// Lower-case words joined by "-", "_" or "." (`qr-logins`, `openid-configuration`) are route names, never secrets:
// a random token of 16 or more URL-safe characters is practically never all lower-case letters.
const ROUTE_WORD = /^[a-z._-]+$/;
const MAX_LOGGED_PATH = 256;

/**
 * Whether one path segment may carry a credential: a percent-escape (anything can hide behind it) or 16 or more
 * characters that are not a lower-case route word. QR `auth_code`s (32 characters), session handles (22), JWTs and
 * UUIDs all qualify; `sessions`, `42` and `qr-logins` do not.
 *
 * @example
 * looksLikeCredential('Yq3v0c1X9kTQ2mZp8s7RbA4nW6eLhJdU'); // true
 */
export function looksLikeCredential(segment: string): boolean {
  if (segment.includes('%')) return true;
  return segment.length >= 16 && !ROUTE_WORD.test(segment);
}

/**
 * A request path fit for a log line: the query is dropped (it carries codes, states and tokens), every segment
 * that may be a credential is replaced by `[redacted]`, and the result is cut to 256 characters.
 *
 * @example
 * redactPath('/sns/qr-logins/Yq3v0c1X9kTQ2mZp8s7RbA4nW6eLhJdU/events?code=x'); // '/sns/qr-logins/[redacted]/events'
 */
export function redactPath(path: string): string {
  const withoutQuery = path.split('?')[0] ?? '';
  const redacted = withoutQuery
    .split('/')
    .map((segment) => (looksLikeCredential(segment) ? REDACTED : segment))
    .join('/');
  return redacted.length > MAX_LOGGED_PATH ? `${redacted.slice(0, MAX_LOGGED_PATH)}…` : redacted;
}

/**
 * The route pattern that handled the request (`/sns/qr-logins/:authCode/events`), relative to its router, when the
 * request reached a route; patterns never hold request values.
 *
 * @example
 * routePattern(req); // '/sessions/:id'
 */
export function routePattern(req: Request): string | undefined {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path : undefined;
}
