/**
 * The provider's side of {@link endProviderAccess} and of a withdrawn consent: a user's grants revoked in this
 * process (tokens, back-channel logout). Kept apart from provider-access.ts, which the package exports, so the
 * public declarations never name oidc-provider's types.
 */
import type { Request } from 'express';
import type Provider from 'oidc-provider' with { 'resolution-mode': 'import' };
import type { SecurityEvents } from '../events/security-events';
import type { KeyValueStore } from '../store';
import { debugChannel } from '../util/debug';
import { PROVIDER_ACCESS_ENDED_CHANNEL } from './provider-access';
import type { ProviderRecords } from './provider-records';
import { endLinkedLogins } from './session-links';

const debug = debugChannel('oidc');

/**
 * Revokes a user's grants (every client's, or one client's) at once: tokens revoked, back-channel logout sent,
 * the remembered consent forgotten. Answers how many grants and remembered consents were withdrawn.
 *
 * @example
 * await revokeUserGrants(provider, records, 'directory:local|alice', { clientId: 'partner', reason: 'consent_withdrawn' });
 */
export async function revokeUserGrants(
  provider: Provider,
  records: ProviderRecords,
  userId: string,
  options: { clientId?: string; reason: 'consent_withdrawn' | 'account_disabled'; events?: SecurityEvents; req?: Request },
): Promise<number> {
  const { grants, consents } = await records.takeGrants(userId, options.clientId);
  await endLinkedLogins(provider, grants, options.events, options.reason, options.req);
  return grants.length + consents;
}

/**
 * Subscribes a provider to {@link endProviderAccess}: each announced user's grants are revoked here.
 *
 * @example
 * const unsubscribe = await listenForEndedAccess(store, provider, records, events);
 */
export async function listenForEndedAccess(
  store: KeyValueStore,
  provider: Provider,
  records: ProviderRecords,
  events?: SecurityEvents,
): Promise<() => Promise<void>> {
  return store.subscribe(PROVIDER_ACCESS_ENDED_CHANNEL, (message) => {
    let userId: unknown;
    try {
      userId = (JSON.parse(message) as { userId?: unknown }).userId;
    } catch {
      return;
    }
    if (typeof userId !== 'string' || userId === '') return;
    revokeUserGrants(provider, records, userId, { reason: 'account_disabled', ...(events ? { events } : {}) }).catch((error: unknown) => {
      debug('revoking the grants of an ended account failed: %s', error instanceof Error ? error.name : 'error');
    });
  });
}
