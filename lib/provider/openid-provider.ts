import { type NextFunction, type Request, type Response, Router } from 'express';
import { guarded } from '../http/handlers';
import { HttpError } from '../http/errors';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import { debugChannel } from '../util/debug';
import { refuseMiddlewareUse } from '../util/options';
import { interactionRoutes } from './interaction-routes';
import { providerConfiguration, type OidcProviderModule } from './provider-config';
import { useAtomicReplayDetection } from './provider-features';
import { resolveProviderOptions, type OpenidProviderOptions } from './provider-options';
import { ProviderRecords } from './provider-records';
import { watchProviderDecisions } from './provider-events';
import { endLinkedLogins, noteStoreOutage, portalSessionBridge } from './session-links';
import { connectedAppsRoutes } from './connected-apps';
import { listenForEndedAccess } from './grant-revocation';

/**
 * The part of an oidc-provider instance the kit's public types name. oidc-provider is an optional peer dependency,
 * so its own types are not part of the kit's declarations: pass its `Provider` type to
 * {@link OpenidProviderRouter.provider} to get them.
 */
export interface OidcProviderInstance {
  readonly issuer: string;
  on(event: string, listener: (...args: never[]) => void): unknown;
}

/** The router `openidProvider` returns. */
export interface OpenidProviderRouter extends Router {
  /** Resolves once oidc-provider is loaded and subscribed to session ends; rejects when it is not installed. */
  readonly ready: Promise<void>;
  /**
   * The running oidc-provider instance, for advanced use (events, `Client.find`), e.g.
   * `await op.provider<import('oidc-provider').default>()`.
   */
  provider<P extends OidcProviderInstance = OidcProviderInstance>(): Promise<P>;
  /** Stops listening for ended portal sessions. */
  close(): Promise<void>;
}

const debug = debugChannel('oidc');

async function loadOidcProvider(): Promise<OidcProviderModule> {
  try {
    return await import('oidc-provider');
  } catch (error) {
    throw new HttpError(500, {
      code: 'provider_misconfigured',
      detail: 'openidProvider needs the optional peer dependency oidc-provider@9: run `npm install oidc-provider@^9`',
      cause: error,
    });
  }
}

/**
 * The portal as an OpenID Provider (oidc-provider v9): apps outside the parent domain sign in with the same accounts
 * and the same session. The provider's login *is* the portal session, so a signed-in user is not asked again
 * (unless `prompt=login`, `max_age` or `acr_values` call for a fresh or stronger login, which the portal's login
 * or step-up page provides); `sub` is the kit's user id `<source>|<subject>` and `auth_time`/`acr`/`amr` come from
 * the session. Codes, tokens and grants live in the kit store; ID tokens are signed with the kit's `KeySet` and
 * `<prefix>/jwks` serves the same JWKS as the token service. Ending a portal session (logout, logout everywhere,
 * revocation) sends back-channel logout tokens to its clients and revokes their tokens; RP-initiated logout ends
 * the portal session. `GET /connected-apps` lists the apps the user allowed and withdraws them (their tokens
 * revoked at once); `endProviderAccess` (an account disabled or removed) revokes all of a user's grants from any
 * process sharing the store. Mount it at the root of the portal host after `ssoSession()`, before `loginPortal()`.
 *
 * @example
 * const op = openidProvider({ issuer: 'https://auth.example.test', keys, store, sessions, cookieSecrets: [secret],
 *   clients: [{ clientId: 'partner', clientSecret, redirectUris: ['https://partner.test/callback'] }] });
 * app.use(sessions);
 * app.use(op);
 * await op.ready;
 */
export function openidProvider(options: OpenidProviderOptions): OpenidProviderRouter {
  refuseMiddlewareUse('openidProvider', options);
  const settings = resolveProviderOptions(options);
  const records = new ProviderRecords(settings.store, settings.lifetimes.refreshToken);
  let unsubscribe: (() => Promise<void>) | undefined;
  let unsubscribeAccess: (() => Promise<void>) | undefined;

  const built = loadOidcProvider().then(async (oidc) => {
    const provider = new oidc.default(settings.issuer, providerConfiguration(oidc, settings, records));
    // The portal sits behind TLS termination; Express already decided whom to trust for the forwarded headers.
    provider.proxy = true;
    useAtomicReplayDetection(provider, settings.store);
    provider.use(portalSessionBridge(settings, records));
    provider.on('server_error', noteStoreOutage);
    if (settings.events) watchProviderDecisions(provider, settings.events);
    provider.on(
      'grant.success',
      (ctx: { oidc?: { client?: { clientId?: string }; entities?: { AccessToken?: { accountId?: string } } } }) => {
        const accountId = ctx.oidc?.entities?.AccessToken?.accountId;
        const clientId = ctx.oidc?.client?.clientId;
        // The last use the Connected apps page shows; a failure to record it must not fail the token request.
        if (accountId && clientId) records.noteUse(accountId, clientId).catch(() => undefined);
      },
    );
    unsubscribeAccess = await listenForEndedAccess(settings.store, provider, records, settings.events);
    unsubscribe = await settings.sessions.manager.onSessionsEnded((handles) => {
      void Promise.all(handles.map(async (handle) => endLinkedLogins(provider, await records.takeLinks(handle), settings.events))).catch(
        (error: unknown) => {
          debug('logout propagation failed: %s', error instanceof Error ? error.name : 'error');
        },
      );
    });
    return { provider, callback: provider.callback() };
  });
  // Requests await it and report a failure; this keeps an unused router from an unhandled rejection.
  built.catch(() => undefined);
  const providerOf = async (): Promise<Provider> => (await built).provider;

  const prefix = settings.pathPrefix;
  const issuerUrl = new URL(settings.issuer);
  const router = Router() as OpenidProviderRouter;
  router.get(`${prefix}/jwks`, function providerJwks(_req: Request, res: Response) {
    // The kit's whole key set (the active key and those still verifying), exactly as the token service publishes it.
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.type('application/jwk-set+json').send(JSON.stringify(settings.keys.publicJwks()));
  });
  router.use(interactionRoutes(providerOf, settings, records));
  router.use(connectedAppsRoutes(providerOf, settings, records));
  router.use(
    guarded(async function openidProviderEndpoints(req: Request, res: Response, next: NextFunction) {
      if (req.path !== '/.well-known/openid-configuration' && !req.path.startsWith(`${prefix}/`)) {
        next();
        return;
      }
      if (req.baseUrl !== '') {
        const detail = `openidProvider: mount it at the root of the portal host (app.use(op)), not under "${req.baseUrl}"`;
        next(new HttpError(500, { code: 'provider_misconfigured', detail }));
        return;
      }
      const { callback } = await built;
      // oidc-provider builds its URLs (discovery, redirects) from the request's Host and, behind a proxy, from
      // X-Forwarded-Host and -Proto, which a client can forge or garble. The issuer is the provider's only origin.
      req.headers.host = issuerUrl.host;
      req.headers['x-forwarded-host'] = issuerUrl.host;
      req.headers['x-forwarded-proto'] = issuerUrl.protocol.slice(0, -1);
      await callback(req, res);
    }),
  );
  const ready = built.then(() => undefined);
  // Whoever awaits `ready` still sees the failure; an app that never does must not crash on an unhandled rejection
  // (oidc-provider missing, or the store down while the router starts).
  ready.catch(() => undefined);
  Object.defineProperty(router, 'ready', { value: ready, enumerable: true });
  Object.defineProperty(router, 'provider', { value: providerOf, enumerable: true });
  Object.defineProperty(router, 'close', {
    value: async () => {
      await built.catch(() => undefined);
      await unsubscribe?.();
      await unsubscribeAccess?.();
    },
    enumerable: true,
  });
  return router;
}
