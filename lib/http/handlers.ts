import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { OptionsError, refuseMiddlewareUse } from '../util/options';
import { MethodNotAllowedError, NotAcceptableError, NotFoundError } from './errors';
import { hasMalformedPercentEncoding, malformedUriError } from './malformed-uri';

type Handler = (req: Request, res: Response, next: NextFunction) => Promise<void> | void;

const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function nameList(factory: string, value: unknown, example: string): string[] {
  refuseMiddlewareUse(factory, value, `app.use(${factory}(${example}))`);
  if (!Array.isArray(value) || value.length === 0 || value.some((item) => typeof item !== 'string' || item === '')) {
    throw new OptionsError(`${factory}: pass a non-empty array of names, e.g. ${factory}(${example})`);
  }
  return [...(value as string[])];
}

/**
 * Answers 404 problem+json (`not_found`) for anything that reached it, and 400 `malformed_uri` when its path holds a
 * percent-escape that does not decode (such a URL names nothing; it is bad input, not a missing page). Mount after
 * the routes, before {@link errorHandler}. The answer does not repeat the path, which may carry anything a client
 * sent.
 *
 * @example
 * app.use(notFound());
 */
export function notFound(): RequestHandler {
  // `app.use(notFound)` would call this with the request and leave it hanging; say what to write instead.
  // eslint-disable-next-line prefer-rest-params
  refuseMiddlewareUse('notFound', arguments[0], 'app.use(notFound())');
  return function notFoundMiddleware(req: Request, _res: Response, next: NextFunction) {
    if (hasMalformedPercentEncoding(req.path)) {
      next(malformedUriError());
      return;
    }
    next(new NotFoundError({ detail: 'Nothing is found at this address.' }));
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
  const names = nameList('methodNotAllowed', allowed, '["GET", "POST"]');
  const invalid = names.find((name) => !METHOD.test(name));
  if (invalid !== undefined) throw new OptionsError(`methodNotAllowed: ${JSON.stringify(invalid)} is not an HTTP method name`);
  const methods = new Set(names.map((method) => method.toUpperCase()));
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
  const offered = nameList('requireRepresentation', types, '["application/json"]');
  return function requireRepresentationMiddleware(req: Request, _res: Response, next: NextFunction) {
    if (req.accepts(offered) === false) {
      next(new NotAcceptableError(offered, { detail: `Available representations: ${offered.join(', ')}.` }));
      return;
    }
    next();
  };
}

/**
 * Lets an async handler's rejection reach `next`. Express 5 does this itself; Express 4 leaves the request hanging
 * and the rejection unhandled, so every async handler of the kit goes through this.
 *
 * @example
 * router.get('/status', guarded(async function qrLoginStatus(req, res) { … }));
 */
export function guarded(handler: Handler): RequestHandler {
  return function guardedHandler(req, res, next) {
    Promise.resolve(handler(req, res, next)).catch(next);
  };
}
