import type { KeyValueStore } from '../store';
import { ProviderRecords } from './provider-records';

/** The store channel on which an account's provider access is ended (see {@link endProviderAccess}). */
export const PROVIDER_ACCESS_ENDED_CHANNEL = 'provider:access-ended';

/**
 * Ends every OpenID Provider grant of a user, from any process sharing the kit store (an admin site need not run
 * the provider): the user's claims snapshot goes at once, so no refresh token or userinfo call of the account
 * works any more, and every provider process is told over the store's publish/subscribe to revoke the user's
 * grants (codes, access and refresh tokens) and send back-channel logout tokens to the clients.
 *
 * @example
 * await users.setDisabled(userId, true);
 * await endProviderAccess(store, userId);
 */
export async function endProviderAccess(store: KeyValueStore, userId: string): Promise<void> {
  await new ProviderRecords(store, 60).forgetAccount(userId);
  await store.publish(PROVIDER_ACCESS_ENDED_CHANNEL, JSON.stringify({ userId }));
}
