import { randomUUID } from 'node:crypto';
import type { KeyValueStore } from '../store/port';
import { randomToken } from '../util/random-token';
import {
  applyTransition,
  effectiveStatus,
  parseRecord,
  type QrLoginRecord,
  type QrLoginStatus,
  type QrLoginTransition,
  type QrTransitionRefusal,
} from './qr-state';

/** What a browser learns over SSE or polling when a request changes. */
export interface QrStatusEvent {
  status: QrLoginStatus;
  /** Epoch milliseconds of the change. */
  at: number;
}

/** An authorization code minted at confirmation, redeemable once at the token endpoint. */
export interface QrCodeRecord {
  v: 1;
  appid: string;
  redirectUri: string;
  userId: string;
  authCode: string;
  scope: string;
  issuedAt: number;
  /** Set by the one redemption that won; a later presentation revokes this grant. */
  grantId?: string;
  redeemedAt?: number;
}

/** Result of {@link QrLoginRequests.transition}. */
export type QrStoredTransitionResult =
  { ok: true; record: QrLoginRecord } | { ok: false; reason: QrTransitionRefusal | 'not_found'; status?: QrLoginStatus };

/** Result of {@link QrLoginRequests.redeemCode}. */
export type QrRedeemResult =
  | { ok: true; code: QrCodeRecord & { grantId: string } }
  | { ok: false; reason: 'invalid_code' }
  | { ok: false; reason: 'code_used'; grantId: string };

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{16,128}$/;
// Guesses kept per instance (see QrLoginRequests.lastWritten): about 1 KB each, so at most a few MB.
const LAST_WRITTEN_LIMIT = 4096;

/**
 * True when a string can be an auth_code or code this provider minted; anything else is refused before a lookup.
 *
 * @example
 * if (!isWellFormedToken(req.params.authCode)) throw new NotFoundError();
 */
export function isWellFormedToken(value: unknown): value is string {
  return typeof value === 'string' && TOKEN_SHAPE.test(value);
}

/**
 * The QR login requests and authorization codes in the kit's store. Each request is one JSON value under one key
 * (`qr:{authCode}`); every transition is a compare-and-set against the value that was read, so of concurrent
 * transitions exactly one wins, on any number of instances. Changes are published on `qr:{authCode}:events`.
 *
 * @example
 * const requests = new QrLoginRequests(store);
 * const record = await requests.create({ appid, redirectUri, state, bindingHash, requester, validitySeconds: 180 });
 */
export class QrLoginRequests {
  /**
   * The stored text each record returned by {@link get} was parsed from, so that {@link collect} can compare-and-set
   * against it directly instead of reading the key a second time.
   */
  private readonly readAs = new WeakMap<QrLoginRecord, string>();
  /**
   * The text this instance last wrote under a key (a request or a code), taken by the next transition or redemption
   * of that key as its first guess of the current value: the compare-and-set against it either wins, and then the
   * guess was the current value, or loses, and then the key is read as usual. It saves the read of each step that
   * follows a step of the same login on the same instance; it never decides anything by itself.
   */
  private readonly lastWritten = new Map<string, string>();

  constructor(
    private readonly store: KeyValueStore,
    /** How long a finished or expired request stays readable (so the answer is 410, not 404). */
    private readonly retentionSeconds = 600,
    private readonly now: () => number = Date.now,
  ) {}

  private static recordKey(authCode: string): string {
    return `qr:{${authCode}}`;
  }

  private static channel(authCode: string): string {
    return `qr:{${authCode}}:events`;
  }

  private static codeKey(code: string): string {
    return `qr:code:{${code}}`;
  }

  private remember(key: string, raw: string): void {
    // Bounded: the oldest guess goes first (a Map keeps insertion order); a forgotten guess only costs a read.
    if (this.lastWritten.size >= LAST_WRITTEN_LIMIT) this.lastWritten.delete(this.lastWritten.keys().next().value as string);
    this.lastWritten.set(key, raw);
  }

  /** The guess for a key's current value, used once: a second caller reads the key. */
  private guess(key: string): string | undefined {
    const raw = this.lastWritten.get(key);
    if (raw !== undefined) this.lastWritten.delete(key);
    return raw;
  }

  /** Stores a new pending request. `authCode` is minted here unless given (the caller may need it first, for a cookie path). */
  async create(input: {
    authCode?: string;
    appid: string;
    redirectUri: string;
    state: string;
    bindingHash: string;
    requester: { ip: string; userAgent: string };
    validitySeconds: number;
  }): Promise<QrLoginRecord> {
    const now = this.now();
    const record: QrLoginRecord = {
      v: 1,
      authCode: input.authCode ?? randomToken(24),
      appid: input.appid,
      redirectUri: input.redirectUri,
      state: input.state,
      status: 'pending',
      createdAt: now,
      expiresAt: now + input.validitySeconds * 1000,
      bindingHash: input.bindingHash,
      requester: input.requester,
    };
    const key = QrLoginRequests.recordKey(record.authCode);
    const raw = JSON.stringify(record);
    const created = await this.store.setIfAbsent(key, raw, input.validitySeconds + this.retentionSeconds);
    // 192 random bits do not collide; a false here means the store misbehaves, which must not hand out a shared code.
    if (!created) throw new Error('QrLoginRequests: auth_code collision');
    this.remember(key, raw);
    return record;
  }

  async get(authCode: string): Promise<QrLoginRecord | null> {
    if (!isWellFormedToken(authCode)) return null;
    const raw = await this.store.get(QrLoginRequests.recordKey(authCode));
    const record = parseRecord(raw);
    if (record && raw !== null) this.readAs.set(record, raw);
    return record;
  }

  /**
   * Applies a transition atomically. When the compare-and-set loses against a concurrent writer the record is read
   * again and the transition re-judged, so the loser gets the right refusal (usually 409) rather than a retry.
   */
  async transition(
    authCode: string,
    to: QrLoginTransition,
    userId: string,
    codeLifetimeSeconds: number,
  ): Promise<QrStoredTransitionResult> {
    if (!isWellFormedToken(authCode)) return { ok: false, reason: 'not_found' };
    const key = QrLoginRequests.recordKey(authCode);
    // First against the value this instance wrote last, if any: a guess that is refused or loses its
    // compare-and-set proves nothing, so then the key is read and judged as usual.
    const guessed = this.guess(key);
    if (guessed !== undefined) {
      const won = await this.applyAgainst(key, guessed, to, userId, codeLifetimeSeconds);
      if (won?.ok) return won;
    }
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const raw = await this.store.get(key);
      if (raw === null) return { ok: false, reason: 'not_found' };
      const result = await this.applyAgainst(key, raw, to, userId, codeLifetimeSeconds);
      if (result) return result;
    }
    const latest = await this.get(authCode);
    return { ok: false, reason: 'illegal_transition', ...(latest ? { status: effectiveStatus(latest, this.now()) } : {}) };
  }

  /**
   * Judges a transition against `raw` and writes it with one compare-and-set against `raw`, which also announces the
   * new status to the request's subscribers. Undefined when the compare-and-set lost (the key no longer holds `raw`);
   * a refusal when `raw` does not allow the transition.
   */
  private async applyAgainst(
    key: string,
    raw: string,
    to: QrLoginTransition,
    userId: string,
    codeLifetimeSeconds: number,
  ): Promise<QrStoredTransitionResult | undefined> {
    const record = parseRecord(raw);
    if (!record) return { ok: false, reason: 'not_found' };
    const now = this.now();
    const result = applyTransition(record, to, userId, now, () => randomToken(24));
    if (!result.ok) return result;
    const next = JSON.stringify(result.record);
    const event: QrStatusEvent = { status: result.record.status, at: now };
    // A confirmation's code is written before the swap that reveals it, in the same round trip on a single node, so
    // whoever hears of the confirmation (its subscribers, a status read) finds the code already stored.
    const code = result.record.status === 'confirmed' && result.record.code ? this.codeEntry(result.record, userId) : undefined;
    const [, swapped] = await Promise.all([
      // The used marker must outlive the code's validity, so a replay inside the validity is recognised as a replay.
      code && this.store.set(code.key, code.raw, codeLifetimeSeconds),
      this.swapAndAnnounce(key, raw, next, record.authCode, event),
    ]);
    if (!swapped) {
      // The code of a swap that lost was never revealed to anyone; it goes.
      if (code) await this.store.delete(code.key);
      return undefined;
    }
    this.remember(key, next);
    if (code) this.remember(code.key, code.raw);
    // The phone is told "done" only once the decision would survive a failover (with waitForReplicas).
    await this.store.confirmWrites(code ? [key, code.key] : [key]);
    return { ok: true, record: result.record };
  }

  /** Swaps `raw` for `next` and publishes `event` when the swap happened, in one step where the store can. */
  private async swapAndAnnounce(key: string, raw: string, next: string, authCode: string, event: QrStatusEvent): Promise<boolean> {
    const channel = QrLoginRequests.channel(authCode);
    if (this.store.compareAndSetThenPublish) return this.store.compareAndSetThenPublish(key, raw, next, channel, JSON.stringify(event));
    const swapped = await this.store.compareAndSet(key, raw, next);
    if (swapped) await this.store.publish(channel, JSON.stringify(event));
    return swapped;
  }

  /**
   * Marks a confirmed request as collected by its browser; true only for the first caller, so the redirect with
   * the code is handed out once.
   */
  async collect(record: QrLoginRecord): Promise<boolean> {
    const key = QrLoginRequests.recordKey(record.authCode);
    // Collection is a request's last step: nothing will use this instance's guess of it any more.
    this.lastWritten.delete(key);
    const readAs = this.readAs.get(record);
    // The record as it was read: one compare-and-set decides. It loses when anything changed since (another
    // collection, above all), and then the current value is read and judged as below.
    const asRead = readAs === undefined ? null : parseRecord(readAs);
    if (readAs !== undefined && asRead && asRead.status === 'confirmed' && !asRead.collected) {
      if (await this.store.compareAndSet(key, readAs, JSON.stringify({ ...asRead, collected: true }))) return true;
    }
    const raw = await this.store.get(key);
    const current = parseRecord(raw);
    if (!current || raw === null || current.status !== 'confirmed' || current.collected) return false;
    return this.store.compareAndSet(key, raw, JSON.stringify({ ...current, collected: true }));
  }

  private codeEntry(record: QrLoginRecord, userId: string): { key: string; raw: string } {
    const code: QrCodeRecord = {
      v: 1,
      appid: record.appid,
      redirectUri: record.redirectUri,
      userId,
      authCode: record.authCode,
      scope: 'snsapi_login',
      issuedAt: this.now(),
    };
    return { key: QrLoginRequests.codeKey(record.code as string), raw: JSON.stringify(code) };
  }

  /**
   * Redeems an authorization code for `appid`, once. Of concurrent redemptions exactly one gets `ok`; every other
   * presentation learns the winning grant's id, so the caller can revoke what was issued from the code.
   */
  async redeemCode(code: string, appid: string): Promise<QrRedeemResult> {
    if (!isWellFormedToken(code)) return { ok: false, reason: 'invalid_code' };
    const key = QrLoginRequests.codeKey(code);
    // The code as this instance wrote it, when it did: only a winning compare-and-set against it is trusted.
    const guessed = this.guess(key);
    if (guessed !== undefined) {
      const record = JSON.parse(guessed) as QrCodeRecord;
      if (record.appid === appid && !record.grantId) {
        const redeemed = { ...record, grantId: randomUUID(), redeemedAt: this.now() };
        if (await this.store.compareAndSet(key, guessed, JSON.stringify(redeemed))) return { ok: true, code: redeemed };
      }
    }
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const raw = await this.store.get(key);
      if (raw === null) return { ok: false, reason: 'invalid_code' };
      const record = JSON.parse(raw) as QrCodeRecord;
      if (record.appid !== appid) return { ok: false, reason: 'invalid_code' };
      if (record.grantId) return { ok: false, reason: 'code_used', grantId: record.grantId };
      const redeemed = { ...record, grantId: randomUUID(), redeemedAt: this.now() };
      if (await this.store.compareAndSet(key, raw, JSON.stringify(redeemed))) return { ok: true, code: redeemed };
    }
    return { ok: false, reason: 'invalid_code' };
  }

  async publish(authCode: string, event: QrStatusEvent): Promise<void> {
    await this.store.publish(QrLoginRequests.channel(authCode), JSON.stringify(event));
  }

  /** Listens for status changes of one request on any instance; resolves once listening, to the unsubscribe function. */
  subscribe(authCode: string, listener: (event: QrStatusEvent) => void): Promise<() => Promise<void>> {
    return this.store.subscribe(QrLoginRequests.channel(authCode), (message) => {
      try {
        listener(JSON.parse(message) as QrStatusEvent);
      } catch {
        // A malformed message on our channel is ignored rather than crashing the subscriber.
      }
    });
  }
}
