import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { Request, Response } from 'express';
import session, { type SessionData } from 'express-session';
import { debugChannel } from '../util/debug';
import { AMBIGUOUS_COOKIE, decodeCookieValue, readRawCookie } from './cookie-header';
import type { SessionCookieSettings } from './types';
import { randomToken } from '../util/random-token';

/**
 * A session read from the store, with the exact text it was stored as (to tell later whether it changed). `data`
 * is frozen: the session cache shares one object between the requests that read it.
 */
export interface LoadedSession {
  data: SessionData;
  text: string;
}

/** What the engine needs from a session store besides the express-session `Store` contract. */
export interface EngineStore extends session.Store {
  /** Reads a live session (expired ones read as null and are deleted). */
  loadLive(sessionId: string, req?: Request): Promise<LoadedSession | null>;
  /**
   * A live session this process holds in memory (the session cache). False when there is none: then call
   * `loadLive`. True when there is one: `then` gets it once the invalidations that had already reached the process
   * are applied, or undefined when one of them ended it (then call `loadLive`).
   */
  loadCached?(sessionId: string, then: (loaded: LoadedSession | undefined) => void): boolean;
}

const SAVED_TEXT = Symbol('express-sso-kit.savedText');
/** A base class whose constructor hands back the object it is given, so a subclass can add its fields to it. */
class Adopts {
  constructor(target: object) {
    return target as Adopts;
  }
}

/**
 * The session each request was loaded with, until its `req.session` is built, kept in a private field the engine adds
 * to the request: no code outside this class can read it, `util.inspect`, `Object.assign`, a spread and
 * `JSON.stringify` never see it (it may hold an OpenID Connect access token), and adding it costs what a property
 * assignment does. A symbol property kept hidden with `Object.defineProperty` cost two to three times as much on
 * Node 24 and 26 (the defining call); a WeakMap entry is an ephemeron the garbage collector traces on every
 * young-generation collection (docs/sessions.md, "Performance").
 */
class LoadedSlot extends Adopts {
  #loaded: LoadedSession | undefined;

  private constructor(req: Request, loaded: LoadedSession | undefined) {
    super(req);
    this.#loaded = loaded;
  }

  /** Gives the request its loaded session (or none), adding the field the first time. */
  static put(req: Request, loaded: LoadedSession | undefined): void {
    if (#loaded in req) (req as unknown as LoadedSlot).#loaded = loaded;
    else if (loaded !== undefined) new LoadedSlot(req, loaded);
  }

  /** The request's loaded session, undefined once `req.session` is built or when none was loaded. */
  static of(req: Request): LoadedSession | undefined {
    return #loaded in req ? (req as unknown as LoadedSlot).#loaded : undefined;
  }
}

const loadedOf = (req: Request): LoadedSession | undefined => LoadedSlot.of(req);
const DISCARDED = Symbol('express-sso-kit.discardedSession');
const debug = debugChannel('session');
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Remembers the JSON a session object was last read or written as. A symbol key: `JSON.stringify` and `for…in`
 * skip it, and unlike a WeakMap entry it costs the garbage collector nothing extra.
 *
 * @example
 * rememberSavedText(sessionObject, text);
 */
export function rememberSavedText(sessionObject: object, text: string): void {
  (sessionObject as Record<symbol, string>)[SAVED_TEXT] = text;
}

/**
 * The JSON a session object was last read or written as, or undefined for a session this process never stored.
 *
 * @example
 * const loadedText = savedTextOf(req.session);
 */
export function savedTextOf(sessionObject: object): string | undefined {
  return (sessionObject as Record<symbol, string | undefined>)[SAVED_TEXT];
}

/**
 * Makes the engine leave this request's session exactly as it is in the store: nothing is saved and no cookie is
 * set at the end of the response, whatever the rest of the chain does to `req.session`. For refused requests.
 *
 * @example
 * discardSession(req);
 * next(new ForbiddenError({ code: 'csrf_origin' }));
 */
export function discardSession(req: Request): void {
  (req as unknown as Record<symbol, boolean>)[DISCARDED] = true;
}

/**
 * Freezes a parsed session and everything in it (JSON data: plain objects and arrays), and returns it.
 *
 * @example
 * const data = freezeDeep(JSON.parse(text));
 */
export function freezeDeep<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  // Arrays by index: `for…in` would enumerate their indexes as strings.
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      const member: unknown = value[index];
      if (typeof member === 'object' && member !== null) freezeDeep(member);
    }
    return value;
  }
  for (const key in value) {
    const member = (value as Record<string, unknown>)[key];
    if (typeof member === 'object' && member !== null) freezeDeep(member);
  }
  return value;
}

/**
 * What the kit's own checks read of a request's session: the session as loaded (frozen) while the request has not
 * touched `req.session`, else `req.session` itself. Reading it never builds the express-session object, so a
 * request that only checks the login costs no copy of the session and no comparison at the end.
 *
 * @example
 * const user = sessionView(req)?.user;
 */
export function sessionView(req: Request): Partial<SessionData> | undefined {
  const loaded = loadedOf(req);
  return loaded !== undefined ? loaded.data : (req.session as Partial<SessionData> | undefined);
}

/** Settings of {@link createSessionEngine}. */
export interface SessionEngineSettings {
  cookie: SessionCookieSettings;
  /** Signing keys; the first signs, all verify. */
  keys: readonly KeyObject[];
  store: EngineStore;
}

/**
 * The cookie value `s:<id>.<signature>` as express-session and cookie-signature write it (HMAC-SHA256, base64
 * without padding), so cookies stay interchangeable with plain express-session apps sharing the secret.
 */
function sign(sessionId: string, key: KeyObject): string {
  // A SHA-256 digest is 44 base64 characters ending in one "=", which cookie-signature strips.
  return `s:${sessionId}.${createHmac('sha256', key).update(sessionId).digest('base64').slice(0, 43)}`;
}

/**
 * The session id inside a signed cookie value, or undefined when no key produced its signature. The signature is
 * compared as text in constant time: decoding it instead would accept the variants base64 leaves ambiguous.
 *
 * @example
 * unsignSessionId('s:abc.6Kx…', keys); // 'abc'
 */
export function unsignSessionId(value: string, keys: readonly KeyObject[]): string | undefined {
  const dot = value.lastIndexOf('.');
  if (dot < 3 || value.length - dot - 1 !== 43 || value.charCodeAt(0) !== 115 /* s */ || value.charCodeAt(1) !== 58 /* : */)
    return undefined;
  const sessionId = value.slice(2, dot);
  const given = Buffer.from(value.slice(dot + 1), 'latin1');
  for (const key of keys) {
    const expected = Buffer.from(createHmac('sha256', key).update(sessionId).digest('base64').slice(0, 43), 'latin1');
    if (expected.length === given.length && timingSafeEqual(expected, given)) return sessionId;
  }
  return undefined;
}

// express-session's own classes (its typings hide both constructors), so sessions behave exactly as documented there.
const SessionClass = session.Session as unknown as new (req: Request, data?: object) => Request['session'];
const CookieClass = session.Cookie as unknown as new (options: session.CookieOptions) => session.Cookie;

function hasData(data: object): boolean {
  for (const key in data) if (key !== 'cookie') return true;
  return false;
}

/** A request's session, loaded in one or two steps (see {@link createSessionEngine}). */
export interface SessionEngine {
  /**
   * Reads the cookie and settles the session at once when there is no usable cookie (a new, empty session): returns
   * undefined then; otherwise the cookie's session id, for {@link load}.
   */
  begin(req: Request, res: Response): string | undefined;
  /**
   * Loads the session `begin` could not settle, from the session cache or the store; `next` gets the store's error,
   * if any.
   */
  load(req: Request, res: Response, cookieId: string, next: (err?: unknown) => void): void;
}

/**
 * The request side of express-session, cut down to what the kit needs: read the signed cookie, load the session
 * through the store (express-session's `Session` and `Cookie` objects, so `req.session.save/regenerate/destroy/
 * reload` work as documented), and at the end of the response save it only when its JSON changed and set the
 * cookie only when its id is new. express-session's own middleware hashes every session twice per request and
 * wraps every response in two layers. Here a loaded session is given to the request lazily: on the hot path
 * (logged in, nothing changed, `req.session` never touched) a request costs one store read (none when the
 * session is cached), no copy of the session and no write.
 *
 * @example
 * const engine = createSessionEngine({ cookie, keys, store });
 * const cookieId = engine.begin(req, res);
 * if (cookieId === undefined) next();
 * else engine.load(req, res, cookieId, next);
 */
export function createSessionEngine(settings: SessionEngineSettings): SessionEngine {
  const { store, keys, cookie } = settings;
  const signingKey = keys[0] as KeyObject;
  const cookiePrefix = `${cookie.name}=`;
  const cookieAttributes = `; Domain=${cookie.domain}; Path=${cookie.path}; HttpOnly${cookie.secure ? '; Secure' : ''}; SameSite=Lax`;
  const cookieOptions = { path: cookie.path, httpOnly: true, secure: cookie.secure, domain: cookie.domain, sameSite: 'lax' as const };

  const generate = (req: Request): void => {
    // A loaded session not built yet is built first, so the end of the response knows the cookie's id and sets the
    // cookie of the new one.
    if (loadedOf(req) !== undefined) void req.session;
    req.sessionID = randomToken(24);
    req.session = new SessionClass(req);
    req.session.cookie = new CookieClass(cookieOptions);
  };
  // Session#regenerate calls the store's generate, which express-session's middleware would otherwise install.
  (store as unknown as { generate: (req: Request) => void }).generate = generate;

  function setCookie(req: Request, res: Response, sessionId: string): void {
    // As express-session: a Secure cookie is not offered on what Express sees as plain http (check trust proxy).
    if (res.headersSent || (cookie.secure && !req.secure)) return;
    const line = `${cookiePrefix}${encodeURIComponent(sign(sessionId, signingKey))}${cookieAttributes}`;
    const previous = res.getHeader('Set-Cookie');
    if (previous === undefined) {
      res.setHeader('Set-Cookie', line);
      return;
    }
    const lines = Array.isArray(previous) ? previous.map(String) : [String(previous)];
    // A later cookie for the same name (logout's clearing one, say) wins over ours; keep only theirs then.
    if (!lines.some((existing) => existing.startsWith(cookiePrefix))) res.setHeader('Set-Cookie', [...lines, line]);
  }

  function watchEnd(req: Request, res: Response, cookieId: string | undefined): void {
    const end = res.end;
    res.end = function endAfterSessionSaved(this: Response, ...args: unknown[]): Response {
      res.end = end;
      const current = req.session as (session.Session & Partial<SessionData>) | undefined;
      const sessionId = req.sessionID;
      if (current === undefined || typeof sessionId !== 'string' || (req as unknown as Record<symbol, boolean>)[DISCARDED]) {
        return end.apply(res, args as Parameters<typeof end>);
      }
      const isNewId = sessionId !== cookieId;
      if (isNewId && !hasData(current)) return end.apply(res, args as Parameters<typeof end>);
      const text = JSON.stringify(current);
      if (savedTextOf(current) === text) {
        if (isNewId) setCookie(req, res, sessionId);
        return end.apply(res, args as Parameters<typeof end>);
      }
      if (isNewId) setCookie(req, res, sessionId);
      // Hold the end of the response until the session is stored, so the browser's next request finds it.
      store.set(sessionId, current as unknown as SessionData, () => {
        // A failed save cannot change an answer that is already decided; the next request reads the old state.
        end.apply(res, args as Parameters<typeof end>);
      });
      return res;
    } as typeof res.end;
  }

  // Cookie values (as sent, before decoding) whose signature already checked out, so a browser's every request
  // pays for neither an HMAC nor a percent-decoding. Only verified values go in, the keys never change at run
  // time, and the map is dropped whole when it fills up.
  const verified = new Map<string, string>();
  function cookieSessionId(header: string | undefined): string | undefined {
    const raw = readRawCookie(header, cookie.name);
    if (raw === AMBIGUOUS_COOKIE) {
      // Cookie tossing: another host of the domain set a second cookie of this name. Neither is trusted.
      debug('session cookie %s not used: it was sent twice with different values (a cookie set by another host or path)', cookie.name);
      return undefined;
    }
    if (raw === undefined) return undefined;
    const known = verified.get(raw);
    if (known !== undefined) return known;
    const sessionId = unsignSessionId(decodeCookieValue(raw), keys);
    if (sessionId === undefined) {
      debug('session cookie %s not used: its signature matches none of the secrets', cookie.name);
      return undefined;
    }
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.clear();
    verified.set(raw, sessionId);
    return sessionId;
  }

  /**
   * Gives the request its loaded session lazily: `req.session` is built (a fresh copy, express-session's `Session`
   * and `Cookie`) on first access, and only then is the end of the response watched for changes to save. Until
   * then the kit's checks read the frozen loaded data through {@link sessionView}, and `req.user` is its (frozen)
   * user; building `req.session` hands `req.user` the session's own, changeable user.
   * One descriptor serves every request; what each request loaded waits in its private field (`LoadedSlot`).
   */
  const deferredSession: PropertyDescriptor = {
    configurable: true,
    enumerable: true,
    get(this: Request): Request['session'] {
      const loaded = loadedOf(this)!;
      // createSession assigns req.session, which lands in the setter below.
      const restored = store.createSession(this, JSON.parse(loaded.text) as SessionData);
      rememberSavedText(restored, loaded.text);
      if (this.user !== undefined && this.user === loaded.data.user) this.user = (restored as Partial<SessionData>).user;
      return restored;
    },
    set(this: Request, value: Request['session']) {
      // The first access or assignment: the id is still the cookie's (regenerating needs the session built first).
      const cookieId = this.sessionID;
      Object.defineProperty(this, 'session', { configurable: true, enumerable: true, writable: true, value });
      LoadedSlot.put(this, undefined);
      watchEnd(this, this.res!, cookieId);
    },
  };

  function deferSession(req: Request, loaded: LoadedSession): void {
    // Inspecting or copying the request must not print or carry the stored session (it may hold an OpenID Connect
    // access token), as the lazy `req.session` accessor does not.
    LoadedSlot.put(req, loaded);
    Object.defineProperty(req, 'session', deferredSession);
  }

  return {
    begin(req: Request, res: Response): string | undefined {
      // As express-session: its Session methods and apps reach the store through it.
      req.sessionStore = store as unknown as Request['sessionStore'];
      const cookieId = cookieSessionId(req.headers.cookie);
      if (cookieId === undefined) {
        generate(req);
        watchEnd(req, res, undefined);
        return undefined;
      }
      req.sessionID = cookieId;
      return cookieId;
    },
    load(req: Request, res: Response, cookieId: string, next: (err?: unknown) => void): void {
      const fromCache =
        store.loadCached !== undefined &&
        store.loadCached(cookieId, (cached) => {
          if (cached === undefined) {
            loadLive(req, res, cookieId, next);
            return;
          }
          deferSession(req, cached);
          next();
        });
      if (!fromCache) loadLive(req, res, cookieId, next);
    },
  };

  function loadLive(req: Request, res: Response, cookieId: string, next: (err?: unknown) => void): void {
    store.loadLive(cookieId, req).then(
      (loaded) => {
        if (loaded === null) {
          debug('session cookie %s names no live session (ended, expired or unknown)', cookie.name);
          generate(req);
          watchEnd(req, res, cookieId);
        } else {
          deferSession(req, loaded);
        }
        next();
      },
      (error: unknown) => next(error),
    );
  }
}
