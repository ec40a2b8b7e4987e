import { readLimited, TooLargeError } from '../util/read-limited';
import { providerMisbehaved, providerUnavailable } from './errors';

/** What {@link requestJson} needs to know to call the provider and to word its errors. */
export interface ProviderCall {
  /** Provider name, for error messages. */
  provider: string;
  /** What was being done, e.g. `token endpoint`; never a URL with a code or token in it. */
  what: string;
  timeoutMs: number;
}

/** A JSON answer of the provider with its status. */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

/** Discovery documents, token and userinfo answers are a few KB; anything near this is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

/**
 * One HTTP call to the identity provider with a hard deadline covering the whole exchange, body included, so a
 * slow provider becomes a 503 instead of a hanging request. Redirects are not followed: an endpoint that redirects
 * is misconfigured. Any status is returned as long as the body is JSON; a body that is not JSON is a 502.
 *
 * @example
 * const { status, body } = await requestJson(url, { method: 'GET' }, { provider: 'corp', what: 'discovery', timeoutMs: 5000 });
 */
export async function requestJson(url: string, init: RequestInit, call: ProviderCall): Promise<JsonAnswer> {
  const signal = AbortSignal.timeout(call.timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal, redirect: 'manual', headers: { Accept: 'application/json', ...init.headers } });
  } catch (error) {
    // Timeout, connection refused, reset or DNS failure: the provider is unreachable.
    throw providerUnavailable(call.provider, isAbort(error) ? `${call.what} timed out` : `${call.what} unreachable`, error);
  }
  let text: string;
  try {
    text = await readLimited(response, MAX_BODY_BYTES);
  } catch (error) {
    if (error instanceof TooLargeError) throw providerMisbehaved(call.provider, `${call.what} answered more than ${MAX_BODY_BYTES} bytes`);
    throw providerUnavailable(call.provider, `${call.what} timed out`, error);
  }
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch (error) {
    throw providerMisbehaved(call.provider, `${call.what} answered ${response.status} without JSON`, error);
  }
}

/**
 * A plain JSON object, or undefined.
 *
 * @example
 * const answer = asObject(body); // undefined for arrays, null and primitives
 */
export function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
