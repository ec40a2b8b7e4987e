import type { Request } from 'express';
import { AccountTokens } from '../../accounts/account-tokens';
import { normalizeEmail } from '../../accounts/account-record';
import { isWritableUserDirectory, type Account, type WritableUserDirectory } from '../../accounts/writable-user-directory';
import { eventsFor } from '../../events/event-source';
import type { SecurityEvents } from '../../events/security-events';
import { NotFoundError, UnprocessableEntityError } from '../../http/errors';
import { MailDeliveryError, type Mailer } from '../../mail/mailer';
import { DEFAULT_DIRECTORY_SOURCE, identityId } from '../../session/identity';
import type { KeyValueStore } from '../../store/port';
import { debugChannel } from '../../util/debug';
import { checkOptions, KIT_STORE_OPTION, OptionsError, within, type OptionSchema } from '../../util/options';

/** Options of {@link passwordResetLinkSender} (and of the portal's forgotten-password page). */
export interface PasswordResetLinksOptions {
  /** The writable directory of the accounts. */
  users: WritableUserDirectory;
  /** The kit store the reset tokens live in (hashed). */
  store: KeyValueStore;
  mailer: Mailer;
  /**
   * The absolute URL of the portal's reset page, e.g. `https://auth.example.test/password/reset`: the link in the
   * mail is this URL with `?token=…`. Never derived from a request's Host header.
   */
  resetUrl: string;
  /** How long a link works: 300 to 3600 seconds. Default 900 (15 minutes). */
  lifetimeSeconds?: number;
  /** Where `password.reset_requested` is recorded. */
  events?: SecurityEvents;
}

/** What {@link SendResetLink} resolves to once the mail server took the message. */
export interface ResetLinkSent {
  /** When the link stops working, epoch milliseconds. */
  expiresAt: number;
}

/**
 * Sends a password reset link to a user's own address, as an administrator's "send a reset link" does: the
 * administrator never sees nor chooses the password (ASVS 6.4.6). Rejects with `NotFoundError` (404) for an unknown
 * user, `UnprocessableEntityError` (422, `no_email` or `account_disabled`) when the link could not be used, and
 * `MailDeliveryError` when the mail server did not take the message, in which case no usable link is left.
 */
export type SendResetLink = (userId: string) => Promise<ResetLinkSent>;

const OPTIONS: OptionSchema = {
  users: { type: 'object', required: true, expected: 'a writable user directory such as redisUserDirectory(store)' },
  store: KIT_STORE_OPTION,
  mailer: { type: 'object', required: true, expected: 'a Mailer from mailer({ smtp, from, siteName })' },
  resetUrl: {
    type: 'string',
    required: true,
    check: (url: string) => (/^https?:\/\/[^\s?#]+$/.test(url) ? undefined : `must be an absolute URL without query, got "${url}"`),
  },
  lifetimeSeconds: { type: 'integer', check: within(300, 3600) },
  events: { type: 'object', expected: 'the object securityEvents() returns' },
};

const debug = debugChannel('portal');

/**
 * Reset links for accounts of a writable directory: a 256-bit single-use token (stored only hashed, through
 * {@link AccountTokens} with purpose `password-reset`), valid 15 minutes by default, replaced by a newer request,
 * dead after use or after any password or address change; sent with the mailer's `passwordReset` template. A mail
 * that was not sent withdraws its token at once.
 *
 * @example
 * const links = new PasswordResetLinks({ users, store, mailer: mail, resetUrl: 'https://auth.example.test/password/reset' });
 * await links.send(account, 'admin');
 */
export class PasswordResetLinks {
  readonly tokens: AccountTokens;
  readonly lifetimeSeconds: number;
  readonly users: WritableUserDirectory;
  private readonly options: PasswordResetLinksOptions;

  constructor(options: PasswordResetLinksOptions) {
    checkOptions('passwordResetLinks', options as unknown, OPTIONS);
    if (!isWritableUserDirectory(options.users)) throw new OptionsError('passwordResetLinks: users must be a writable user directory');
    this.options = options;
    this.users = options.users;
    this.lifetimeSeconds = options.lifetimeSeconds ?? 900;
    this.tokens = new AccountTokens({
      store: options.store,
      users: options.users,
      purpose: 'password-reset',
      lifetimeSeconds: this.lifetimeSeconds,
    });
  }

  /**
   * Issues a link for the account and mails it to the account's address; rejects (and withdraws the link) when the
   * mail was not sent. Answers null when the account cannot have one (disabled, no address).
   */
  async send(account: Account, reason: 'self_service' | 'admin', req?: Request): Promise<ResetLinkSent | null> {
    if (account.disabled || !account.email) return null;
    const issued = await this.tokens.issue(account.id);
    if (!issued) return null;
    const link = `${this.options.resetUrl}?token=${encodeURIComponent(issued.token)}`;
    try {
      await this.options.mailer.send('passwordReset', account.email, {
        name: account.name,
        link,
        expiresInMinutes: Math.round(this.lifetimeSeconds / 60),
      });
    } catch (error) {
      // No link without its mail: a token nobody received must not stay usable.
      await this.tokens.revoke(account.id);
      throw error;
    }
    const source = this.options.users.source ?? DEFAULT_DIRECTORY_SOURCE;
    // A request's own events (those of ssoSession) when there is a request, else the ones given here.
    const events = req ? eventsFor(req, this.options.events) : this.options.events;
    events?.emit('password.reset_requested', { reason, userId: identityId({ source, subject: account.id }) }, req);
    return { expiresAt: issued.expiresAt };
  }

  /**
   * The forgotten-password request: mails a link when an enabled account has this address, and does nothing
   * otherwise. Never rejects and answers nothing, so no caller can tell the cases apart; a failed mail is logged
   * (`DEBUG=express-sso-kit:portal`) and its link withdrawn.
   */
  async requestByEmail(email: string, req?: Request): Promise<void> {
    try {
      const account = await this.options.users.findByEmail(normalizeEmail(email));
      if (account) await this.send(account, 'self_service', req);
    } catch (error) {
      debug('a reset request was not completed: %s', error instanceof MailDeliveryError ? error.message : (error as Error).name);
    }
  }
}

/**
 * The function an admin API takes to "send a reset link" to a user by id (ASVS 6.4.6): `sendResetLink(userId)`
 * mails the user a single-use link to their own address; the administrator never sees the link nor the password.
 *
 * @example
 * const sendResetLink = passwordResetLinkSender({ users, store, mailer: mail, resetUrl: 'https://auth.example.test/password/reset' });
 * app.post('/admin/users/:id/reset-link', requirePermission('users:manage'), async (req, res, next) => {
 *   try { await sendResetLink(req.params.id); res.status(202).end(); } catch (error) { next(error); }
 * });
 */
export function passwordResetLinkSender(options: PasswordResetLinksOptions | PasswordResetLinks): SendResetLink {
  const links = options instanceof PasswordResetLinks ? options : new PasswordResetLinks(options);
  const users = links.users;
  return async function sendResetLink(userId: string): Promise<ResetLinkSent> {
    if (typeof userId !== 'string' || userId === '') throw new NotFoundError({ code: 'user_not_found', detail: 'No such user.' });
    const account = await users.findById(userId);
    if (!account) throw new NotFoundError({ code: 'user_not_found', detail: 'No such user.' });
    if (account.disabled) {
      throw new UnprocessableEntityError([], { code: 'account_disabled', detail: 'The account is disabled; enable it first.' });
    }
    if (!account.email) throw new UnprocessableEntityError([], { code: 'no_email', detail: 'The account has no email address.' });
    const sent = await links.send(account, 'admin');
    if (!sent) throw new UnprocessableEntityError([], { code: 'account_disabled', detail: 'The account cannot get a reset link.' });
    return sent;
  };
}
