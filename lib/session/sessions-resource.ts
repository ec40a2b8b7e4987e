import { Router, type NextFunction, type Request, type Response } from 'express';
import { NotFoundError, UnauthorizedError } from '../http/errors';
import { methodNotAllowed, requireRepresentation } from '../http/handlers';
import { compileAllowedOrigins, csrfRefusal, type CsrfGuardOptions } from './csrf-guard';
import { logout } from './logout';
import { judgeSession } from './session-lifetime';
import { runtimeOf } from './sso-runtime';

/** Options of {@link sessionsResource}. */
export interface SessionsResourceOptions {
  /** Path of the collection inside the router. Default `/sessions`. */
  path?: string;
  /** The CSRF origin check on DELETE, as for `requireSession`. Default on. */
  csrf?: boolean | CsrfGuardOptions;
}

/**
 * The current user's sessions as a REST resource: `GET /sessions` lists them (200, the current one marked
 * `current: true`), `DELETE /sessions/:id` ends one (204; 404 for an id that is not one of the user's). Without
 * a login: 401 problem+json, also for browser navigations (it is an API). Other methods: 405 with `Allow`.
 * Mount after `ssoSession`.
 *
 * @example
 * app.use(ssoSession({ ... }));
 * app.use('/account', sessionsResource()); // GET /account/sessions, DELETE /account/sessions/:id
 */
export function sessionsResource(options: SessionsResourceOptions = {}): Router {
  if (arguments.length === 3 || (typeof options === 'object' && options !== null && 'socket' in options)) {
    throw new TypeError('sessionsResource: it is a factory: write app.use(sessionsResource()), not app.use(sessionsResource)');
  }
  if (options === null || typeof options !== 'object')
    throw new TypeError('sessionsResource: options must be an object, e.g. { path: "/sessions" }');
  const path = options.path ?? '/sessions';
  if (typeof path !== 'string' || !/^\/[A-Za-z0-9._~\-/]*[A-Za-z0-9._~-]$/.test(path)) {
    throw new TypeError(`sessionsResource: path must be a plain path such as "/sessions", got ${JSON.stringify(path)}`);
  }
  const csrf = options.csrf ?? true;
  if (typeof csrf !== 'boolean' && (typeof csrf !== 'object' || csrf === null)) {
    throw new TypeError('sessionsResource: csrf must be true, false or { allowedOrigins: [...] }');
  }
  const csrfOrigins =
    csrf === false ? undefined : compileAllowedOrigins(csrf === true ? undefined : csrf.allowedOrigins, 'sessionsResource: csrf');

  function requireLogin(req: Request, _res: Response, next: NextFunction): void {
    const runtime = runtimeOf(req, 'sessionsResource');
    const user = req.session?.user;
    const verdict = judgeSession(req.session?.meta, Date.now(), runtime.limits);
    if (user === undefined || (verdict !== 'live' && verdict !== 'touch')) {
      next(
        new UnauthorizedError({
          code: 'session_required',
          detail: 'Log in to see your sessions.',
          extensions: { login_url: runtime.loginUrl },
        }),
      );
      return;
    }
    if (csrfOrigins !== undefined) {
      const refusal = csrfRefusal(req, csrfOrigins);
      if (refusal !== undefined) {
        next(refusal);
        return;
      }
    }
    req.user = user;
    next();
  }

  async function listSessions(req: Request, res: Response): Promise<void> {
    const runtime = runtimeOf(req, 'sessionsResource');
    const sessions = await runtime.manager.listSessions(req.user!.id, req.sessionID);
    res.set('Cache-Control', 'no-store').json(sessions);
  }

  async function deleteSession(req: Request, res: Response): Promise<void> {
    const runtime = runtimeOf(req, 'sessionsResource');
    const handle = String(req.params.id);
    if (handle === runtime.manager.handleOf(req.sessionID)) {
      // Ending the session this request rides on is a logout: the cookie goes too.
      await logout(req, res);
    } else if (!(await runtime.manager.revokeSession(req.user!.id, handle))) {
      throw new NotFoundError({ code: 'session_not_found', detail: 'You have no session with this id.' });
    }
    res.status(204).end();
  }

  function describeOptions(allowed: string) {
    return function sessionsOptions(_req: Request, res: Response): void {
      res.set('Allow', allowed).status(204).end();
    };
  }

  const router = Router();
  router
    .route(path)
    .get(requireRepresentation(['application/json']), requireLogin, listSessions)
    .options(describeOptions('GET, HEAD, OPTIONS'))
    .all(methodNotAllowed(['GET']));
  router
    .route(`${path}/:id`)
    .delete(requireLogin, deleteSession)
    .options(describeOptions('DELETE, OPTIONS'))
    .all(methodNotAllowed(['DELETE']));
  return router;
}
