import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { isAcceptableKid, isHmacAlgorithm, isSupportedAlgorithm, keyFitsAlgorithm } from './algorithms';
import { KeySourceUnavailableError } from './errors';

/** One verification key of a fetched JWKS, converted to a `KeyObject` once. */
export interface CachedKey {
  kid: string | undefined;
  algorithms: ReadonlySet<string>;
  key: KeyObject;
}

/** What one fetch of a JWKS endpoint yields. */
export interface FetchedKeySet {
  keys: CachedKey[];
  /** How long the set may be used, from `Cache-Control` within the cache's bounds. */
  lifetimeMs: number;
}

/** How {@link downloadKeySet} fetches. */
export interface DownloadSettings {
  uri: string;
  timeoutMs: number;
  maxResponseBytes: number;
  minAgeMs: number;
  maxAgeMs: number;
  fetch: typeof fetch;
}

const MAX_KEYS = 100;

/**
 * Cache lifetime from `Cache-Control` (RFC 9111 §5.2.2.1 max-age) within [min, max]; `no-store`/`no-cache` count as
 * the minimum, no header as the maximum.
 *
 * @example
 * cacheLifetime('public, max-age=300', 30_000, 600_000); // 300000
 */
export function cacheLifetime(header: string | null, minMs: number, maxMs: number): number {
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
 * Fetches and parses one JWKS document (RFC 7517 §5): aborted after the timeout, size-capped, redirects refused,
 * unusable entries skipped. Throws {@link KeySourceUnavailableError}: `timeout`, `unreachable` (network, 5xx) or
 * `bad_response` (anything that is not a key set with at least one usable key).
 *
 * @example
 * const { keys, lifetimeMs } = await downloadKeySet({ uri, timeoutMs: 2000, maxResponseBytes: 262144, minAgeMs, maxAgeMs, fetch });
 */
export async function downloadKeySet(settings: DownloadSettings): Promise<FetchedKeySet> {
  let response: Response;
  let body: string;
  try {
    response = await settings.fetch(settings.uri, {
      signal: AbortSignal.timeout(settings.timeoutMs),
      headers: { accept: 'application/jwk-set+json, application/json' },
      redirect: 'error',
    });
    const declared = Number(response.headers.get('content-length') ?? '0');
    if (declared > settings.maxResponseBytes) {
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
  if (response.status !== 200 || body.length > settings.maxResponseBytes) throw new KeySourceUnavailableError('bad_response');
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
  return { keys, lifetimeMs: cacheLifetime(response.headers.get('cache-control'), settings.minAgeMs, settings.maxAgeMs) };
}
