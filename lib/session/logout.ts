import type { Request, Response } from 'express';
import type { Session } from 'express-session';
import { UnauthorizedError } from '../http/errors';
import { asOutage } from './session-manager';
import { runtimeOf, type SsoRuntime } from './sso-runtime';

function destroyCurrent(current: Session): Promise<void> {
  return new Promise((resolve, reject) => current.destroy((err: unknown) => (err ? reject(asOutage(err)) : resolve())));
}

function clearSessionCookie(runtime: SsoRuntime, res: Response | undefined): void {
  // Same Domain, Path and flags as when it was set: a cookie is only replaced by one with the same Domain and Path.
  if (res && !res.headersSent) res.clearCookie(runtime.cookie.name, runtime.clearCookieOptions());
}

/**
 * Logs the current browser out: deletes its session from the store, clears the cookie (same Domain, Path and
 * flags) and removes the session from its indexes. Resolves also when there was no session. Rejects with 503 when
 * the store is down, in which case the session is left as it was (the user is told, not falsely logged out).
 *
 * @example
 * app.post('/logout', async (req, res, next) => {
 *   try { await logout(req, res); res.redirect(303, 'https://www.example.test/'); } catch (err) { next(err); }
 * });
 */
export async function logout(req: Request, res: Response): Promise<void> {
  await endCurrentSession(req, res, 'logout');
}

/**
 * {@link logout} with the reason its `session.ended` event gives (`provider_logout` when the OpenID Provider's
 * RP-initiated logout ends the portal session).
 *
 * @example
 * await endCurrentSession(req, res, 'provider_logout');
 */
export async function endCurrentSession(req: Request, res: Response, reason: 'logout' | 'provider_logout'): Promise<void> {
  const runtime = runtimeOf(req, 'logout');
  const current = req.session;
  const sessionId = req.sessionID;
  const userId = current?.user?.id;
  const tags = current?.meta?.tags;
  if (current) await destroyCurrent(current);
  req.user = undefined;
  if (userId !== undefined && sessionId) await runtime.manager.unindex(sessionId, userId, tags);
  // Confirmed before the cookie goes: on a 503 the browser keeps it and can send the logout again.
  if (sessionId) await runtime.manager.confirmSessionWrites(sessionId, userId, tags);
  clearSessionCookie(runtime, res);
  if (sessionId && userId !== undefined) {
    runtime.events?.emit('session.ended', { reason, userId, sessionHandle: runtime.manager.handleOf(sessionId) }, req);
    await runtime.manager.announceEnded([sessionId]);
  }
}

/**
 * Ends every session of a user (by default the logged-in user of this request) on every app of the parent
 * domain. When the current session is among them, its cookie is cleared too. Resolves to how many sessions were
 * ended; rejects with 401 when no user is given or logged in, 503 when the store is down.
 *
 * @example
 * app.post('/sessions/logout-everywhere', requireSession(), async (req, res, next) => {
 *   try { const ended = await logoutEverywhere(req); res.json({ ended }); } catch (err) { next(err); }
 * });
 */
export async function logoutEverywhere(req: Request, userId?: string): Promise<number> {
  const runtime = runtimeOf(req, 'logoutEverywhere');
  const currentUserId = req.user?.id;
  const target = userId ?? currentUserId;
  if (typeof target !== 'string' || target === '') {
    throw new UnauthorizedError({ code: 'session_required', detail: 'Log in first, or name the user whose sessions to end.' });
  }
  const ended = await runtime.manager.logoutEverywhere(target);
  // Another user's sessions ended by this one (an administrator) are recorded with who did it.
  const byAdmin = target !== currentUserId;
  runtime.events?.emit(
    'session.ended',
    {
      reason: byAdmin ? 'admin' : 'everywhere',
      userId: target,
      count: ended,
      ...(byAdmin && currentUserId ? { actorId: currentUserId } : {}),
    },
    req,
  );
  if (target === currentUserId && req.session) {
    // Already gone from the store; dropping it here also stops express-session from saving it back at the end.
    await destroyCurrent(req.session);
    clearSessionCookie(runtime, req.res);
    req.user = undefined;
  }
  return ended;
}
