import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { HttpError } from '../http/errors';
import { debugChannel } from '../util/debug';
import { checkOptions, type OptionSpec } from '../util/options';

const debug = debugChannel('rbac');

/** Options of {@link requireAuth}. */
export interface RequireAuthOptions {
  /** Checks a Bearer token: `requireBearer({ … })`. Runs for every request that carries an `Authorization` header. */
  bearer: RequestHandler;
  /** Checks the shared session: `requireSession()`. Runs for every request without an `Authorization` header. */
  session: RequestHandler;
  /** The `realm` of the Bearer challenge added to a 401 of the session (RFC 6750, section 3). Default `api`. */
  realm?: string;
}

function middleware(example: string): OptionSpec {
  return {
    type: 'function',
    required: true,
    expected: `a middleware such as ${example}`,
    // A factory takes its options (one parameter); a middleware takes (req, res, next).
    check: (handler: (...args: unknown[]) => unknown) =>
      handler.length < 3 ? `must be the middleware ${example} returns, not the factory itself` : undefined,
  };
}

const SCHEMA = {
  bearer: middleware('requireBearer({ … })'),
  session: middleware('requireSession()'),
  realm: {
    type: 'string',
    expected: 'printable ASCII without quotes or backslashes',
    check: (realm: string) =>
      /^[\x20-\x7e]*$/.test(realm) && !/["\\]/.test(realm) ? undefined : 'must be printable ASCII without quotes or backslashes',
  },
} as const;

/**
 * One route for browsers and API clients: a request that carries an `Authorization` header is judged by the
 * Bearer middleware alone (a bad token is a 401, never a fall-back to the session cookie the browser also sent, and
 * with a good one `req.user` is cleared, so only the token's identity, `req.auth`, speaks for the request), any
 * other by the session (`req.user`; a browser navigation
 * without a login goes to the login page). A session's 401 also names the Bearer scheme in `WWW-Authenticate`,
 * since RFC 7235 (section 4.1) asks a 401 to list the schemes that would do. Mount after `ssoSession()`, which has
 * already refused cookie-authenticated unsafe requests from other origins.
 *
 * @example
 * app.use(ssoSession({ … }));
 * app.get('/notes', requireAuth({ bearer: requireBearer({ … }), session: requireSession() }), listNotes);
 */
export function requireAuth(options: RequireAuthOptions): RequestHandler {
  checkOptions('requireAuth', options, SCHEMA);
  const { bearer, session } = options;
  const challenge = `Bearer realm="${options.realm ?? 'api'}"`;

  return function requireAuthMiddleware(req: Request, res: Response, next: NextFunction): void {
    if (req.headers.authorization !== undefined) {
      debug('%s %s carries an Authorization header: the Bearer token alone decides', req.method, req.path);
      // ssoSession set req.user from the cookie the browser sent along; this request speaks for the token only.
      req.user = undefined;
      bearer(req, res, next);
      return;
    }
    session(req, res, (error?: unknown) => {
      if (error instanceof HttpError && error.status === 401 && error.headers['WWW-Authenticate'] === undefined) {
        error.headers['WWW-Authenticate'] = challenge;
      }
      next(error);
    });
  };
}
