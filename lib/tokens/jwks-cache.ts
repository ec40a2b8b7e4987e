import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { isAcceptableKid, isHmacAlgorithm, isSupportedAlgorithm, keyFitsAlgorithm } from './algorithms';
import { KeySourceUnavailableError, TokenError } from './errors';
import type { KeyResolver } from './key-set';

/** Options of {@link JwksCache}. */
export interface JwksCacheOptions {
  /** The JWKS URL. `https:` only, except `http:` on a loopback host (tests, a sidecar). */
  uri: string;
  /** Abort a fetch after this long. Default 2000 ms. */
  timeoutMs?: number;
  /** Least time between two refetches caused by an unknown kid, so random kids cannot hammer the endpoint. Default 30000 ms. */
  cooldownMs?: number;
  /** Longest time a fetched key set is used before it is fetched again. Default 600000 ms (10 min). */
  maxAgeMs?: number;
  /** Shortest cache time, whatever `Cache-Control` says (`no-store`, `max-age=0`). Default 30000 ms (or maxAgeMs if smaller). */
  minAgeMs?: number;
  /** Largest JWKS body accepted. Default 256 KiB. */
  maxResponseBytes?: number;
  /** The fetch implementation. Default the global `fetch`. */
  fetch?: typeof fetch;
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number;
}

interface CachedKey {
  kid: string | undefined;
  algorithms: ReadonlySet<string>;
  key: KeyObject;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const MAX_KEYS = 100;

function positiveMs(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`JwksCache: ${name} must be a positive number of milliseconds, got ${JSON.stringify(value)}`);
  }
  return value;
}

function nonNegativeMs(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`JwksCache: ${name} must be a number of milliseconds ≥ 0, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Cache lifetime from `Cache-Control`: max-age within [min, max]; no-store/no-cache count as 0. */
function cacheLifetime(header: string | null, minMs: number, maxMs: number): number {
  if (!header) return maxMs;
  const directives = header.toLowerCase();
  if (/(^|,)\s*(no-store|no-cache)\s*(,|$)/.test(directives)) return minMs;
  const match = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/.exec(directives);
  if (!match?.[1]) return maxMs;
  return Math.min(maxMs, Math.max(minMs, Number(match[1]) * 1000));
}

/** Algorithms a published JWK may verify: its own `alg` when given, else what its type allows. */
function algorithmsFor(jwk: Record<string, unknown>, key: KeyObject): Set<string> {
  if (jwk.alg !== undefined) {
    return typeof jwk.alg === 'string' && isSupportedAlgorithm(jwk.alg) && !isHmacAlgorithm(jwk.alg) && keyFitsAlgorithm(key, jwk.alg)
      ? new Set([jwk.alg])
      : new Set();
  }
  return new Set(['RS256', 'PS256', 'ES256'].filter((alg) => keyFitsAlgorithm(key, alg)));
}

function toCachedKey(entry: unknown): CachedKey | undefined {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
  const jwk = entry as Record<string, unknown>;
  if (jwk.use !== undefined && jwk.use !== 'sig') return undefined;
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) return undefined;
  // Only public-key types: a symmetric ("oct") key published in a JWKS would be a secret everyone can read.
  if (jwk.kty !== 'RSA' && jwk.kty !== 'EC') return undefined;
  if (jwk.kid !== undefined && !isAcceptableKid(jwk.kid)) return undefined;
  if (typeof jwk.d === 'string') return undefined; // a private key was published by mistake; do not use it
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return undefined;
  }
  const algorithms = algorithmsFor(jwk, key);
  // keyFitsAlgorithm already refuses RSA under 2048 bits and curves other than P-256.
  if (algorithms.size === 0) return undefined;
  return { kid: jwk.kid as string | undefined, algorithms, key };
}

/**
 * Remote verification keys from a JWKS endpoint, converted to `KeyObject`s once per fetch. Lookup by kid; an
 * unknown kid triggers one refetch (at most one per `cooldownMs`); concurrent misses share one fetch; a fetch is
 * aborted after `timeoutMs`; when the endpoint fails, the keys already cached keep working (stale-while-error).
 * With no keys at all and no answer, `getKey` throws {@link KeySourceUnavailableError} (503 in middlewares).
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
  private readonly maxResponseBytes: number;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private keys: CachedKey[] | undefined;
  private expiresAt = 0;
  private lastMissRefetchAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;
  private fetchCount = 0;

  constructor(options: JwksCacheOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('JwksCache: pass options { uri }');
    let url: URL;
    try {
      url = new URL(String(options.uri));
    } catch {
      throw new TypeError(
        `JwksCache: uri must be an absolute URL such as "https://auth.example.test/.well-known/jwks.json", got ${JSON.stringify(options.uri)}`,
      );
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
      throw new TypeError(`JwksCache: uri must use https: (http: is allowed only on a loopback host), got ${JSON.stringify(options.uri)}`);
    }
    if (url.username || url.password) throw new TypeError('JwksCache: uri must not carry credentials');
    this.uri = url.href;
    this.timeoutMs = positiveMs('timeoutMs', options.timeoutMs, 2000);
    this.cooldownMs = nonNegativeMs('cooldownMs', options.cooldownMs, 30_000);
    this.maxAgeMs = positiveMs('maxAgeMs', options.maxAgeMs, 600_000);
    this.minAgeMs = Math.min(this.maxAgeMs, nonNegativeMs('minAgeMs', options.minAgeMs, 30_000));
    this.maxResponseBytes = positiveMs('maxResponseBytes', options.maxResponseBytes, 256 * 1024);
    if (options.fetch !== undefined && typeof options.fetch !== 'function') throw new TypeError('JwksCache: fetch must be a function');
    this.fetchImpl = options.fetch ?? fetch;
    if (options.now !== undefined && typeof options.now !== 'function')
      throw new TypeError('JwksCache: now must be a function returning epoch milliseconds');
    this.now = options.now ?? Date.now;
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
    if (this.keys === undefined || this.now() >= this.expiresAt) {
      try {
        await this.refresh();
      } catch (error) {
        // Stale-while-error: an endpoint outage must not log everyone out while we still hold its keys.
        if (this.keys === undefined) throw error;
      }
    }
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
      const { keys, lifetimeMs } = await this.download();
      this.keys = keys;
      this.expiresAt = this.now() + lifetimeMs;
    } catch (error) {
      // Retry a failed endpoint after the cooldown, not on every request; the stale keys serve meanwhile.
      if (this.keys !== undefined) this.expiresAt = this.now() + Math.min(this.maxAgeMs, Math.max(this.cooldownMs, 1000));
      throw error;
    }
  }

  private async download(): Promise<{ keys: CachedKey[]; lifetimeMs: number }> {
    let response: Response;
    let body: string;
    try {
      response = await this.fetchImpl(this.uri, {
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: { accept: 'application/jwk-set+json, application/json' },
        redirect: 'error',
      });
      const declared = Number(response.headers.get('content-length') ?? '0');
      if (declared > this.maxResponseBytes) {
        await response.body?.cancel();
        throw new KeySourceUnavailableError('bad_response');
      }
      body = await response.text();
    } catch (error) {
      if (error instanceof KeySourceUnavailableError) throw error;
      const name = (error as { name?: unknown })?.name;
      throw new KeySourceUnavailableError(name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'unreachable', { cause: error });
    }
    if (response.status >= 500) throw new KeySourceUnavailableError('unreachable');
    if (response.status !== 200 || body.length > this.maxResponseBytes) throw new KeySourceUnavailableError('bad_response');
    let document: unknown;
    try {
      document = JSON.parse(body);
    } catch {
      throw new KeySourceUnavailableError('bad_response');
    }
    const entries = (document as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(entries)) throw new KeySourceUnavailableError('bad_response');
    const keys = entries.slice(0, MAX_KEYS).flatMap((entry) => {
      const key = toCachedKey(entry);
      return key ? [key] : [];
    });
    if (keys.length === 0) throw new KeySourceUnavailableError('bad_response');
    return { keys, lifetimeMs: cacheLifetime(response.headers.get('cache-control'), this.minAgeMs, this.maxAgeMs) };
  }
}
