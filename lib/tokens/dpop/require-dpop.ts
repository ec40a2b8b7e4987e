import type { Request, Response } from 'express';
import type { KeyValueStore } from '../../store/port';
import { RedisStore } from '../../store/redis-store';
import type { RedisClient, RedisConnectionOptions } from '../../store/redis-connection';
import { checkOptions, OptionsError, type OptionSchema } from '../../util/options';
import type { FoundToken } from '../bearer-token-request';
import type { JwtPayload } from '../types';
import { dpopRealmErrors, type DpopRealmErrors } from './dpop-challenges';
import { DpopError } from './dpop-error';
import { dpopHeader, dpopTargetUri } from './dpop-request';
import { DPOP_VERIFIER_SCHEMA, DpopVerifier, type DpopVerifierOptions } from './dpop-verifier';

/** Which access tokens a `requireBearer` with DPoP accepts. */
export type DpopMode = 'allowed' | 'required';

/**
 * The long form of `requireBearer`'s `dpop` option: the mode and how proofs are checked (see {@link DpopVerifier}).
 */
export interface RequireDpopOptions extends Omit<DpopVerifierOptions, 'replayStore'> {
  /**
   * `allowed`: DPoP-bound tokens with a valid proof, and Bearer tokens that are not bound to a key. `required`: only
   * DPoP-bound tokens with a valid proof.
   */
  mode: DpopMode;
  /**
   * Where proofs' `jti`s are remembered: a kit store, a Redis URL, connection options or an ioredis client. Default:
   * the `tokenService`'s store, else the `revocationStore`; one of them, or this, is required.
   */
  replayStore?: KeyValueStore | string | RedisConnectionOptions | RedisClient;
}

/** The DPoP half of a `requireBearer`, worked out once from its options. */
export interface DpopBinding {
  readonly mode: DpopMode;
  readonly verifier: DpopVerifier;
  readonly errors: DpopRealmErrors;
  /**
   * Refuses before the token is looked at: a Bearer (or query, or body) token where only DPoP is accepted, a proof
   * sent along with the Bearer scheme, a DPoP token with no single proof.
   */
  refuseEarly(req: Request, found: FoundToken): DpopError | undefined;
  /** Checks the proof of a DPoP-scheme request against its verified token; sets `DPoP-Nonce` when one is due. */
  checkProof(req: Request, res: Response, token: string, claims: JwtPayload): Promise<void>;
}

const MODE = {
  type: 'string',
  expected: '"allowed" or "required"',
  check: (mode: string) => (mode === 'allowed' || mode === 'required' ? undefined : 'must be "allowed" or "required"'),
} as const;

/** The `dpop` option of `requireBearer` in its long form: a mode, a replay store and the verifier's tuning. */
export const REQUIRE_DPOP_SCHEMA: OptionSchema = {
  ...DPOP_VERIFIER_SCHEMA,
  mode: { ...MODE, required: true },
  replayStore: {
    type: ['string', 'object'],
    expected: 'a KeyValueStore, a Redis URL, connection options or an ioredis client',
  },
};

function isKeyValueStore(value: unknown): value is KeyValueStore {
  const store = value as KeyValueStore;
  return typeof store.setIfAbsent === 'function' && (store.kind === 'redis' || store.kind === 'memory');
}

/**
 * The key a token is bound to by `cnf.jkt` (RFC 9449 §6.1), or undefined when it is not bound to one. Any other
 * `cnf` (a certificate binding, RFC 8705) also counts as bound, to a key the kit cannot check.
 *
 * @example
 * boundJkt({ cnf: { jkt: '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I' } }); // '0ZcO…'
 */
export function boundJkt(claims: JwtPayload): string | undefined {
  const cnf = claims.cnf as { jkt?: unknown } | undefined;
  return typeof cnf === 'object' && cnf !== null && typeof cnf.jkt === 'string' ? cnf.jkt : undefined;
}

/**
 * Whether a token presented as Bearer must be refused because it is bound to a key (any `cnf` claim): whoever sends
 * it that way cannot prove they hold the key, which is what the binding asks (RFC 9449 §7.2, RFC 7800 §3).
 *
 * @example
 * if (refusesBearer(claims)) throw new DpopError('bound_token_as_bearer');
 */
export function refusesBearer(claims: JwtPayload): boolean {
  return claims.cnf !== undefined;
}

/**
 * Builds the DPoP half of `requireBearer` from its `dpop` option (`'allowed'`, `'required'` or the long form), or
 * undefined without it. The replay store defaults to the one the options already name.
 *
 * @example
 * const binding = dpopBinding({ mode: 'required' }, 'api', tokenService.store);
 */
export function dpopBinding(
  option: DpopMode | RequireDpopOptions | undefined,
  realm: string,
  defaultStore: KeyValueStore | undefined,
): DpopBinding | undefined {
  if (option === undefined) return undefined;
  const long: RequireDpopOptions = typeof option === 'string' ? { mode: option } : option;
  checkOptions('requireBearer: dpop', long, REQUIRE_DPOP_SCHEMA);
  const { mode, replayStore, ...tuning } = long;
  let store: KeyValueStore;
  if (replayStore === undefined) {
    if (defaultStore === undefined) {
      throw new OptionsError(
        `requireBearer: dpop needs a replay store for proofs' jti: write dpop: { mode: '${mode}', replayStore: new RedisStore(url) } (or give tokenService or revocationStore)`,
      );
    }
    store = defaultStore;
  } else {
    store = isKeyValueStore(replayStore) ? replayStore : new RedisStore(replayStore as string | RedisConnectionOptions | RedisClient);
  }
  const verifier = new DpopVerifier({ ...tuning, replayStore: store });
  const errors = dpopRealmErrors(realm, mode, verifier.algorithms);

  return {
    mode,
    verifier,
    errors,
    refuseEarly(req, found) {
      if (found.dpop !== true) {
        if (mode === 'required') return new DpopError('dpop_required');
        // A client that makes proofs sends its token with the DPoP scheme; with Bearer, which one did it mean?
        return req.headers.dpop === undefined ? undefined : new DpopError('scheme_mismatch');
      }
      return undefined;
    },
    async checkProof(req, res, token, claims) {
      const jkt = boundJkt(claims);
      if (jkt === undefined) throw new DpopError('token_not_bound');
      const proof = await verifier.verify(dpopHeader(req), {
        method: req.method,
        uri: dpopTargetUri(req) ?? '',
        accessToken: token,
        boundJkt: jkt,
      });
      // RFC 9449 §8.2: a fresh nonce with a success, before the one the client uses stops being accepted.
      if (proof.nextNonce !== undefined) res.setHeader('DPoP-Nonce', proof.nextNonce);
    },
  };
}
