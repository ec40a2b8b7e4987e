import type { Response } from 'express';

/**
 * Answers with `body` as JSON that no cache may keep: `Cache-Control: no-store`, `Content-Type: application/json;
 * charset=utf-8`, the length, and the body in one write. Express's `res.json` would also hash every body for an
 * `ETag`, which an answer nobody may store has no use for: on the QR provider that hash was about 2 % of its CPU per
 * login. A `HEAD` request gets the headers alone, as Node's HTTP server drops the body.
 *
 * @example
 * sendNoStoreJson(res, { status: 'scanned' });
 * sendNoStoreJson(res, links, 201);
 */
export function sendNoStoreJson(res: Response, body: unknown, status?: number): void {
  const text = JSON.stringify(body);
  if (status !== undefined) res.statusCode = status;
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
