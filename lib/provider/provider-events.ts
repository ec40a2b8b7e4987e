import type { Request } from 'express';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { KoaContextWithOIDC } from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { SecurityEvents } from '../events/security-events';
import { isKnownReason, type SecurityEventReason, type SecurityEventType } from '../events/vocabulary';

interface OAuthError {
  error?: unknown;
}

/** The request oidc-provider answers: the Express request the provider's router handed to it. */
function requestOf(ctx: KoaContextWithOIDC): Request {
  return ctx.req as unknown as Request;
}

function clientOf(ctx: KoaContextWithOIDC): { clientId?: string } {
  const clientId = ctx.oidc?.client?.clientId;
  return typeof clientId === 'string' ? { clientId } : {};
}

/** An OAuth error code as the vocabulary's reason of `type`, `other` for a code it does not list. */
function reasonOf<T extends SecurityEventType>(type: T, error: unknown): SecurityEventReason<T> {
  const code = (error as OAuthError | undefined)?.error;
  return (typeof code === 'string' && isKnownReason(type, code) ? code : 'other') as SecurityEventReason<T>;
}

interface ClientAuthError {
  error?: unknown;
  error_detail?: unknown;
  cause?: { message?: unknown; code?: unknown; name?: unknown };
}

/** Why oidc-provider refused a client assertion, from its error's detail and cause. */
export function assertionRefusalReason(error: unknown): SecurityEventReason<'client_assertion.refused'> {
  const { error_detail: detail, cause } = (error ?? {}) as ClientAuthError;
  const text = `${typeof detail === 'string' ? detail : ''} ${typeof cause?.message === 'string' ? cause.message : ''}`;
  if (/only be used once/.test(text)) return 'replayed';
  if (/audience|\baud\b/.test(text)) return 'wrong_audience';
  if (/expired/.test(text)) return 'expired';
  if (cause?.name === 'JWKSNoMatchingKey' || /no matching key|JWKSNoMatchingKey/i.test(text)) return 'unknown_key';
  return 'invalid';
}

/** Records a refused `private_key_jwt` assertion, whichever endpoint it was presented at. */
function watchClientAssertions(provider: Provider, events: SecurityEvents): void {
  const refused = (ctx: KoaContextWithOIDC, error: unknown): void => {
    if ((error as OAuthError | undefined)?.error !== 'invalid_client' || typeof ctx.oidc?.params?.client_assertion !== 'string') return;
    events.emit('client_assertion.refused', { reason: assertionRefusalReason(error), ...clientOf(ctx) }, requestOf(ctx));
  };
  provider.on('grant.error', refused);
  provider.on('pushed_authorization_request.error', refused);
  provider.on('introspection.error', refused);
  provider.on('revocation.error', refused);
}

const REVOKED_BY_ROUTE: Readonly<Record<string, SecurityEventReason<'provider.grant.revoked'>>> = {
  revocation: 'token_revocation',
  token: 'token_reuse',
  end_session: 'session_ended',
  end_session_confirm: 'session_ended',
};

/**
 * Records the decisions oidc-provider makes on its own endpoints as the kit's events: tokens issued and refused
 * at the token endpoint, refused authorization and pushed authorization requests, grants revoked (by the
 * revocation endpoint, a reused code or refresh token, a logout), and back-channel logout tokens a client did not
 * accept, and refused `private_key_jwt` client assertions (`client_assertion.refused`). Each event carries the request's facts and the client.
 *
 * @example
 * watchProviderDecisions(provider, settings.events);
 */
export function watchProviderDecisions(provider: Provider, events: SecurityEvents): void {
  watchClientAssertions(provider, events);
  provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
    const accountId = ctx.oidc.entities.AccessToken?.accountId ?? ctx.oidc.entities.Account?.accountId;
    const grantType = String(ctx.oidc.params?.grant_type ?? '');
    const reason = isKnownReason('provider.token.issued', grantType)
      ? (grantType as SecurityEventReason<'provider.token.issued'>)
      : 'other';
    events.emit('provider.token.issued', { reason, ...clientOf(ctx), ...(accountId ? { userId: accountId } : {}) }, requestOf(ctx));
  });
  provider.on('grant.error', (ctx: KoaContextWithOIDC, error: unknown) => {
    const grantType = ctx.oidc?.params?.grant_type;
    events.emit(
      'provider.token.refused',
      { reason: reasonOf('provider.token.refused', error), ...clientOf(ctx), ...(typeof grantType === 'string' ? { grantType } : {}) },
      requestOf(ctx),
    );
  });
  provider.on('authorization.error', (ctx: KoaContextWithOIDC, error: unknown) => {
    events.emit(
      'provider.authorization.refused',
      { reason: reasonOf('provider.authorization.refused', error), ...clientOf(ctx) },
      requestOf(ctx),
    );
  });
  provider.on('pushed_authorization_request.error', (ctx: KoaContextWithOIDC, error: unknown) => {
    events.emit('provider.par.refused', { reason: reasonOf('provider.par.refused', error), ...clientOf(ctx) }, requestOf(ctx));
  });
  provider.on('grant.revoked', (ctx: KoaContextWithOIDC) => {
    const reason = REVOKED_BY_ROUTE[ctx.oidc?.route ?? ''] ?? 'other';
    events.emit('provider.grant.revoked', { reason, ...clientOf(ctx) }, requestOf(ctx));
  });
  provider.on('backchannel.error', (ctx: KoaContextWithOIDC, _error: unknown, client: { clientId?: string }, accountId: string) => {
    events.emit(
      'provider.backchannel.failed',
      { reason: 'delivery_failed', ...(client?.clientId ? { clientId: client.clientId } : {}), userId: accountId },
      requestOf(ctx),
    );
  });
}
