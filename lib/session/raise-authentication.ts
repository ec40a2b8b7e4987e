import type { Request } from 'express';
import type { Session, SessionData } from 'express-session';
import { UnauthorizedError } from '../http/errors';
import { authenticationOf } from './authentication';
import { asOutage } from './session-manager';
import { clearFreshLogin, markFreshLogin } from './session-store';
import { runtimeOf } from './sso-runtime';
import { raiseAuthentication } from './step-up';

function promised(run: (done: (err?: unknown) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => run((err) => (err ? reject(asOutage(err)) : resolve())));
}

/**
 * Records that the session's user just presented one or more factors (`otp` for a TOTP or recovery code, `pwd` for a
 * password typed again, `hwk`/`swk` for a passkey): the level and times are raised on the *current* session (same
 * user, same login time and lifetime, same data), and the session gets a new id, so an id observed before the
 * step-up does not carry the higher level. `reason` is what the `session.renewed` event says (`password_changed`
 * after a password change). Rejects with 401 when the request has no session user, 503 when the
 * store is down.
 *
 * @example
 * if (await totp.verify(req.user!.id, code)) await raiseSessionAuthentication(req, 'otp');
 */
export async function raiseSessionAuthentication(
  req: Request,
  methods: string | readonly string[],
  nowSeconds = Math.floor(Date.now() / 1000),
  reason: 'step_up' | 'password_changed' | 'reauthenticated' = 'step_up',
): Promise<void> {
  const runtime = runtimeOf(req, 'raiseSessionAuthentication');
  const previous = req.session as (Session & Partial<SessionData>) | undefined;
  const user = previous?.user;
  if (previous === undefined || user === undefined) {
    throw new UnauthorizedError({ code: 'session_required', detail: 'Sign in first.' });
  }
  const authentication = (typeof methods === 'string' ? [methods] : methods).reduce(
    (current, method) => raiseAuthentication(current, method, nowSeconds),
    authenticationOf(user),
  );
  const raised = { ...user, authentication };
  // Everything the session holds is carried over (the user, its bookkeeping, an OIDC login's tokens); only the id changes.
  const carried: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(previous)) {
    if (key !== 'cookie' && key !== 'id' && key !== 'req' && typeof value !== 'function') carried[key] = value;
  }
  const previousId = req.sessionID;
  const tags = previous.meta?.tags ?? [];
  await promised((done) => previous.regenerate(done));
  await runtime.manager.unindex(previousId, user.id, tags);
  const fresh = req.session;
  Object.assign(fresh, carried, { user: raised });
  await runtime.manager.index(req.sessionID, user.id, tags);
  markFreshLogin(fresh);
  try {
    await promised((done) => fresh.save(done));
  } finally {
    clearFreshLogin(fresh);
  }
  await runtime.manager.settled(req.sessionID);
  await runtime.manager.confirmSessionWrites(req.sessionID, user.id, tags);
  req.user = raised;
  runtime.events?.emit(
    'session.renewed',
    {
      reason,
      userId: user.id,
      sessionHandle: runtime.manager.handleOf(req.sessionID),
      previousSessionHandle: runtime.manager.handleOf(previousId),
    },
    req,
  );
}
