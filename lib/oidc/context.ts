import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { KeyValueStore } from '../store/port';
import { debugChannel } from '../util/debug';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import type { OidcRequestContext, OidcSessionState } from './types';
import { assertProvider, type OidcProvider } from './provider';
import { misconfigured } from './errors';
import { createTokenRefresher } from './token-refresh';

/** Options of {@link oidcContext}. */
export interface OidcContextOptions {
  /** An access token expiring within this many seconds is refreshed before it is handed out. Default 60. */
  refreshMarginSeconds?: number;
  /** Lifetime of the cross-instance refresh lock, in seconds; longer than a token call can take. Default 10. */
  lockLifetimeSeconds?: number;
  /** The store holding the refresh lock. Default: the provider's `store`. */
  store?: KeyValueStore;
}

const debug = debugChannel('oidc');

const CONTEXT_OPTIONS: OptionSchema = {
  refreshMarginSeconds: {
    type: 'number',
    expected: 'a number of seconds ≥ 0',
    check: (value: number) => (value < 0 ? `must be a number of seconds ≥ 0, got ${value}` : undefined),
  },
  lockLifetimeSeconds: {
    type: 'number',
    expected: 'a positive number of seconds',
    check: (value: number) => (value <= 0 || value > 300 ? `must be above 0 and at most 300 seconds, got ${value}` : undefined),
  },
  store: {
    type: 'object',
    expected: 'a KeyValueStore such as new RedisStore(url)',
    check: (value: { setIfAbsent?: unknown }) =>
      typeof value.setIfAbsent === 'function' ? undefined : 'must be a KeyValueStore such as new RedisStore(url)',
  },
};

/**
 * The provider a session's tokens belong to: the one of the session's provider name, and only when its issuer is
 * the one the tokens came from. Another app of the domain may give the same name to another provider; its token
 * endpoint must never receive this provider's refresh token.
 */
function providerOfSession(byName: ReadonlyMap<string, OidcProvider>, state: OidcSessionState | undefined): OidcProvider | undefined {
  if (!state) return undefined;
  const provider = byName.get(state.provider);
  if (provider && provider.issuer !== state.issuer) {
    debug('no req.oidc: the session logged in at another issuer than provider "%s" here (%s)', provider.name, provider.issuer);
    return undefined;
  }
  return provider;
}

/**
 * The context middleware under a factory name of the caller's (`oidcContext`, or `oidc` for the router).
 *
 * @example
 * router.use(createContext('oidc', [corp], { refreshMarginSeconds: 30 }));
 */
export function createContext(
  who: string,
  providers: OidcProvider | readonly OidcProvider[],
  options: OidcContextOptions = {},
): RequestHandler {
  const list: unknown[] = Array.isArray(providers) ? [...(providers as unknown[])] : [providers];
  if (list.length === 0) throw new OptionsError(`${who}: pass a provider from oidcProvider({ … }) or an array of them`);
  for (const provider of list) assertProvider(who, provider);
  checkOptions(who, options as unknown, CONTEXT_OPTIONS);
  const byName = new Map<string, OidcProvider>();
  for (const provider of list as OidcProvider[]) {
    if (byName.has(provider.name)) throw new OptionsError(`${who}: two providers are named "${provider.name}"; give each its own name`);
    if (!options.store && !provider.store) {
      throw new OptionsError(
        `${who}: provider "${provider.name}" has no store for the refresh lock; pass oidcProvider({ store }) or oidcContext(p, { store })`,
      );
    }
    byName.set(provider.name, provider);
  }
  const margin = options.refreshMarginSeconds ?? 60;
  const store = options.store;
  const refresh = createTokenRefresher({
    storeOf: (provider) => (store ?? provider.store) as KeyValueStore,
    lockLifetimeSeconds: options.lockLifetimeSeconds ?? 10,
  });

  return function oidcContextMiddleware(req: Request, _res: Response, next: NextFunction) {
    if (!req.session) {
      next(misconfigured(`${who}: req.session is missing; mount ssoSession() before ${who}`));
      return;
    }
    const provider = providerOfSession(byName, req.session.oidc);
    if (!provider) {
      next();
      return;
    }
    const context: OidcRequestContext = {
      async accessToken() {
        const current = req.session.oidc;
        if (!current?.accessToken) return undefined;
        const nowSeconds = Date.now() / 1000;
        const fresh = current.expiresAt === undefined || current.expiresAt - margin > nowSeconds;
        if (fresh) return current.accessToken;
        if (!current.refreshToken)
          return current.expiresAt !== undefined && current.expiresAt > nowSeconds ? current.accessToken : undefined;
        await refresh(req, provider);
        return req.session.oidc?.accessToken;
      },
      refresh: () => refresh(req, provider),
    };
    req.oidc = context;
    next();
  };
}

/**
 * Installs `req.oidc` for sessions that logged in through one of `providers` (same name and issuer):
 * `accessToken()` hands out the access token, refreshing it first when it expires within `refreshMarginSeconds`;
 * `refresh()` forces a refresh_token grant. Concurrent refreshes of one session share one grant call, across
 * instances too (a lock in the store). A refused refresh (`invalid_grant`) removes the tokens from the session and
 * rejects with 401 `oidc_refresh_refused`. Mount after `ssoSession()`.
 *
 * @example
 * app.use(oidcContext([corp, partner]));
 * app.get('/api/orders', async (req, res) => {
 *   const token = await req.oidc?.accessToken();
 *   res.json(await fetchOrders(token));
 * });
 */
export function oidcContext(providers: OidcProvider | readonly OidcProvider[], options: OidcContextOptions = {}): RequestHandler {
  return createContext('oidcContext', providers, options);
}
