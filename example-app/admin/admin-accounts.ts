/**
 * The admin site's account page: the kit's `accountAdminRoutes` over the demo accounts in the store. An admin
 * disables, enables or removes an account (its sessions on every site and its partner-app access end at once), or
 * ends one user's or everyone's sessions. Every action needs the `manage:accounts` permission and a second factor
 * from the last 15 minutes.
 */
import {
  accountAdmin,
  accountAdminRoutes,
  ConflictError,
  mailer,
  passwordResetLinkSender,
  type KeyValueStore,
  type SsoSessionMiddleware,
} from 'express-sso-kit';
import type { Router } from 'express';
import { DEMO_MAIL_PORT_KEY, demoAccountDirectory } from '../common/accounts';
import { origin, type DemoConfig } from '../common/config';
import { policy } from '../common/access';

/**
 * The account routes of the admin site (`GET /accounts`, its forms).
 *
 * @example
 * app.use(adminAccountRoutes(store, sessions, config));
 */
export function adminAccountRoutes(store: KeyValueStore, sessions: SsoSessionMiddleware, config: DemoConfig): Router {
  const users = demoAccountDirectory(store, config.domain);
  // "Send a reset link" mails the portal's single-use link to the user's own address, through the mail catcher the
  // auth site runs (read at auth.<domain>/demo-mail); the administrator sees neither the link nor a password.
  const sendResetLink = async (userId: string) => {
    const port = Number(await store.get(DEMO_MAIL_PORT_KEY));
    if (!port) throw new ConflictError({ code: 'reset_unavailable', detail: 'The demo mail catcher is not running.' });
    const mail = mailer({ smtp: { host: '127.0.0.1', port }, from: `"SSO Demo" <no-reply@${config.domain}>`, siteName: 'SSO Demo' });
    const send = passwordResetLinkSender({ users, store, mailer: mail, resetUrl: `${origin(config, 'auth')}/password/reset` });
    await send(userId);
  };
  const admin = accountAdmin({
    users,
    sessions,
    store,
    sendResetLink,
    ...(sessions.context.events ? { events: sessions.context.events } : {}),
  });
  return accountAdminRoutes(admin, { policy, stylesheetUrl: '/assets/app.css' });
}
