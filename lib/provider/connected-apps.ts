import express, { Router, type Request, type Response } from 'express';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import { BadRequestError, NotFoundError } from '../http/errors';
import { guarded } from '../http/handlers';
import { requireSession } from '../session/require-session';
import { revokeUserGrants } from './grant-revocation';
import { renderConnectedAppsPage, type ConnectedAppRow } from './provider-pages';
import type { ResolvedProviderOptions } from './provider-options';
import type { ProviderRecords } from './provider-records';

/** The path of the portal's Connected apps page (on the provider's host). */
export const CONNECTED_APPS_PATH = '/connected-apps';

/**
 * The clients a user allowed, each once: the scopes of its live grants and remembered consent, when it last used
 * them, and whether it can renew its access without the user (a refresh token). Grants that expired or were
 * revoked are dropped; a remembered consent is listed even when no grant of it is live.
 *
 * @example
 * const apps = await connectedApps(provider, records, settings, 'directory:local|alice');
 */
export async function connectedApps(
  provider: Provider,
  records: ProviderRecords,
  settings: ResolvedProviderOptions,
  userId: string,
): Promise<ConnectedAppRow[]> {
  const byClient = new Map<string, Set<string>>();
  for (const link of await records.grantsOf(userId)) {
    const grant = await provider.Grant.find(link.grantId);
    if (!grant || grant.accountId !== userId) continue;
    const scopes = byClient.get(link.clientId) ?? new Set<string>();
    for (const scope of (grant.getOIDCScope() ?? '').split(' ').filter(Boolean)) scopes.add(scope);
    byClient.set(link.clientId, scopes);
  }
  // A consent outlives the grants of the sessions it was given in: it is listed, and can be withdrawn, on its own.
  for (const clientId of await records.consentedClients(userId)) {
    const scopes = byClient.get(clientId) ?? new Set<string>();
    for (const scope of await records.consentedScopes(userId, clientId)) scopes.add(scope);
    byClient.set(clientId, scopes);
  }
  const rows: ConnectedAppRow[] = [];
  for (const [clientId, scopes] of byClient) {
    const client = settings.clients.find((candidate) => candidate.clientId === clientId);
    rows.push({
      clientId,
      clientName: client?.name ?? clientId,
      scopes: [...scopes].sort(),
      lastUsedAt: await records.lastUse(userId, clientId),
      offline: (client?.grantTypes ?? ['authorization_code', 'refresh_token']).includes('refresh_token'),
    });
  }
  return rows.sort((a, b) => a.clientName.localeCompare(b.clientName));
}

/**
 * The portal's Connected apps page (ASVS 10.7.3): `GET /connected-apps` lists every client the signed-in user
 * allowed, `POST /connected-apps/withdraw` (`client=<id>`) withdraws one: its tokens are revoked at once, a
 * back-channel logout is sent, the remembered consent is forgotten, and `provider.consent.withdrawn` and
 * `provider.grant.revoked` are recorded. Same-origin posts only (`ssoSession` refuses others).
 *
 * @example
 * router.use(connectedAppsRoutes(providerOf, settings, records));
 */
export function connectedAppsRoutes(
  providerOf: () => Promise<Provider>,
  settings: ResolvedProviderOptions,
  records: ProviderRecords,
): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '2kb', parameterLimit: 2 });

  router.get(
    CONNECTED_APPS_PATH,
    requireSession(),
    guarded(async function showConnectedApps(req: Request, res: Response) {
      const apps = await connectedApps(await providerOf(), records, settings, req.user!.id);
      res.set('Cache-Control', 'no-store');
      if (req.accepts(['text/html', 'application/json']) === 'application/json') {
        res.json({ apps });
        return;
      }
      res.type('html').send(
        renderConnectedAppsPage({
          assetsPath: settings.assetsPath,
          userName: req.user!.name,
          apps,
          withdrawAction: `${CONNECTED_APPS_PATH}/withdraw`,
          ...(req.query.withdrawn === '1' ? { notice: 'The app no longer has access to your account.' } : {}),
        }),
      );
    }),
  );

  router.post(
    `${CONNECTED_APPS_PATH}/withdraw`,
    requireSession(),
    form,
    guarded(async function withdrawConsent(req: Request, res: Response) {
      const clientId = (req.body as Record<string, unknown> | undefined)?.client;
      if (typeof clientId !== 'string' || clientId === '' || clientId.length > 128) {
        throw new BadRequestError({ code: 'invalid_client', detail: 'Name the app to withdraw.' });
      }
      const userId = req.user!.id;
      const revoked = await revokeUserGrants(await providerOf(), records, userId, {
        clientId,
        reason: 'consent_withdrawn',
        ...(settings.events ? { events: settings.events } : {}),
        req,
      });
      if (revoked === 0) throw new NotFoundError({ code: 'grant_not_found', detail: 'This app has no access to your account.' });
      settings.events?.emit('provider.consent.withdrawn', { reason: 'user', clientId, userId }, req);
      res.redirect(303, `${CONNECTED_APPS_PATH}?withdrawn=1`);
    }),
  );
  return router;
}
