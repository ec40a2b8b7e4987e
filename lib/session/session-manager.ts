import { createHmac, type KeyObject } from 'node:crypto';
import type { SessionData } from 'express-session';
import { ServiceUnavailableError } from '../http/errors';
import { isStoreOutage, type KeyValueStore } from '../store';
import { judgeSession, type SessionLimits } from './session-lifetime';
import type { SessionManager, SessionSummary } from './types';
import { debugChannel } from '../util/debug';

/** The store channel on which ended sessions are announced (see {@link KitSessionManager.announceEnded}). */
export const SESSIONS_ENDED_CHANNEL = 'sessions:ended';

const debug = debugChannel('session');
// A login whose record was never written (the save failed) stops being protected from pruning after this.
const PENDING_SECONDS = 60;

/** Settings of a {@link KitSessionManager}. */
export interface SessionManagerSettings {
  /** Key prefix of session records inside the kit store (the store adds its own prefix in front). */
  sessionPrefix: string;
  limits: SessionLimits;
  /** HMAC key for the public session handles. */
  handleKey: KeyObject;
  /** Close the store on `close()`: true when `ssoSession` opened it. */
  ownsStore: boolean;
}

/**
 * Maps a store outage to the kit's 503, leaving other errors as they are.
 *
 * @example
 * try { await store.get(key); } catch (error) { throw asOutage(error); }
 */
export function asOutage(error: unknown): unknown {
  if (error instanceof ServiceUnavailableError) return error;
  return isStoreOutage(error)
    ? new ServiceUnavailableError({
        code: 'store_unavailable',
        detail: 'The session store is unavailable. Try again shortly.',
        cause: error,
      })
    : error;
}

async function guarded<T>(operation: Promise<T>): Promise<T> {
  try {
    return await operation;
  } catch (error) {
    throw asOutage(error);
  }
}

/**
 * The session indexes and bulk operations over the kit store. Sessions live under `<sessionPrefix><id>`; the ids
 * of a user's sessions in the set `user-sessions:{<userId>}`, those of a tag in `session-tags:{<tag>}`. Each
 * operation touches one key at a time, so it works on a Redis Cluster without cross-slot commands.
 *
 * @example
 * const manager = new KitSessionManager(store, { sessionPrefix: 'sess:', limits, handleKey, ownsStore: false });
 * await manager.logoutEverywhere('user-1');
 */
export class KitSessionManager implements SessionManager {
  private readonly store: KeyValueStore;
  private readonly settings: SessionManagerSettings;

  constructor(store: KeyValueStore, settings: SessionManagerSettings) {
    this.store = store;
    this.settings = settings;
  }

  sessionKey(sessionId: string): string {
    return this.settings.sessionPrefix + sessionId;
  }

  /**
   * Present from just before a login is indexed until its record is written ({@link KitSessionManager.settled}, or
   * at most a minute): pruning must not take an id whose record does not exist yet for one whose record has ended.
   */
  private static pendingKey(sessionId: string): string {
    return `session-pending:{${sessionId}}`;
  }

  private static userKey(userId: string): string {
    return `user-sessions:{${userId}}`;
  }

  /** The ids of users who signed in within a session's absolute lifetime: what ending everyone's sessions walks. */
  private static readonly USERS_KEY = 'session-users:{all}';

  private static tagKey(tag: string): string {
    return `session-tags:{${tag}}`;
  }

  /**
   * Tells every subscriber (in any process sharing the store) that sessions ended, by their public handles. It
   * runs after the sessions are gone; a lost announcement must not undo a logout, so a failure is only logged.
   */
  async announceEnded(sessionIds: readonly string[]): Promise<void> {
    if (sessionIds.length === 0) return;
    const handles = sessionIds.map((id) => this.handleOf(id));
    await this.store.publish(SESSIONS_ENDED_CHANNEL, JSON.stringify({ handles })).catch((error: unknown) => {
      debug('the end of %d session(s) was not announced: %s', handles.length, error instanceof Error ? error.name : 'error');
    });
  }

  async onSessionsEnded(listener: (handles: string[]) => void): Promise<() => Promise<void>> {
    return guarded(
      this.store.subscribe(SESSIONS_ENDED_CHANNEL, (message) => {
        let handles: unknown;
        try {
          handles = (JSON.parse(message) as { handles?: unknown }).handles;
        } catch {
          return;
        }
        if (Array.isArray(handles) && handles.every((handle) => typeof handle === 'string')) listener(handles as string[]);
      }),
    );
  }

  handleOf(sessionId: string): string {
    // 128 bits of a keyed hash: unguessable and unlinkable to the cookie, yet stable for the session's life.
    return createHmac('sha256', this.settings.handleKey).update(sessionId).digest('base64url').slice(0, 22);
  }

  /**
   * Adds a new login to the user's index and to each tag's; the sets live as long as a session can. Ids of
   * sessions that ended through their TTL are pruned first: every login renews the set's expiry, so without the
   * pruning the index of a user who keeps logging in would only grow.
   */
  async index(sessionId: string, userId: string, tags: readonly string[]): Promise<void> {
    const ttlSeconds = this.settings.limits.absoluteMs / 1000;
    const userKey = KitSessionManager.userKey(userId);
    await guarded(this.pruneEnded(userKey));
    await guarded(this.store.set(KitSessionManager.pendingKey(sessionId), '1', PENDING_SECONDS));
    await guarded(
      Promise.all([
        this.store.addToSet(userKey, [sessionId], ttlSeconds),
        this.store.addToSet(KitSessionManager.USERS_KEY, [userId], ttlSeconds),
        ...tags.map((tag) => this.store.addToSet(KitSessionManager.tagKey(tag), [sessionId], ttlSeconds)),
      ]),
    );
  }

  /** Marks an indexed login's record as written, so pruning may take its id once the record ends. */
  async settled(sessionId: string): Promise<void> {
    await guarded(this.store.delete(KitSessionManager.pendingKey(sessionId)));
  }

  private async pruneEnded(indexKey: string): Promise<void> {
    const ids = await this.store.members(indexKey);
    if (ids.length === 0) return;
    const remaining = await Promise.all(ids.map((id) => this.store.ttlMillis(this.sessionKey(id))));
    const missing = ids.filter((_id, position) => remaining[position] === -2);
    if (missing.length === 0) return;
    // A login indexed by a concurrent request has no record yet: it is being created, not ended.
    const pending = await Promise.all(missing.map((id) => this.store.ttlMillis(KitSessionManager.pendingKey(id))));
    const ended = missing.filter((_id, position) => pending[position] === -2);
    if (ended.length > 0) await this.store.removeFromSet(indexKey, ended);
  }

  /**
   * Confirms a login or logout of one session (its record and index entries) before it is acknowledged: with a
   * `RedisStore` that has `waitForReplicas`, replicas must hold it (503 otherwise); a no-op without.
   */
  async confirmSessionWrites(sessionId: string, userId: string | undefined, tags: readonly string[] = []): Promise<void> {
    const keys = [this.sessionKey(sessionId)];
    if (userId !== undefined) keys.push(KitSessionManager.userKey(userId), ...tags.map((tag) => KitSessionManager.tagKey(tag)));
    await guarded(this.store.confirmWrites(keys));
  }

  /** Removes a session from its indexes. Best effort: listings drop ids whose session is gone anyway. */
  async unindex(sessionId: string, userId: string | undefined, tags: readonly string[] = []): Promise<void> {
    if (userId === undefined) return;
    const removals = [this.store.removeFromSet(KitSessionManager.userKey(userId), [sessionId])];
    for (const tag of tags) removals.push(this.store.removeFromSet(KitSessionManager.tagKey(tag), [sessionId]));
    await Promise.all(removals).catch(() => undefined);
  }

  private async readLive(sessionId: string): Promise<SessionData | undefined> {
    const text = await this.store.get(this.sessionKey(sessionId));
    if (text === null) return undefined;
    let data: SessionData;
    try {
      data = JSON.parse(text) as SessionData;
    } catch {
      return undefined;
    }
    const verdict = judgeSession(data?.meta, Date.now(), this.settings.limits);
    return verdict === 'live' || verdict === 'touch' ? data : undefined;
  }

  async listSessions(userId: string, currentSessionId?: string): Promise<SessionSummary[]> {
    return guarded(
      (async () => {
        const key = KitSessionManager.userKey(userId);
        const ids = await this.store.members(key);
        const records = await Promise.all(ids.map((id) => this.readLive(id)));
        const gone: string[] = [];
        const summaries: SessionSummary[] = [];
        ids.forEach((id, position) => {
          const data = records[position];
          if (!data?.user || data.user.id !== userId || !data.meta) {
            gone.push(id);
            return;
          }
          summaries.push({
            id: this.handleOf(id),
            createdAt: data.meta.createdAt,
            lastSeenAt: data.meta.lastSeenAt,
            ...(data.meta.ip !== undefined ? { ip: data.meta.ip } : {}),
            ...(data.meta.userAgent !== undefined ? { userAgent: data.meta.userAgent } : {}),
            method: data.user.method,
            current: id === currentSessionId,
          });
        });
        if (gone.length > 0) await this.store.removeFromSet(key, gone);
        return summaries.sort((a, b) => a.createdAt - b.createdAt);
      })(),
    );
  }

  async revokeSession(userId: string, handle: string): Promise<boolean> {
    if (typeof handle !== 'string' || handle.length === 0) return false;
    return guarded(
      (async () => {
        const key = KitSessionManager.userKey(userId);
        const sessionId = (await this.store.members(key)).find((id) => this.handleOf(id) === handle);
        if (sessionId === undefined) return false;
        const data = await this.readLive(sessionId);
        const removed = await this.store.delete(this.sessionKey(sessionId));
        await this.unindex(sessionId, userId, data?.meta?.tags);
        await this.store.confirmWrites([this.sessionKey(sessionId), KitSessionManager.userKey(userId)]);
        await this.announceEnded([sessionId]);
        return removed > 0 && data !== undefined;
      })(),
    );
  }

  private async destroyIndexed(indexKey: string): Promise<number> {
    const ids = await this.store.members(indexKey);
    const removed = ids.length === 0 ? 0 : await this.store.delete(...ids.map((id) => this.sessionKey(id)));
    await this.store.delete(indexKey);
    await this.store.confirmWrites([...ids.map((id) => this.sessionKey(id)), indexKey]);
    await this.announceEnded(ids);
    return removed;
  }

  async logoutEverywhere(userId: string): Promise<number> {
    return guarded(this.destroyIndexed(KitSessionManager.userKey(userId)));
  }

  /**
   * Ends every session of every user (ASVS 7.4.5): walks the users who signed in within a session's lifetime and
   * ends each one's sessions as {@link KitSessionManager.logoutEverywhere} does, announcing them, so session caches
   * and the OpenID Provider hear of each. A login made while it runs may survive it; run it again to be sure.
   */
  async logoutEveryone(): Promise<{ users: number; sessions: number }> {
    return guarded(
      (async () => {
        const userIds = await this.store.members(KitSessionManager.USERS_KEY);
        let sessions = 0;
        for (const userId of userIds) sessions += await this.destroyIndexed(KitSessionManager.userKey(userId));
        if (userIds.length > 0) await this.store.removeFromSet(KitSessionManager.USERS_KEY, userIds);
        return { users: userIds.length, sessions };
      })(),
    );
  }

  async destroyByTag(tag: string): Promise<number> {
    return guarded(this.destroyIndexed(KitSessionManager.tagKey(tag)));
  }

  async close(): Promise<void> {
    if (this.settings.ownsStore) await this.store.close();
  }
}
