import type { KeyObject } from 'node:crypto';
import type { Request } from 'express';
import type { SessionData } from 'express-session';
import { AMBIGUOUS_COOKIE, decodeCookieValue, readRawCookie } from './cookie-header';
import { rememberSavedText, unsignSessionId, type EngineStore } from './session-engine';
import { judgeSession } from './session-lifetime';
import type { SsoRuntime } from './sso-runtime';

/** A live, signed-in session read outside a request of its own app (a forward-auth sub-request). */
export interface ReadSession {
  sessionId: string;
  /** As loaded: frozen, possibly shared through the session cache. */
  data: Partial<SessionData>;
}

/**
 * Reads the shared session named by a `Cookie` header for code that answers on another request's behalf: the
 * forward-auth endpoint, whose sub-request carries the browser's cookies. The same rules as `ssoSession`: the
 * signature is checked against every secret, a cookie sent twice with two values is ignored, a session past its
 * idle or absolute lifetime reads as absent, and the idle timer is refreshed lazily (a compare-and-set save, as the
 * engine's). Nothing here checks the request's origin: the caller does, against the original request.
 */
export interface SessionReader {
  readonly runtime: SsoRuntime;
  /** The signed-in session, `undefined` when there is none; rejects with the store's outage. */
  read(cookieHeader: string | undefined, req: Request): Promise<ReadSession | undefined>;
}

const READER = Symbol('express-sso-kit.sessionReader');

/**
 * Builds the reader of one `ssoSession` (its cookie, keys, store and limits).
 *
 * @example
 * attachSessionReader(middleware, createSessionReader(runtime, keys, store));
 */
export function createSessionReader(runtime: SsoRuntime, keys: readonly KeyObject[], store: EngineStore): SessionReader {
  const name = runtime.cookie.name;
  return {
    runtime,
    async read(cookieHeader, req) {
      const raw = readRawCookie(cookieHeader, name);
      if (raw === undefined || raw === AMBIGUOUS_COOKIE) return undefined;
      const sessionId = unsignSessionId(decodeCookieValue(raw), keys);
      if (sessionId === undefined) return undefined;
      const loaded = await store.loadLive(sessionId, req);
      if (loaded === null || loaded.data.user === undefined) return undefined;
      const now = Date.now();
      const verdict = judgeSession(loaded.data.meta, now, runtime.limits);
      if (verdict !== 'live' && verdict !== 'touch') return undefined;
      if (verdict === 'touch') {
        // The engine's lazy refresh: a compare-and-set against the text read, merged with concurrent saves.
        const data = JSON.parse(loaded.text) as SessionData;
        rememberSavedText(data, loaded.text);
        data.meta.lastSeenAt = now;
        await new Promise<void>((resolve) => store.set(sessionId, data, () => resolve()));
      }
      return { sessionId, data: loaded.data };
    },
  };
}

/**
 * Attaches a reader to the middleware `ssoSession` returns (not enumerable, not part of the public surface).
 *
 * @example
 * attachSessionReader(middleware, reader);
 */
export function attachSessionReader(middleware: object, reader: SessionReader): void {
  Object.defineProperty(middleware, READER, { value: reader });
}

/**
 * The reader of an `ssoSession` middleware, or undefined for anything else.
 *
 * @example
 * const reader = sessionReaderOf(options.session);
 */
export function sessionReaderOf(middleware: unknown): SessionReader | undefined {
  if (typeof middleware !== 'function') return undefined;
  return (middleware as unknown as Record<symbol, SessionReader | undefined>)[READER];
}
