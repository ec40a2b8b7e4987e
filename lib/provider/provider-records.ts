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

/** How long a consent is remembered, days (ASVS 10.7.2: the consent page says so). */
export const CONSENT_TTL_DAYS = 365;
const CONSENT_TTL_SECONDS = CONSENT_TTL_DAYS * 86400;
/** As long as oidc-provider keeps an interaction. */
export const INTERACTION_TTL_SECONDS = 600;

function accountKey(userId: string): string {
  return `op-account:{${userId}}`;
}

function consentKey(userId: string, clientId: string): string {
  return `op-consent:{${userId}}:${clientId}`;
}

function grantsKey(userId: string): string {
  return `op-grants:{${userId}}`;
}

function consentedClientsKey(userId: string): string {
  return `op-consented:{${userId}}`;
}

function usedKey(userId: string, clientId: string): string {
  return `op-used:{${userId}}:${clientId}`;
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
    if (scopes.length === 0) return;
    await this.store.addToSet(consentKey(userId, clientId), scopes, CONSENT_TTL_SECONDS);
    // Which clients hold a remembered consent, so the user can see and withdraw one even when no grant is live.
    await this.store.addToSet(consentedClientsKey(userId), [clientId], CONSENT_TTL_SECONDS);
  }

  /** The clients the user gave a consent that is still remembered. */
  async consentedClients(userId: string): Promise<string[]> {
    const clients = await this.store.members(consentedClientsKey(userId));
    const remembered = await Promise.all(clients.map(async (clientId) => (await this.consentedScopes(userId, clientId)).length > 0));
    return clients.filter((_clientId, position) => remembered[position]);
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
    // Also under the user, for as long as the grant's refresh tokens can live: what "Connected apps" lists and what
    // disabling the account or withdrawing a consent revokes, whether or not the session is still there.
    await this.store.addToSet(grantsKey(link.accountId), [JSON.stringify(link)], this.accountTtlSeconds);
    await this.noteUse(link.accountId, link.clientId);
  }

  /** Records that the client used the user's grant now (a code issued, a token issued or refreshed). */
  async noteUse(userId: string, clientId: string): Promise<void> {
    await this.store.set(usedKey(userId, clientId), String(Date.now()), this.accountTtlSeconds);
  }

  /** When the client last used the user's grant, epoch milliseconds; undefined when unknown. */
  async lastUse(userId: string, clientId: string): Promise<number | undefined> {
    const text = await this.store.get(usedKey(userId, clientId));
    return text === null ? undefined : Number(text);
  }

  /** Every grant the user gave (one per client and portal session), from the user's index. */
  async grantsOf(userId: string): Promise<SessionLink[]> {
    return parseLinks(await this.store.members(grantsKey(userId)));
  }

  /**
   * Takes the user's grants out of the index (all of them, or one client's) and forgets the clients' remembered
   * consents, so the next sign-in at such a client asks again; answers the grants to revoke and how many
   * remembered consents were forgotten.
   */
  async takeGrants(userId: string, clientId?: string): Promise<{ grants: SessionLink[]; consents: number }> {
    const consented = await this.consentedClients(userId);
    const members = await this.store.members(grantsKey(userId));
    const taken = members.filter((member) => clientId === undefined || parseLinks([member])[0]?.clientId === clientId);
    if (taken.length > 0) await this.store.removeFromSet(grantsKey(userId), taken);
    const links = parseLinks(taken);
    const clients = clientId === undefined ? [...new Set([...links.map((link) => link.clientId), ...consented])] : [clientId];
    if (clients.length > 0) {
      await this.store.delete(...clients.flatMap((client) => [consentKey(userId, client), usedKey(userId, client)]));
      await this.store.removeFromSet(consentedClientsKey(userId), clients);
    }
    return { grants: links, consents: consented.filter((client) => clients.includes(client)).length };
  }

  /** Drops the user's claims snapshot: refresh tokens and userinfo stop working for the account at once. */
  async forgetAccount(userId: string): Promise<void> {
    await this.store.delete(accountKey(userId));
  }

  /**
   * The clients a portal session signed in to, removed as they are read. Only the first caller gets them (a
   * SET NX claim), so several provider processes hearing the same logout notify each client once.
   */
  async takeLinks(handle: string): Promise<SessionLink[]> {
    if (!(await this.store.setIfAbsent(`${linksKey(handle)}:taken`, '1', 60))) return [];
    const members = await this.store.members(linksKey(handle));
    await this.store.delete(linksKey(handle));
    return parseLinks(members);
  }
}

function parseLinks(members: readonly string[]): SessionLink[] {
  return members.flatMap((member) => {
    try {
      return [JSON.parse(member) as SessionLink];
    } catch {
      return [];
    }
  });
}
