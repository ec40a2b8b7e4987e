/**
 * Self-service accounts on the demo portal: the demo accounts in a writable directory on Redis, the portal's mail
 * going to the demo's own mail catcher (read at `/demo-mail`), password change, reset by email, address change and
 * notices. On only where the portal's URLs are https or loopback names (the kit mails links to https portals only).
 */
import type { Express } from 'express';
import { mailer, type KeyValueStore, type LoginPortalOptions } from 'express-sso-kit';
import { DEMO_MAIL_PORT_KEY, demoAccountDirectory } from '../common/accounts';
import { origin, type DemoConfig } from '../common/config';
import { demoMailPages, startDemoMailCatcher } from './demo-mail';

/**
 * The portal's `users` and `accounts` options, and the mail catcher's pages mounted on `app`.
 *
 * @example
 * const { users, accounts } = await demoPortalAccounts(app, config, store);
 */
export async function demoPortalAccounts(
  app: Express,
  config: DemoConfig,
  store: KeyValueStore,
): Promise<Pick<LoginPortalOptions, 'users' | 'accounts'>> {
  // The same rule as QR login's: https, or http on a loopback name such as *.localhost.
  if (!config.qrLogin) return { users: demoAccountDirectory(store, config.domain) };
  const catcher = await startDemoMailCatcher();
  app.use('/demo-mail', demoMailPages(catcher));
  await store.set(DEMO_MAIL_PORT_KEY, String(catcher.port));
  const mail = mailer({
    smtp: { host: '127.0.0.1', port: catcher.port },
    from: `"SSO Demo" <no-reply@${config.domain}>`,
    siteName: 'SSO Demo',
  });
  return { users: demoAccountDirectory(store, config.domain), accounts: { portalUrl: origin(config, 'auth'), mailer: mail } };
}
