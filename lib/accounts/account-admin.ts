import type { Request } from 'express';
import type { SecurityEvents } from '../events/security-events';
import { BadRequestError, ConflictError, NotFoundError } from '../http/errors';
import { endProviderAccess } from '../provider/provider-access';
import { identityId } from '../session/identity';
import type { SessionManager } from '../session/types';
import type { KeyValueStore } from '../store/port';
import { checkOptions, type OptionSchema } from '../util/options';
import type { Account, AccountPage, AccountSearch, WritableUserDirectory } from './writable-user-directory';

/** Options of {@link accountAdmin}. */
export interface AccountAdminOptions {
  /** The directory whose accounts are administered. */
  users: WritableUserDirectory;
  /** The session manager of `ssoSession` (`ssoSession(...).manager`): how a user's sessions are ended. */
  sessions: { readonly manager: SessionManager };
  /** The kit store the OpenID Provider keeps its grants in (the same as `ssoSession`'s); its grants end with the account. */
  store: KeyValueStore;
  /**
   * Sends the account's owner a password reset link (ASVS 6.4.6: the administrator never sees or chooses the
   * password). Usually built from `AccountTokens` and the kit's mailer. Without it, `sendResetLink` is refused.
   */
  sendResetLink?: (userId: string) => Promise<void>;
  /** Where admin actions are recorded. */
  events?: SecurityEvents;
}

/** What an admin action is told about who acts: the request of a signed-in administrator (its user is the actor). */
export type AdminActor = Request | undefined;

/** The administrator's operations on accounts; every one is recorded with the actor. */
export interface AccountAdmin {
  readonly users: WritableUserDirectory;
  /** A page of accounts (never a password hash). */
  list(query?: AccountSearch): Promise<AccountPage>;
  /** Disables the account and, at once, ends every session and OpenID Provider grant of it, on every instance. */
  disable(accountId: string, req?: AdminActor): Promise<Account>;
  /** Enables a disabled account; its owner signs in again (nothing that ended comes back). */
  enable(accountId: string, req?: AdminActor): Promise<Account>;
  /** Removes the account after ending every session and OpenID Provider grant of it. */
  remove(accountId: string, req?: AdminActor): Promise<void>;
  /** Sends the owner a reset link through the `sendResetLink` option; the administrator never learns the password. */
  sendResetLink(accountId: string, req?: AdminActor): Promise<void>;
  /** Ends every session of the account (ASVS 7.4.5); resolves to how many were live. */
  endSessions(accountId: string, req?: AdminActor): Promise<number>;
  /** Ends every session of every user (ASVS 7.4.5). */
  endAllSessions(req?: AdminActor): Promise<{ users: number; sessions: number }>;
}

const OPTIONS: OptionSchema = {
  users: { type: 'object', required: true, expected: 'a writable user directory such as redisUserDirectory({ store })' },
  sessions: {
    type: 'function',
    required: true,
    expected: 'the ssoSession middleware (it carries the session manager)',
    check: (sessions: { manager?: unknown }) => (typeof sessions.manager === 'object' ? undefined : 'must be what ssoSession() returned'),
  },
  store: { type: 'object', required: true, expected: 'the kit store (RedisStore) that ssoSession and openidProvider use' },
  sendResetLink: { type: 'function' },
  events: { type: 'object' },
};

/**
 * Account administration as a library API, for an admin page or a script: disable, enable, remove, send a reset
 * link, end a user's sessions, end everyone's. Disabling or removing ends the account's sessions (deleted from the
 * store and announced, so every instance's session cache drops them: a tab still open answers 401 at its next
 * request) and its OpenID Provider grants (tokens revoked, back-channel logout sent) at once. Guard the routes that
 * call it (see `accountAdminRoutes`); it trusts its caller.
 *
 * @example
 * const admin = accountAdmin({ users, sessions, store, sendResetLink: (id) => resets.send(id), events });
 * await admin.disable('alice', req); // account.disabled, session.ended (account_disabled), provider grants revoked
 */
export function accountAdmin(options: AccountAdminOptions): AccountAdmin {
  checkOptions('accountAdmin', options as unknown, OPTIONS);
  const { users, store, events } = options;
  const manager = options.sessions.manager;
  const actorOf = (req: AdminActor) => (req?.user ? { actorId: req.user.id } : {});
  const userIdOf = (account: Account) => identityId({ source: users.source, subject: account.id });

  async function existing(accountId: string): Promise<Account> {
    if (typeof accountId !== 'string' || accountId === '' || accountId.length > 128) {
      throw new BadRequestError({ code: 'invalid_account', detail: 'Name an account by its id.' });
    }
    const account = await users.findById(accountId);
    if (!account) throw new NotFoundError({ code: 'account_not_found', detail: 'There is no such account.' });
    return account;
  }

  async function endEverything(account: Account, reason: 'account_disabled' | 'account_removed', req: AdminActor): Promise<void> {
    const userId = userIdOf(account);
    const count = await manager.logoutEverywhere(userId);
    events?.emit('session.ended', { reason, userId, count, ...actorOf(req) }, req);
    await endProviderAccess(store, userId);
  }

  return {
    users,
    list: (query) => users.listAccounts(query),
    async disable(accountId, req) {
      await existing(accountId);
      const account = await users.setDisabled(accountId, true);
      if (!account) throw new NotFoundError({ code: 'account_not_found', detail: 'There is no such account.' });
      events?.emit('account.disabled', { reason: 'admin', userId: userIdOf(account), ...actorOf(req) }, req);
      // After the flag: a login racing this one is refused by the directory, and any session it made is ended here.
      await endEverything(account, 'account_disabled', req);
      return account;
    },
    async enable(accountId, req) {
      await existing(accountId);
      const account = await users.setDisabled(accountId, false);
      if (!account) throw new NotFoundError({ code: 'account_not_found', detail: 'There is no such account.' });
      events?.emit('account.enabled', { reason: 'admin', userId: userIdOf(account), ...actorOf(req) }, req);
      return account;
    },
    async remove(accountId, req) {
      const account = await existing(accountId);
      // Disabled first, so no new login can start between ending the sessions and removing the account.
      await users.setDisabled(accountId, true);
      await endEverything(account, 'account_removed', req);
      await users.remove(accountId);
      events?.emit('account.removed', { reason: 'admin', userId: userIdOf(account), ...actorOf(req) }, req);
    },
    async sendResetLink(accountId, req) {
      if (!options.sendResetLink) {
        throw new ConflictError({ code: 'reset_unavailable', detail: 'Password reset links are not configured.' });
      }
      const account = await existing(accountId);
      if (account.email === undefined) {
        throw new ConflictError({ code: 'no_email', detail: 'This account has no email address to send a link to.' });
      }
      await options.sendResetLink(account.id);
      events?.emit('password.reset_requested', { reason: 'admin', userId: userIdOf(account), ...actorOf(req) }, req);
    },
    async endSessions(accountId, req) {
      const account = await existing(accountId);
      const userId = userIdOf(account);
      const count = await manager.logoutEverywhere(userId);
      events?.emit('session.ended', { reason: 'admin', userId, count, ...actorOf(req) }, req);
      return count;
    },
    async endAllSessions(req) {
      const ended = await manager.logoutEveryone();
      events?.emit('session.ended', { reason: 'admin', count: ended.sessions, ...actorOf(req) }, req);
      return ended;
    },
  };
}
