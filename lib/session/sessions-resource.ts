import { Router, type NextFunction, type Request, type Response } from 'express';
import { NotFoundError, UnauthorizedError } from '../http/errors';
import { guarded, methodNotAllowed, requireRepresentation } from '../http/handlers';
import { checkOptions } from '../util/options';
import { CSRF_MOVED, refuseRenamedOptions } from './renamed-options';
import { logout } from './logout';
import { judgeSession } from './session-lifetime';
import { runtimeOf } from './sso-runtime';

/** Options of {@link sessionsResource}. */
export interface SessionsResourceOptions {
  /** Path of the collection inside the router. Default `/sessions`. */
  path?: string;
}

const PATH = /^\/[A-Za-z0-9._~\-/]*[A-Za-z0-9._~-]$/;

/**
 * The current user's sessions as a REST resource: `GET /sessions` lists them (200, the current one marked
 * `current: true`), `DELETE /sessions/:id` ends one (204; 404 for an id that is not one of the user's). Without
 * a login: 401 problem+json, also for browser navigations (it is an API). Other methods: 405 with `Allow`.
 * Mount after `ssoSession`, which refuses a DELETE sent from another origin (403 `csrf_origin`) before it gets here.
 *
 * @example
 * app.use(ssoSession({ ... }));
 * app.use('/account', sessionsResource()); // GET /account/sessions, DELETE /account/sessions/:id
 */
export function sessionsResource(options: SessionsResourceOptions = {}): Router {
  refuseRenamedOptions('sessionsResource', options, { csrf: CSRF_MOVED });
  checkOptions('sessionsResource', options as unknown, {
    path: {
      type: 'string',
      check: (path: string) => (PATH.test(path) ? undefined : `must be a plain path such as "/sessions", got ${JSON.stringify(path)}`),
    },
  });
  const path = options.path ?? '/sessions';

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
    } else {
      runtime.events?.emit('session.ended', { reason: 'revoked', userId: req.user!.id, sessionHandle: handle }, req);
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
    .get(requireRepresentation(['application/json']), requireLogin, guarded(listSessions))
    .options(describeOptions('GET, HEAD, OPTIONS'))
    .all(methodNotAllowed(['GET']));
  router
    .route(`${path}/:id`)
    .delete(requireLogin, guarded(deleteSession))
    .options(describeOptions('DELETE, OPTIONS'))
    .all(methodNotAllowed(['DELETE']));
  return router;
}
