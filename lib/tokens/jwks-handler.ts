import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { MethodNotAllowedError } from '../http/errors';
import { checkOptions, OptionsError, within } from '../util/options';
import { KeySet } from './key-set';

/** Options of {@link jwksHandler}. */
export interface JwksHandlerOptions {
  /** How long verifiers may cache the key set (`Cache-Control: public, max-age`). Default 600 s; keep it below the time an old key stays published after rotation. */
  maxAgeSeconds?: number;
}

/**
 * An Express handler publishing the public JWKS of a {@link KeySet} as `application/jwk-set+json` (RFC 7517 §8.5),
 * with `Cache-Control: public, max-age=…` and an ETag. HS* secrets are never published.
 *
 * @example
 * app.get('/.well-known/jwks.json', jwksHandler(keys, { maxAgeSeconds: 300 }));
 */
export function jwksHandler(keySet: KeySet, options: JwksHandlerOptions = {}): RequestHandler {
  if (!(keySet instanceof KeySet)) {
    throw new OptionsError('jwksHandler: the first argument must be a KeySet, e.g. app.get("/.well-known/jwks.json", jwksHandler(keys))');
  }
  checkOptions('jwksHandler', options, {
    // Cache-Control max-age takes whole seconds (RFC 9111 §1.2.2).
    maxAgeSeconds: { type: 'integer', expected: 'a whole number of seconds from 0 to 86400', check: within(0, 86_400) },
  });
  const maxAge = options.maxAgeSeconds ?? 600;
  // The document never changes for a given KeySet, so it is serialized once.
  const body = JSON.stringify(keySet.publicJwks());
  const cacheControl = `public, max-age=${maxAge}`;

  return function jwksHandlerMiddleware(req: Request, res: Response, next: NextFunction): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next(new MethodNotAllowedError(['GET', 'HEAD']));
      return;
    }
    res.setHeader('Cache-Control', cacheControl);
    res.type('application/jwk-set+json').send(body);
  };
}
