import type { KeyValueStore } from '../store';
import type { SessionUser } from '../session/types';

/** The claims the provider releases about a user, copied from the session at each sign-in through the provider. */
export interface AccountSnapshot {
  name: string;
  roles: string[];
  email?: string;
  email_verified?: boolean;
}

/** One client a portal session signed in to: what back-channel logout and revocation need. */
export interface SessionLink {
  clientId: string;
  /** The `sid` the client's ID token carried. */
  sid: string;
  grantId: string;
  accountId: string;
}

const CONSENT_TTL_SECONDS = 365 * 86400;
/** As long as oidc-provider keeps an interaction. */
export const INTERACTION_TTL_SECONDS = 600;

function accountKey(userId: string): string {
  return `op-account:{${userId}}`;
}

function consentKey(userId: string, clientId: string): string {
  return `op-consent:{${userId}}:${clientId}`;
}

function linksKey(handle: string): string {
  return `op-links:{${handle}}`;
}

/**
 * The provider's own records in the kit store: account snapshots (so tokens and userinfo work without a browser),
 * consents remembered per user, client and scope, and the clients each portal session signed in to.
 *
 * @example
 * const records = new ProviderRecords(store, 14 * 86400);
 * await records.saveAccount(req.user);
 */
export class ProviderRecords {
  constructor(
    private readonly store: KeyValueStore,
    private readonly accountTtlSeconds: number,
  ) {}

  async saveAccount(user: SessionUser): Promise<void> {
    const snapshot: AccountSnapshot = { name: user.name, roles: [...user.roles] };
    const email = user.attributes?.email;
    if (typeof email === 'string') {
      snapshot.email = email;
      snapshot.email_verified = user.attributes?.email_verified === true;
    }
    await this.store.set(accountKey(user.id), JSON.stringify(snapshot), this.accountTtlSeconds);
  }

  async account(userId: string): Promise<AccountSnapshot | undefined> {
    const text = await this.store.get(accountKey(userId));
    return text === null ? undefined : (JSON.parse(text) as AccountSnapshot);
  }

  async consentedScopes(userId: string, clientId: string): Promise<string[]> {
    return this.store.members(consentKey(userId, clientId));
  }

  async rememberConsent(userId: string, clientId: string, scopes: readonly string[]): Promise<void> {
    if (scopes.length > 0) await this.store.addToSet(consentKey(userId, clientId), scopes, CONSENT_TTL_SECONDS);
  }

  async askedReauthentication(interactionUid: string): Promise<void> {
    // Kept when set: going back and forth to the login page must not move the moment a fresh sign-in is counted from.
    await this.store.setIfAbsent(`op-reauth:{${interactionUid}}`, String(Date.now()), INTERACTION_TTL_SECONDS);
  }

  async reauthenticationAskedAt(interactionUid: string): Promise<number | undefined> {
    const text = await this.store.get(`op-reauth:{${interactionUid}}`);
    return text === null ? undefined : Number(text);
  }

  async link(handle: string, link: SessionLink, ttlSeconds: number): Promise<void> {
    await this.store.addToSet(linksKey(handle), [JSON.stringify(link)], ttlSeconds);
  }

  /**
   * The clients a portal session signed in to, removed as they are read. Only the first caller gets them (a
   * SET NX claim), so several provider processes hearing the same logout notify each client once.
   */
  async takeLinks(handle: string): Promise<SessionLink[]> {
    if (!(await this.store.setIfAbsent(`${linksKey(handle)}:taken`, '1', 60))) return [];
    const members = await this.store.members(linksKey(handle));
    await this.store.delete(linksKey(handle));
    return members.flatMap((member) => {
      try {
        return [JSON.parse(member) as SessionLink];
      } catch {
        return [];
      }
    });
  }
}
