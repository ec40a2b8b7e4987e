import type { Request } from 'express';
import type { Account, WritableUserDirectory } from '../../accounts/writable-user-directory';
import type { SecurityEvents } from '../../events/security-events';
import { describeDevice } from '../../http/pages/readable-request';
import type { Mailer } from '../../mail/mailer';
import type { MailData } from '../../mail/mail-templates';
import { identityId } from '../../session/identity';
import type { SessionUser } from '../../session/types';
import type { KeyValueStore } from '../../store/port';
import { debugChannel } from '../../util/debug';
import { clientNetwork } from '../throttle/client-network';
import type { AccountNoticeKind } from './account-options';

const debug = debugChannel('portal');
// A network a user signed in from is remembered this long (half a year), each sign-in renewing it.
const SEEN_NETWORK_SECONDS = 180 * 86_400;
const MAX_SEEN_NETWORKS = 50;

/** What the notifier needs; the portal builds it from its settings. */
export interface AccountNoticeSettings {
  users: Pick<WritableUserDirectory, 'findById'>;
  store: KeyValueStore;
  mailer: Mailer | undefined;
  /** Which kinds are mailed. */
  notices: Record<AccountNoticeKind, boolean>;
  /** The sessions page the notices link to (absolute). */
  sessionsUrl: string;
  directorySource: string;
  events: (req: Request | undefined) => SecurityEvents | undefined;
}

type NoticeData<K extends AccountNoticeKind> = Omit<MailData[K], 'siteName' | 'name' | 'at' | 'sessionsUrl'>;

/**
 * Mails the security notices of ASVS 6.3.5 and 6.3.7 (a password, address or sign-in method changed; a sign-in
 * from a browser and network never seen for the account), each linking to the sessions page. A notice is best
 * effort: a mail that cannot be sent never undoes the change it reports, it is recorded as `notification.failed`
 * (a delivered one as `notification.sent`). Only accounts of the portal's writable directory that have an address
 * get notices.
 *
 * @example
 * await notices.send(req, 'passwordChanged', account, {});
 */
export class AccountNotices {
  constructor(private readonly settings: AccountNoticeSettings) {}

  /** Whether notices of this kind are mailed at all. */
  enabled(kind: AccountNoticeKind): boolean {
    return this.settings.mailer !== undefined && this.settings.notices[kind];
  }

  /** Mails one notice to the account's address (or `to`); never throws. */
  async send<K extends AccountNoticeKind>(
    req: Request | undefined,
    kind: K,
    account: Account,
    data: NoticeData<K>,
    to?: string,
  ): Promise<void> {
    const mailer = this.settings.mailer;
    const address = to ?? account.email;
    if (!mailer || !this.settings.notices[kind] || !address) return;
    const userId = identityId({ source: this.settings.directorySource, subject: account.id });
    const events = this.settings.events(req);
    try {
      const message = { ...data, name: account.name, at: Date.now(), sessionsUrl: this.settings.sessionsUrl };
      await mailer.send(kind, address, message as unknown as Omit<MailData[K], 'siteName'>);
      events?.emit('notification.sent', { reason: 'delivered', kind, userId }, req);
    } catch (error) {
      debug('a %s notice was not sent: %s', kind, error instanceof Error ? error.message : 'error');
      events?.emit('notification.failed', { reason: 'mailer_error', kind, userId }, req);
    }
  }

  /** The directory account of a session user, or undefined for users of other sources. */
  async accountOf(user: SessionUser | undefined): Promise<Account | undefined> {
    if (!user || user.source !== this.settings.directorySource) return undefined;
    return (await this.settings.users.findById(user.subject)) ?? undefined;
  }

  /**
   * A second factor or passkey of the signed-in user changed: mails `factorChanged`. Call it after the change.
   *
   * @example
   * await notices.factorChanged(req, 'passkey', 'removed');
   */
  async factorChanged(
    req: Request,
    factor: MailData['factorChanged']['factor'],
    change: MailData['factorChanged']['change'],
  ): Promise<void> {
    if (!this.enabled('factorChanged')) return;
    const account = await this.accountOf(req.user);
    if (account) await this.send(req, 'factorChanged', account, { factor, change });
  }

  /**
   * A sign-in succeeded: when the browser never signed in to this account before (`knownBrowser` false) and its
   * network is not among the account's remembered ones, mails `newSignIn`. The first sign-in ever recorded only
   * starts the list (there is nothing yet to compare with). Never throws.
   */
  async signedIn(req: Request, accountId: string, knownBrowser: boolean): Promise<void> {
    if (!this.enabled('newSignIn')) return;
    try {
      const network = clientNetwork(req.ip ?? req.socket.remoteAddress ?? '');
      const key = `account-networks:{${identityId({ source: this.settings.directorySource, subject: accountId })}}`;
      const seen = await this.settings.store.members(key);
      if (seen.length < MAX_SEEN_NETWORKS || seen.includes(network)) {
        await this.settings.store.addToSet(key, [network], SEEN_NETWORK_SECONDS);
      }
      if (knownBrowser || seen.length === 0 || seen.includes(network)) return;
      const account = await this.settings.users.findById(accountId);
      if (!account) return;
      const device = describeDevice(typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined);
      await this.send(req, 'newSignIn', account, { device, network });
    } catch (error) {
      debug('the new sign-in check failed: %s', error instanceof Error ? error.message : 'error');
    }
  }
}
