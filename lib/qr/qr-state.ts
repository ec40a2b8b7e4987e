/**
 * The QR login request's state machine, pure: no store, no clock of its own, no Express.
 *
 *   pending ──scan──▶ scanned ──confirm──▶ confirmed
 *      │                 └──────deny─────▶ denied
 *      └──(validity passes, from pending or scanned)──▶ expired
 *
 * `expired` is never written: it is derived from `expiresAt`, so an unattended request expires without a timer.
 */

/** Status of a QR login request. */
export type QrLoginStatus = 'pending' | 'scanned' | 'confirmed' | 'denied' | 'expired';

/** The statuses a client may ask for with PATCH. */
export type QrLoginTransition = 'scanned' | 'confirmed' | 'denied';

/** One QR login request as the provider stores it (one JSON value under one key). */
export interface QrLoginRecord {
  /** Format version, so a rolling deploy can recognise old records. */
  v: 1;
  authCode: string;
  appid: string;
  redirectUri: string;
  /** The relying app's `state`, echoed on the redirect. */
  state: string;
  /** Stored status; `expired` is derived by {@link effectiveStatus}. */
  status: Exclude<QrLoginStatus, 'expired'>;
  /** Epoch milliseconds. */
  createdAt: number;
  expiresAt: number;
  /** SHA-256 (base64url) of the binding cookie of the browser that created the request. */
  bindingHash: string;
  /** Where the request came from, shown to the scanning user against QRLjacking. */
  requester: { ip: string; userAgent: string };
  /** The user who scanned; only they may confirm or deny. */
  scannedBy?: string;
  scannedAt?: number;
  decidedAt?: number;
  /** The authorization code minted at confirmation, collected once by the binding browser. */
  code?: string;
  /** True once the creating browser was redirected with the code. */
  collected?: boolean;
}

/** Why a transition was refused. `not_scanner` maps to 403, `expired` to 410, the rest to 409. */
export type QrTransitionRefusal = 'expired' | 'illegal_transition' | 'not_scanner';

/** Result of {@link applyTransition}. */
export type QrTransitionResult = { ok: true; record: QrLoginRecord } | { ok: false; reason: QrTransitionRefusal; status: QrLoginStatus };

const ALLOWED: Record<QrLoginStatus, readonly QrLoginTransition[]> = {
  pending: ['scanned'],
  scanned: ['confirmed', 'denied'],
  confirmed: [],
  denied: [],
  expired: [],
};

/**
 * The status a request has at `now`: the stored one, or `expired` once the validity has passed without a decision.
 *
 * @example
 * effectiveStatus(record, Date.now()) === 'expired'
 */
export function effectiveStatus(record: QrLoginRecord, now: number): QrLoginStatus {
  if ((record.status === 'pending' || record.status === 'scanned') && now >= record.expiresAt) return 'expired';
  return record.status;
}

/**
 * True for a status no transition leaves.
 *
 * @example
 * if (isTerminal(status)) stream.end();
 */
export function isTerminal(status: QrLoginStatus): boolean {
  return ALLOWED[status].length === 0;
}

/**
 * Computes the next record for a requested transition by `userId` at `now`, or why it is refused. The caller
 * writes the result with a compare-and-set against the record it read, so concurrent transitions have one winner.
 *
 * @example
 * const result = applyTransition(record, 'scanned', 'user-1', Date.now());
 * if (result.ok) await store.compareAndSet(key, JSON.stringify(record), JSON.stringify(result.record));
 */
export function applyTransition(
  record: QrLoginRecord,
  to: QrLoginTransition,
  userId: string,
  now: number,
  mintCode?: () => string,
): QrTransitionResult {
  const status = effectiveStatus(record, now);
  if (status === 'expired') return { ok: false, reason: 'expired', status };
  if (!ALLOWED[status].includes(to)) return { ok: false, reason: 'illegal_transition', status };
  if (to === 'scanned') return { ok: true, record: { ...record, status: 'scanned', scannedBy: userId, scannedAt: now } };
  // Only the user who scanned may decide: a second phone that learned the auth_code cannot confirm for someone else.
  if (record.scannedBy !== userId) return { ok: false, reason: 'not_scanner', status };
  if (to === 'denied') return { ok: true, record: { ...record, status: 'denied', decidedAt: now } };
  if (!mintCode) throw new TypeError('applyTransition: confirming needs mintCode to create the authorization code');
  return { ok: true, record: { ...record, status: 'confirmed', decidedAt: now, code: mintCode() } };
}

/**
 * Parses a stored record; returns null for anything that is not a version-1 record.
 *
 * @example
 * const record = parseRecord(await store.get(key));
 */
export function parseRecord(value: string | null): QrLoginRecord | null {
  if (value === null) return null;
  try {
    const parsed = JSON.parse(value) as QrLoginRecord;
    return parsed && parsed.v === 1 && typeof parsed.authCode === 'string' ? parsed : null;
  } catch {
    return null;
  }
}
