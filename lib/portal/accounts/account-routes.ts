import type { Request, RequestHandler, Router } from 'express';
import type { PortalSettings } from '../portal-options';
import type { AccountRuntime } from './account-runtime';
import { mountEmailChange } from './email-change-routes';
import { mountPasswordChange } from './password-change-routes';
import { mountPasswordReset } from './password-reset-routes';

/**
 * Mounts the self-service account pages: the password change always, and with a mailer the forgotten-password
 * reset and the address change.
 *
 * @example
 * if (settings.accounts) mountAccountPages(router, settings, settings.accounts, parseForm);
 */
export function mountAccountPages(router: Router, settings: PortalSettings, accounts: AccountRuntime, parseForm: RequestHandler): void {
  mountPasswordChange(router, settings, accounts, parseForm);
  if (accounts.resets) mountPasswordReset(router, settings, accounts, accounts.resets, parseForm);
  if (accounts.settings.mailer) mountEmailChange(router, settings, accounts, accounts.settings.mailer, parseForm);
}

/**
 * The account pages the sessions page links to.
 *
 * @example
 * renderSessionsPage({ ..., accountLinks: accountLinks(req, accounts) });
 */
export function accountLinks(req: Request, accounts: AccountRuntime): Array<{ href: string; label: string }> {
  return [
    { href: `${req.baseUrl}/password`, label: 'Change your password' },
    ...(accounts.settings.mailer ? [{ href: `${req.baseUrl}/email`, label: 'Change your email address' }] : []),
  ];
}
