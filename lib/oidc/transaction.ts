import { constantTimeEqual, sha256 } from '../util/digest';
import { randomToken } from '../util/random-token';

/** One login in flight: what the callback needs to finish it. Kept server-side only. */
export interface OidcTransaction {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** Already sanitized by the redirect policy. */
  returnTo: string;
  provider: string;
  /** The `max_age` sent, in seconds, so the callback can require a fresh `auth_time`. */
  maxAge?: number;
  /** The `acr_values` sent, so the callback can require the ID token's `acr` to be one of them. */
  acrValues?: string[];
  /** Epoch milliseconds. */
  createdAt: number;
}

/** A transaction lives this long; a login that takes longer starts again. */
export const TRANSACTION_TTL_MS = 10 * 60 * 1000;
/** Logins in flight per browser; the oldest is dropped beyond this, so a loop of /login cannot grow the session. */
export const MAX_TRANSACTIONS = 5;

function random(bytes: number): string {
  return randomToken(bytes);
}

/**
 * Starts a transaction: 256-bit state and nonce, and a PKCE verifier of 43 characters (RFC 7636 §4.1).
 *
 * @example
 * const tx = newTransaction({ provider: 'corp', returnTo: '/' });
 */
export function newTransaction(input: {
  provider: string;
  returnTo: string;
  maxAge?: number;
  acrValues?: readonly string[];
  now?: number;
}): OidcTransaction {
  return {
    state: random(32),
    nonce: random(32),
    codeVerifier: random(32),
    returnTo: input.returnTo,
    provider: input.provider,
    ...(input.maxAge === undefined ? {} : { maxAge: input.maxAge }),
    ...(input.acrValues === undefined || input.acrValues.length === 0 ? {} : { acrValues: [...input.acrValues] }),
    createdAt: input.now ?? Date.now(),
  };
}

/**
 * The S256 code challenge of a verifier (RFC 7636 §4.2).
 *
 * @example
 * codeChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'); // 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
 */
export function codeChallenge(verifier: string): string {
  return sha256(verifier, 'base64url');
}

/**
 * Adds a transaction to the session's map (state → JSON), dropping expired ones and the oldest beyond
 * {@link MAX_TRANSACTIONS}. Returns a new map; the given one is not changed.
 *
 * @example
 * req.session.oidcTransactions = addTransaction(req.session.oidcTransactions, tx);
 */
export function addTransaction(map: Record<string, string> | undefined, tx: OidcTransaction, now = Date.now()): Record<string, string> {
  const live = Object.entries(map ?? {})
    .map(([state, json]) => [state, parseTransaction(json)] as const)
    .filter((entry): entry is readonly [string, OidcTransaction] => entry[1] !== undefined && now - entry[1].createdAt < TRANSACTION_TTL_MS)
    .sort((a, b) => a[1].createdAt - b[1].createdAt)
    .slice(-(MAX_TRANSACTIONS - 1));
  const next: Record<string, string> = {};
  for (const [state, parsed] of live) next[state] = JSON.stringify(parsed);
  next[tx.state] = JSON.stringify(tx);
  return next;
}

/**
 * Parses a stored transaction; undefined when it is malformed.
 *
 * @example
 * const tx = parseTransaction(req.session.oidcTransactions?.[state]);
 */
export function parseTransaction(json: string | undefined): OidcTransaction | undefined {
  if (typeof json !== 'string') return undefined;
  try {
    const value = JSON.parse(json) as Partial<OidcTransaction>;
    if (
      typeof value.state === 'string' &&
      typeof value.nonce === 'string' &&
      typeof value.codeVerifier === 'string' &&
      typeof value.returnTo === 'string' &&
      typeof value.provider === 'string' &&
      typeof value.createdAt === 'number'
    ) {
      return value as OidcTransaction;
    }
  } catch {
    // Malformed: treated as absent.
  }
  return undefined;
}

/**
 * Finds the transaction whose state equals `state` (compared in constant time) and removes it from the map, so a
 * replayed callback finds nothing. Returns the transaction (or undefined) and the remaining map.
 *
 * @example
 * const { transaction, remaining } = takeTransaction(req.session.oidcTransactions, String(req.query.state));
 */
export function takeTransaction(
  map: Record<string, string> | undefined,
  state: string,
): { transaction: OidcTransaction | undefined; remaining: Record<string, string> } {
  let found: OidcTransaction | undefined;
  const remaining: Record<string, string> = {};
  for (const [key, json] of Object.entries(map ?? {})) {
    const tx = parseTransaction(json);
    if (!found && tx && constantTimeEqual(tx.state, state)) {
      found = tx;
      continue;
    }
    remaining[key] = json;
  }
  return { transaction: found, remaining };
}
