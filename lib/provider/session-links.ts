import type { Request, Response } from 'express';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { KoaContextWithOIDC } from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { SecurityEvents } from '../events/security-events';
import { endCurrentSession } from '../session/logout';
import { StoreUnavailableError } from '../store';
import { redactPath } from '../http/log-redaction';
import { debugChannel, redactCredentials } from '../util/debug';
import type { ResolvedProviderOptions } from './provider-options';
import type { ProviderRecords, SessionLink } from './provider-records';

const debug = debugChannel('oidc');

interface BackchannelClient {
  backchannelLogoutUri?: string;
  backchannelLogout(sub: string, sid: string): Promise<void>;
}

/**
 * Ends what the portal session opened at its clients: each client gets an OpenID back-channel logout token (when
 * it registered a `backchannelLogoutUri`), and every code, access and refresh token of the grant is revoked. A
 * client that does not answer is logged (its tokens are revoked anyway). Both are recorded in `events`; when no
 * request caused them (the portal session ended elsewhere) they carry the user and the client, not a request.
 *
 * @example
 * await endLinkedLogins(provider, await records.takeLinks(handle), events);
 */
export async function endLinkedLogins(
  provider: Provider,
  links: readonly SessionLink[],
  events?: SecurityEvents,
  reason: 'session_ended' | 'consent_withdrawn' | 'account_disabled' = 'session_ended',
  req?: Request,
): Promise<void> {
  await Promise.all(
    links.map(async (link) => {
      const client = (await provider.Client.find(link.clientId)) as unknown as BackchannelClient | undefined;
      const notify = client?.backchannelLogoutUri
        ? client.backchannelLogout(link.accountId, link.sid).catch((error: unknown) => {
            events?.emit('provider.backchannel.failed', { reason: 'delivery_failed', clientId: link.clientId, userId: link.accountId });
            debug(
              'back-channel logout of client %s failed: %s',
              link.clientId,
              error instanceof Error ? redactCredentials(error.message) : 'error',
            );
          })
        : Promise.resolve();
      const grant = await provider.Grant.find(link.grantId);
      await Promise.all([
        notify,
        provider.AccessToken.revokeByGrantId(link.grantId),
        provider.RefreshToken.revokeByGrantId(link.grantId),
        provider.AuthorizationCode.revokeByGrantId(link.grantId),
        grant?.destroy(),
      ]);
      events?.emit('provider.grant.revoked', { reason, clientId: link.clientId, userId: link.accountId }, req);
    }),
  );
}

/** Marks, on oidc-provider's request state, that the store did not answer (see {@link noteStoreOutage}). */
const STORE_OUTAGE = 'expressSsoKitStoreOutage';

/**
 * oidc-provider's `server_error` listener: an error that is a store outage is remembered on the request, so the
 * answer becomes a 503 (fail closed, try again) instead of oidc-provider's generic 500.
 *
 * @example
 * provider.on('server_error', noteStoreOutage);
 */
export function noteStoreOutage(ctx: KoaContextWithOIDC, error: unknown): void {
  // Only the store's own outage error: any other failure stays oidc-provider's 500.
  if (error instanceof StoreUnavailableError || (error instanceof Error && error.cause instanceof StoreUnavailableError)) {
    ctx.state[STORE_OUTAGE] = true;
  }
}

function answerOutage(ctx: KoaContextWithOIDC, events: SecurityEvents | undefined): void {
  debug('provider request %s answered 503: the store is unavailable', ctx.path);
  events?.emit(
    'store.unavailable',
    { reason: 'store_unavailable', status: 503, httpMethod: ctx.method, path: redactPath(ctx.path) },
    ctx.req as unknown as Request,
  );
  ctx.status = 503;
  ctx.set('Retry-After', '5');
  ctx.set('Cache-Control', 'no-store');
  // RFC 6749 §4.1.2.1 names this error for a server that cannot answer for now.
  ctx.body = { error: 'temporarily_unavailable', error_description: 'The session store is unavailable. Try again shortly.' };
}

/**
 * oidc-provider middleware tying its logins to the portal session: when the authorization endpoint issues a code,
 * the client is recorded under the portal session's public handle (for logout propagation); when the user confirms
 * an RP-initiated logout, the portal session ends too (oidc-provider itself notifies the clients of its session);
 * a store outage is answered 503.
 *
 * @example
 * provider.use(portalSessionBridge(settings, records));
 */
export function portalSessionBridge(settings: ResolvedProviderOptions, records: ProviderRecords) {
  return async function bridgePortalSession(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    await next();
    if (ctx.state[STORE_OUTAGE] === true) {
      answerOutage(ctx, settings.events);
      return;
    }
    const oidc = ctx.oidc as KoaContextWithOIDC['oidc'] | undefined;
    if (!oidc) return;
    const req = ctx.req as unknown as Request;
    const route = oidc.route;
    if ((route === 'authorization' || route === 'resume') && oidc.entities.AuthorizationCode && oidc.session && oidc.client) {
      const { session, client } = oidc;
      if (!req.user || req.user.id !== session.accountId || !req.sessionID) return;
      const grantId = session.grantIdFor(client.clientId);
      const sid = session.sidFor(client.clientId);
      if (!grantId || !sid) return;
      const handle = settings.sessions.manager.handleOf(req.sessionID);
      await records.link(
        handle,
        { clientId: client.clientId, sid, grantId, accountId: session.accountId },
        settings.sessions.context.absoluteLifetimeSeconds,
      );
      return;
    }
    if (route === 'end_session_confirm' && ctx.status < 400 && req.user && req.sessionID) {
      // oidc-provider has just logged out the clients of its session; these links would only notify them twice.
      await records.takeLinks(settings.sessions.manager.handleOf(req.sessionID));
      await endCurrentSession(req, ctx.res as unknown as Response, 'provider_logout');
    }
  };
}
