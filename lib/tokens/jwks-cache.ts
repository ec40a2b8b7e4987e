import type { KeyObject } from 'node:crypto';
import { EVENTS_OPTION, eventsOption } from '../events/event-source';
import type { SecurityEvents } from '../events/security-events';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, refuseInProduction, warnOnce, within, type OptionSchema } from '../util/options';
import { isAcceptableKid, isHmacAlgorithm, isSupportedAlgorithm } from './algorithms';
import { TokenError } from './errors';
import { downloadKeySet, type CachedKey } from './jwks-document';
import type { KeyResolver } from './key-set';

/** Options of {@link JwksCache}. */
export interface JwksCacheOptions {
  /** The JWKS URL. `https:` only, except `http:` on a loopback host (tests, a sidecar). */
  uri: string;
  /** Abort a fetch after this long. Default 2. */
  timeoutSeconds?: number;
  /** Least time between two refetches caused by an unknown kid, so random kids cannot hammer the endpoint. Default 30. */
  cooldownSeconds?: number;
  /** Longest time a fetched key set is used before it is fetched again. Default 600 (10 min). */
  maxAgeSeconds?: number;
  /** Shortest cache time, whatever `Cache-Control` says (`no-store`, `max-age=0`). Default 30 (or maxAgeSeconds if smaller). */
  minAgeSeconds?: number;
  /**
   * How long past its cache lifetime the last good key set keeps verifying while the endpoint fails; beyond it,
   * verification fails closed (503). Default 3600.
   */
  staleIfErrorSeconds?: number;
  /** Largest JWKS body accepted. Default 256 KiB. */
  maxResponseBytes?: number;
  /** The fetch implementation. Default the global `fetch`. */
  fetch?: typeof fetch;
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number;
  /**
   * Accept an `http:` URL on any host: an identity provider on a development network (the OpenID relying party
   * passes its own `allowInsecureLocalDevelopment`). Refused when `NODE_ENV=production`; warns once. Default false.
   */
  allowInsecureLocalDevelopment?: boolean;
  /** Counts every fetch of the key set in `sso_jwks_refreshes_total` by outcome. Default none. */
  events?: SecurityEvents;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
// The background refresh runs when this share of the cache lifetime has passed, so the next set arrives before
// the current one expires even when the endpoint takes its whole timeout.
const REFRESH_AHEAD_SHARE = 0.8;
// Never refresh in the background more often than this, whatever the endpoint's Cache-Control says.
const MIN_BACKGROUND_INTERVAL_MS = 1000;
const MAX_TIMER_MS = 2 ** 31 - 1;
const debug = debugChannel('token');

function checkUri(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `must be an absolute URL such as "https://auth.example.test/.well-known/jwks.json", got ${JSON.stringify(uri)}`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `must use https:, got ${JSON.stringify(uri)}`;
  if (url.username || url.password) return 'must not carry credentials';
  return undefined;
}

/** Plain http only on a loopback host, or anywhere under `allowInsecureLocalDevelopment` (never in production). */
function checkTransport(uri: string, insecure: boolean): void {
  if (insecure) {
    refuseInProduction('JwksCache');
    warnOnce('JwksCache:insecure', 'JwksCache: allowInsecureLocalDevelopment fetches keys over plain http. Never do this in production.');
  }
  const url = new URL(uri);
  if (url.protocol === 'http:' && !insecure && !LOOPBACK_HOSTS.has(url.hostname)) {
    throw new OptionsError(`JwksCache: uri must use https: (http: is allowed only on a loopback host), got ${JSON.stringify(uri)}`);
  }
}

/** The tuning options of {@link JwksCache} (all but `uri`), shared with `requireBearer({ jwks })`. */
export const JWKS_TUNING_SCHEMA: OptionSchema = {
  // Wide enough for the OpenID relying party, which passes its own per-call deadline.
  timeoutSeconds: { type: 'number', expected: 'a number of seconds from 0.001 to 600', check: within(0.001, 600) },
  cooldownSeconds: { type: 'number', expected: 'a number of seconds from 0 to 3600', check: within(0, 3600) },
  maxAgeSeconds: { type: 'number', expected: 'a number of seconds from 0.01 to 86400', check: within(0.01, 86_400) },
  minAgeSeconds: { type: 'number', expected: 'a number of seconds from 0 to 86400', check: within(0, 86_400) },
  staleIfErrorSeconds: { type: 'number', expected: 'a number of seconds from 0 to 604800', check: within(0, 604_800) },
  maxResponseBytes: { type: 'integer', expected: 'a whole number of bytes from 1 to 16777216', check: within(1, 16 * 1024 * 1024) },
  fetch: { type: 'function', expected: 'a fetch implementation' },
  now: { type: 'function', expected: 'a function returning epoch milliseconds' },
};

const SCHEMA: OptionSchema = {
  uri: {
    type: 'string',
    required: true,
    expected: 'the JWKS URL, e.g. "https://auth.example.test/.well-known/jwks.json"',
    check: checkUri,
  },
  ...JWKS_TUNING_SCHEMA,
  allowInsecureLocalDevelopment: { type: 'boolean' },
  events: EVENTS_OPTION,
};

/**
 * Remote verification keys from a JWKS endpoint, converted to `KeyObject`s once per fetch. While the cache is in
 * use it refreshes the key set in the background before the set's lifetime (`Cache-Control: max-age` within
 * [`minAgeSeconds`, `maxAgeSeconds`]) runs out, so a key the issuer publishes before signing with it is known when
 * its first token arrives. An unknown kid triggers at most one refetch per `cooldownSeconds`; concurrent fetches
 * are one (single-flight); a fetch is aborted after `timeoutSeconds`. When the endpoint fails, the last good keys
 * keep verifying for `staleIfErrorSeconds` past their lifetime; with no usable keys, `getKey` throws
 * {@link KeySourceUnavailableError} (503 in middlewares).
 *
 * @example
 * const jwks = new JwksCache({ uri: 'https://auth.example.test/.well-known/jwks.json' });
 * const key = await jwks.getKey(header.kid, header.alg);
 */
export class JwksCache implements KeyResolver {
  readonly uri: string;
  private readonly timeoutMs: number;
  private readonly cooldownMs: number;
  private readonly maxAgeMs: number;
  private readonly minAgeMs: number;
  private readonly staleIfErrorMs: number;
  private readonly retryDelayMs: number;
  private readonly maxResponseBytes: number;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private keys: CachedKey[] | undefined;
  private freshUntil = 0;
  private staleUntil = 0;
  private refreshAt = 0;
  private lastError: unknown;
  private retryAt = 0;
  private lastMissRefetchAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private usedSinceRefresh = false;
  private fetchCount = 0;
  private readonly events: SecurityEvents | undefined;

  constructor(options: JwksCacheOptions) {
    checkOptions('JwksCache', options, SCHEMA);
    checkTransport(options.uri, options.allowInsecureLocalDevelopment === true);
    this.uri = new URL(options.uri).href;
    this.timeoutMs = (options.timeoutSeconds ?? 2) * 1000;
    this.cooldownMs = (options.cooldownSeconds ?? 30) * 1000;
    this.maxAgeMs = (options.maxAgeSeconds ?? 600) * 1000;
    this.minAgeMs = Math.min(this.maxAgeMs, (options.minAgeSeconds ?? 30) * 1000);
    this.staleIfErrorMs = (options.staleIfErrorSeconds ?? 3600) * 1000;
    // A failing endpoint is retried after the cooldown (at least a second), not on every request.
    this.retryDelayMs = Math.min(this.maxAgeMs, Math.max(this.cooldownMs, 1000));
    this.maxResponseBytes = options.maxResponseBytes ?? 256 * 1024;
    this.fetchImpl = options.fetch ?? fetch;
    this.now = options.now ?? Date.now;
    this.events = eventsOption('JwksCache', options.events);
  }

  /** How many fetches were started so far (for health output and tests). */
  get fetches(): number {
    return this.fetchCount;
  }

  /**
   * The key for a token header. Without a kid, only the single key usable with `alg` is accepted.
   *
   * @example
   * const key = await jwks.getKey('2026-11', 'RS256');
   */
  async getKey(kid: string | undefined, alg: string): Promise<KeyObject> {
    if (!isSupportedAlgorithm(alg) || isHmacAlgorithm(alg)) throw new TokenError('unsupported_alg');
    if (kid !== undefined && !isAcceptableKid(kid)) throw new TokenError('unknown_kid');
    this.usedSinceRefresh = true;
    if (this.timer === undefined && this.inflight === undefined) this.scheduleBackgroundRefresh();
    await this.ensureUsable();
    const found = this.lookup(kid, alg);
    if (found) return found;
    const now = this.now();
    if (this.inflight || now - this.lastMissRefetchAt >= this.cooldownMs) {
      if (!this.inflight) this.lastMissRefetchAt = now;
      try {
        await this.refresh();
      } catch {
        // The endpoint is down: the kid stays unknown (401), the cached keys stay usable.
      }
      const refetched = this.lookup(kid, alg);
      if (refetched) return refetched;
    } else if (debug.enabled) {
      debug('unknown kid %s: no refetch, the last one for an unknown kid was %d ms ago', kid ?? '(none)', now - this.lastMissRefetchAt);
    }
    throw new TokenError(kid !== undefined && this.keys?.some((key) => key.kid === kid) ? 'alg_mismatch' : 'unknown_kid');
  }

  /**
   * Fetches the key set now (single-flight: concurrent callers share one request). Call it at startup to fail
   * fast on a wrong URL.
   *
   * @example
   * await jwks.refresh();
   */
  refresh(): Promise<void> {
    this.inflight ??= this.load().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** Makes sure the keys may be used: fresh, or stale within `staleIfErrorSeconds` while the endpoint fails. */
  private async ensureUsable(): Promise<void> {
    const now = this.now();
    if (this.keys !== undefined && now < this.freshUntil) return;
    if (this.lastError !== undefined && now < this.retryAt && this.inflight === undefined) {
      // A fetch failed moments ago; requests must not hammer the endpoint. The background retry runs meanwhile.
      if (this.keys !== undefined && now < this.staleUntil) return;
      throw this.lastError;
    }
    try {
      await this.refresh();
    } catch (error) {
      // Stale-if-error (RFC 5861 §4): an endpoint outage must not log everyone out while we still hold its keys.
      if (this.keys === undefined || this.now() >= this.staleUntil) throw error;
    }
  }

  private lookup(kid: string | undefined, alg: string): KeyObject | undefined {
    const keys = this.keys;
    if (!keys) return undefined;
    if (kid === undefined) {
      const candidates = keys.filter((key) => key.algorithms.has(alg));
      return candidates.length === 1 ? candidates[0]?.key : undefined;
    }
    return keys.find((key) => key.kid === kid && key.algorithms.has(alg))?.key;
  }

  private async load(): Promise<void> {
    this.fetchCount++;
    try {
      const { keys, lifetimeMs } = await downloadKeySet({
        uri: this.uri,
        timeoutMs: this.timeoutMs,
        maxResponseBytes: this.maxResponseBytes,
        minAgeMs: this.minAgeMs,
        maxAgeMs: this.maxAgeMs,
        fetch: this.fetchImpl,
      });
      const now = this.now();
      this.keys = keys;
      this.lastError = undefined;
      this.freshUntil = now + lifetimeMs;
      this.staleUntil = this.freshUntil + this.staleIfErrorMs;
      this.refreshAt = now + Math.max(lifetimeMs * REFRESH_AHEAD_SHARE, MIN_BACKGROUND_INTERVAL_MS);
      this.events?.metrics.jwksRefreshed('success');
    } catch (error) {
      this.events?.metrics.jwksRefreshed('failure');
      const now = this.now();
      this.lastError = error;
      this.retryAt = now + this.retryDelayMs;
      this.refreshAt = this.retryAt;
      if (debug.enabled) {
        const failure = (error as { failure?: unknown }).failure ?? 'unknown';
        debug('JWKS fetch failed (%s); %s', failure, this.keys === undefined ? 'no keys to verify with' : 'serving the last good keys');
      }
      throw error;
    } finally {
      this.scheduleBackgroundRefresh();
    }
  }

  /**
   * Arms the one background timer. When it fires, the key set is refreshed only if tokens were verified since
   * the last refresh: an idle cache goes quiet (and can be garbage-collected) instead of polling forever.
   */
  private scheduleBackgroundRefresh(): void {
    if (this.timer !== undefined || (this.keys === undefined && this.lastError === undefined)) return;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, this.refreshAt - this.now()));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.usedSinceRefresh) return;
      this.usedSinceRefresh = false;
      // The outcome is recorded by load(); nobody waits on a background refresh.
      this.refresh().catch(() => undefined);
    }, delay);
    this.timer.unref();
  }
}
