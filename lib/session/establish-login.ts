import type { Request } from 'express';
import type { Session, SessionData } from 'express-session';
import { asOutage } from './session-manager';
import { clearFreshLogin, markFreshLogin } from './session-store';
import { refuseInsecureLogin } from './https-required';
import { runtimeOf } from './sso-runtime';
import { ForbiddenError } from '../http/errors';
import { identityId, sourceProblem, type Identity } from './identity';
import type { LinkedAccount, LoginUser, SessionUser } from './types';
import { loginAuthentication } from './authentication';
import { checkOptions, OptionsError } from '../util/options';

/** Options of {@link establishLogin}. */
export interface EstablishLoginOptions {
  /** Extra index keys for this session, e.g. `oidc-sid:<issuer>|<sid>` for back-channel logout (`destroyByTag`). */
  tags?: readonly string[];
  /** Further session fields to store with the login in the same write (e.g. `oidc`). Nothing else is carried over. */
  data?: Partial<Omit<SessionData, 'user' | 'meta' | 'cookie'>>;
}

const MAX_USER_AGENT = 256;

function fail(message: string): never {
  throw new OptionsError(`establishLogin: ${message}`);
}

function checkIdentity(identity: Identity, what: string): void {
  const problem = sourceProblem(identity.source);
  if (problem !== undefined) fail(`${what}.source ${problem}`);
  if (typeof identity.subject !== 'string' || identity.subject === '' || identity.subject.length > 512) {
    fail(`${what}.subject must be a non-empty string of at most 512 characters`);
  }
}

function checkUser(user: LoginUser): void {
  if (user === null || typeof user !== 'object') fail('user must be an object { source, subject, name, roles, method }');
  if ('id' in user) {
    fail('user.id is derived from (source, subject); pass { source, subject } (e.g. { source: "directory:staff", subject: "u1" })');
  }
  checkIdentity(user, 'user');
  if (typeof user.name !== 'string') fail('user.name must be a string');
  if (!Array.isArray(user.roles) || !user.roles.every((role) => typeof role === 'string')) fail('user.roles must be an array of strings');
  if (typeof user.method !== 'string' || user.method === '') fail('user.method must name how the user authenticated, e.g. "password"');
  if (user.authenticatedAt !== undefined && !Number.isFinite(user.authenticatedAt)) fail('user.authenticatedAt must be epoch milliseconds');
  const auth = user.authentication;
  if (auth !== undefined) {
    if (auth === null || typeof auth !== 'object') fail('user.authentication must be an object { amr?, acr?, authTime? }');
    if (auth.amr !== undefined && !(Array.isArray(auth.amr) && auth.amr.every((entry) => typeof entry === 'string' && entry !== ''))) {
      fail('user.authentication.amr must be an array of method references such as "pwd" or "otp"');
    }
    if (auth.acr !== undefined && (typeof auth.acr !== 'string' || auth.acr === ''))
      fail('user.authentication.acr must be a non-empty string');
    if (auth.authTime !== undefined && !Number.isFinite(auth.authTime)) fail('user.authentication.authTime must be epoch seconds');
  }
}

/** The session user a login becomes: itself, or the local account `linkAccount` mapped it onto. */
function toSessionUser(user: LoginUser, linked: LinkedAccount | undefined, now: number): SessionUser {
  const account: Identity = linked ?? user;
  const roles = linked ? (linked.roles ?? []) : user.roles;
  const attributes = linked ? { ...user.attributes, ...linked.attributes } : user.attributes;
  return {
    id: identityId(account),
    source: account.source,
    subject: account.subject,
    name: linked?.name ?? user.name,
    roles: [...roles],
    method: user.method,
    authenticatedAt: user.authenticatedAt ?? now,
    authentication: loginAuthentication(user.method, user.authentication, Math.floor((user.authenticatedAt ?? now) / 1000)),
    ...(attributes && Object.keys(attributes).length > 0 ? { attributes: { ...attributes } } : {}),
    ...(linked ? { linkedFrom: { source: user.source, subject: user.subject } } : {}),
  };
}

function promised(run: (done: (err?: unknown) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => run((err) => (err ? reject(asOutage(err)) : resolve())));
}

/**
 * Logs the user in on the shared session: a new session id (against fixation), nothing kept from the session
 * before except `options.data`, the user and bookkeeping stored, and the session indexed under the user and
 * each tag. The user is the identity that authenticated, `(source, subject)`, with the id `<source>|<subject>`,
 * unless `ssoSession({ linkAccount })` maps it onto a local account. With `ssoSession({ sessionLimit })` a login past
 * the user's limit ends their oldest sessions, or is refused with 403 `session_limit_reached`. Resolves once everything is in the store; rejects with 503 when the store is down.
 *
 * @example
 * app.post('/login', async (req, res, next) => {
 *   try {
 *     await establishLogin(req, { source: 'directory:staff', subject: 'u1', name: 'Ada', roles: ['admin'], method: 'password' });
 *     res.redirect(303, req.sso!.redirects.sanitize(req.query.return_to));
 *   } catch (err) { next(err); }
 * });
 */
export async function establishLogin(req: Request, user: LoginUser, options: EstablishLoginOptions = {}): Promise<void> {
  // A misspelled option (`tag`) would otherwise log the user in without the index back-channel logout needs.
  checkOptions('establishLogin', options as unknown, { tags: { type: 'string[]' }, data: { type: 'object' } });
  const runtime = runtimeOf(req, 'establishLogin');
  checkUser(user);
  const tags = options.tags === undefined ? [] : [...options.tags];
  if (!tags.every((tag) => typeof tag === 'string' && tag !== '' && tag.length <= 512))
    fail('tags must be non-empty strings of at most 512 characters');
  // express-session would silently drop a Secure cookie on what Express believes is plain http.
  refuseInsecureLogin(req, 'establishLogin');

  // The link is decided before anything changes: a refused login leaves the current session as it was.
  const linked = runtime.linkAccount === undefined ? undefined : await runtime.linkAccount(Object.freeze({ ...user }), req);
  if (linked === null) {
    throw new ForbiddenError({ code: 'account_not_linked', detail: 'This account is not linked to a local account here.' });
  }
  if (linked !== undefined) {
    if (typeof linked !== 'object') fail('linkAccount must return { source, subject, name?, roles? }, undefined or null');
    checkIdentity(linked, 'linkAccount(...)');
    if (linked.roles !== undefined && !(Array.isArray(linked.roles) && linked.roles.every((role) => typeof role === 'string'))) {
      fail('linkAccount(...).roles must be an array of strings');
    }
  }

  const limit = runtime.sessionLimit;
  if (limit?.whenReached === 'refuse_new') {
    const userId = identityId(linked ?? user);
    // The browser's own session of this user is replaced by the login, so it does not count against it.
    const others = (await runtime.manager.listSessions(userId, req.sessionID)).filter((session) => !session.current);
    if (others.length >= limit.maxPerUser) {
      throw new ForbiddenError({
        code: 'session_limit_reached',
        detail: `You are signed in on ${others.length} devices already, the most allowed. Sign out on one of them first.`,
      });
    }
  }

  const previous = req.session as (Session & Partial<SessionData>) | undefined;
  const previousUser = previous?.user;
  const previousTags = previous?.meta?.tags;
  const previousId = req.sessionID;
  if (previous) {
    await promised((done) => previous.regenerate(done));
  } else {
    req.sessionStore.generate(req);
  }
  if (previousUser && previousId) await runtime.manager.unindex(previousId, previousUser.id, previousTags);

  const now = Date.now();
  const sessionUser = toSessionUser(user, linked ?? undefined, now);
  const fresh = req.session;
  if (options.data) Object.assign(fresh, options.data);
  fresh.user = sessionUser;
  const userAgent = req.get('user-agent');
  fresh.meta = {
    createdAt: now,
    lastSeenAt: now,
    ...(req.ip ? { ip: req.ip } : {}),
    ...(userAgent ? { userAgent: userAgent.slice(0, MAX_USER_AGENT) } : {}),
    ...(tags.length > 0 ? { tags } : {}),
  };
  // Index before saving: a session that exists but is missing from the index would survive logoutEverywhere.
  await runtime.manager.index(req.sessionID, sessionUser.id, tags);
  markFreshLogin(fresh);
  try {
    await promised((done) => fresh.save(done));
  } finally {
    clearFreshLogin(fresh);
  }
  await runtime.manager.settled(req.sessionID);
  try {
    await runtime.manager.confirmSessionWrites(req.sessionID, sessionUser.id, tags);
  } catch (error) {
    // Not confirmed, so not acknowledged: no cookie for it. The record may exist on the master; remove it if we can.
    const unconfirmedId = req.sessionID;
    req.sessionStore.generate(req);
    await promised((done) => req.sessionStore.destroy(unconfirmedId, done)).catch(() => undefined);
    await runtime.manager.unindex(unconfirmedId, sessionUser.id, tags);
    throw error;
  }
  req.user = sessionUser;
  runtime.events?.emit(
    'session.created',
    { reason: 'login', method: sessionUser.method, userId: sessionUser.id, sessionHandle: runtime.manager.handleOf(req.sessionID) },
    req,
  );
  if (limit?.whenReached === 'end_oldest') await endOldestSessions(req, sessionUser.id, limit.maxPerUser);
}

/** Ends the user's oldest sessions past `max`, never the one just created. */
async function endOldestSessions(req: Request, userId: string, max: number): Promise<void> {
  const runtime = runtimeOf(req, 'establishLogin');
  const sessions = await runtime.manager.listSessions(userId, req.sessionID);
  const others = sessions.filter((session) => !session.current);
  const excess = others.slice(0, Math.max(0, sessions.length - max));
  for (const session of excess) {
    if (await runtime.manager.revokeSession(userId, session.id)) {
      runtime.events?.emit('session.ended', { reason: 'session_limit', userId, sessionHandle: session.id }, req);
    }
  }
}
