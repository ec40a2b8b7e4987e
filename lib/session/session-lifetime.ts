import type { SessionMeta } from './types';

/** The three limits of a logged-in session, in milliseconds. */
export interface SessionLimits {
  /** The session ends after this long without a request. */
  idleMs: number;
  /** The session ends this long after login, however active it is. */
  absoluteMs: number;
  /** A request re-saves the session (refreshing its store TTL) only when the last refresh is older than this. */
  touchAfterMs: number;
}

/** What a request should do with a session, judged from its `meta` alone. */
export type SessionVerdict = 'anonymous' | 'live' | 'touch' | 'expired';

/**
 * Judges a session: `expired` past the idle or absolute limit (or with unreadable bookkeeping), `touch` when it is
 * live but its idle timer was last refreshed more than `touchAfterMs` ago, `live` otherwise, `anonymous` without a
 * login. Pure, so the Redis and memory paths and `requireSession` all decide the same way.
 *
 * @example
 * judgeSession(req.session.meta, Date.now(), limits); // 'live'
 */
export function judgeSession(meta: SessionMeta | undefined, now: number, limits: SessionLimits): SessionVerdict {
  if (meta === undefined || meta === null) return 'anonymous';
  const { createdAt, lastSeenAt } = meta;
  if (typeof createdAt !== 'number' || typeof lastSeenAt !== 'number') return 'expired';
  if (now - createdAt >= limits.absoluteMs || now - lastSeenAt >= limits.idleMs) return 'expired';
  return now - lastSeenAt >= limits.touchAfterMs ? 'touch' : 'live';
}

/**
 * How long the store should keep a session from `now`: until its idle limit (counted from `lastSeenAt`), but
 * never past its absolute lifetime. Sessions without a login (holding only an OIDC transaction, say) live for
 * the idle timeout. Zero or less means the session is already over.
 *
 * @example
 * storeTtlMillis(session.meta, Date.now(), limits); // 1_800_000
 */
export function storeTtlMillis(meta: SessionMeta | undefined, now: number, limits: SessionLimits): number {
  if (!meta) return limits.idleMs;
  if (typeof meta.createdAt !== 'number' || typeof meta.lastSeenAt !== 'number') return 0;
  return Math.min(meta.lastSeenAt + limits.idleMs, meta.createdAt + limits.absoluteMs) - now;
}
