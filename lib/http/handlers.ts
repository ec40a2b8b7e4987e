import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { MethodNotAllowedError, NotAcceptableError, NotFoundError } from './errors';

/**
 * Answers 404 problem+json for anything that reached it. Mount after the routes, before {@link errorHandler}.
 *
 * @example
 * app.use(notFound());
 */
export function notFound(): RequestHandler {
  return function notFoundMiddleware(req: Request, _res: Response, next: NextFunction) {
    next(new NotFoundError({ detail: `Nothing is found at ${req.path}.` }));
  };
}

/**
 * Answers 405 with `Allow` for a path whose other methods are routed. Mount it with `router.all(path, …)` after
 * the path's own methods. `HEAD` is listed when `GET` is, and `OPTIONS` always, as Express answers both.
 *
 * @example
 * router.route('/notes/:id').get(read).put(replace).delete(remove).all(methodNotAllowed(['GET', 'PUT', 'DELETE']));
 */
export function methodNotAllowed(allowed: readonly string[]): RequestHandler {
  if (!Array.isArray(allowed) || allowed.length === 0) {
    throw new TypeError('methodNotAllowed: pass the methods the resource allows, e.g. ["GET", "POST"]');
  }
  const methods = new Set(allowed.map((method) => method.toUpperCase()));
  if (methods.has('GET')) methods.add('HEAD');
  methods.add('OPTIONS');
  const list = [...methods];
  return function methodNotAllowedMiddleware(_req: Request, _res: Response, next: NextFunction) {
    next(new MethodNotAllowedError(list));
  };
}

/**
 * Refuses with 406 a request whose Accept header admits none of `types`.
 *
 * @example
 * router.get('/notes', requireRepresentation(['application/json']), list);
 */
export function requireRepresentation(types: readonly string[]): RequestHandler {
  if (!Array.isArray(types) || types.length === 0) {
    throw new TypeError('requireRepresentation: pass the media types the resource offers, e.g. ["application/json"]');
  }
  const offered = [...types];
  return function requireRepresentationMiddleware(req: Request, _res: Response, next: NextFunction) {
    if (req.accepts(offered) === false) {
      next(new NotAcceptableError(offered, { detail: `Available representations: ${offered.join(', ')}.` }));
      return;
    }
    next();
  };
}
