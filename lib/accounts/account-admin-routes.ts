import express, { Router, type Request, type Response } from 'express';
import { ConflictError, NotFoundError } from '../http/errors';
import { guarded } from '../http/handlers';
import { escapeHtml } from '../http/pages/escape-html';
import { renderPage } from '../http/pages/page-shell';
import type { Policy } from '../rbac/policy';
import { requirePermission } from '../rbac/require-permission';
import { requireSession } from '../session/require-session';
import type { AuthenticationLevel } from '../session/step-up';
import { checkOptions, within } from '../util/options';
import type { AccountAdmin } from './account-admin';
import type { Account } from './writable-user-directory';

/** Options of {@link accountAdminRoutes}. */
export interface AccountAdminRoutesOptions {
  /** The policy that decides who administers accounts. */
  policy: Policy;
  /** The permission an administrator's roles must grant. Default `manage:accounts`. */
  permission?: string;
  /** The authentication level every admin request needs. Default `2fa`. */
  acr?: AuthenticationLevel;
  /** …presented within this many seconds (recent strong authentication). Default 900. */
  maxAgeSeconds?: number;
  /** The page's stylesheet. Default none. */
  stylesheetUrl?: string;
}

const ACTIONS = ['disable', 'enable', 'remove', 'reset-link', 'end-sessions'] as const;
type Action = (typeof ACTIONS)[number];
const DONE: Record<string, string> = {
  disable: 'The account is disabled; its sessions and app access have ended.',
  enable: 'The account is enabled.',
  remove: 'The account is removed; its sessions and app access have ended.',
  'reset-link': 'A password reset link was sent to the account’s address.',
  'end-sessions': 'The account’s sessions have ended.',
  'end-all': 'Every session of every user has ended.',
};

function accountRow(account: Account, self: boolean): string {
  const id = encodeURIComponent(account.id);
  const button = (action: Action, label: string, danger = false) =>
    `<form method="post" action="accounts/${escapeHtml(id)}/${action}"><button type="submit"${danger ? ' class="danger"' : ''}>${label}` +
    `<span class="visually-hidden"> ${escapeHtml(account.username)}</span></button></form>`;
  const actions = [
    self ? '' : account.disabled ? button('enable', 'Enable') : button('disable', 'Disable', true),
    account.email === undefined ? '' : button('reset-link', 'Send a reset link'),
    button('end-sessions', 'End sessions'),
    self ? '' : button('remove', 'Remove', true),
  ].join('');
  return (
    `<li data-account="${escapeHtml(account.id)}"><div><span class="device">${escapeHtml(account.name)} (${escapeHtml(account.username)})</span>` +
    `<p class="facts">${account.disabled ? 'disabled' : 'active'}${account.email ? ` · ${escapeHtml(account.email)}` : ''}</p></div>${actions}</li>`
  );
}

/**
 * An admin page over {@link accountAdmin}, mounted where the admin site wants it: `GET /accounts` (the accounts,
 * `?q=` to search, JSON for API clients), `POST /accounts/:id/{disable,enable,remove,reset-link,end-sessions}` and
 * `POST /sessions/end-all` (forms, answered 303 back to the page). Every route needs a session at `acr` (default
 * `2fa`) from the last `maxAgeSeconds` (default 900) and the `permission` (default `manage:accounts`); posts from
 * another origin are refused by `ssoSession` (403 `csrf_origin`). An administrator cannot disable or remove
 * their own account (409).
 *
 * @example
 * app.use('/admin', accountAdminRoutes(accountAdmin({ users, sessions, store, sendResetLink }), { policy }));
 */
export function accountAdminRoutes(admin: AccountAdmin, options: AccountAdminRoutesOptions): Router {
  checkOptions('accountAdminRoutes', options as unknown, {
    policy: { type: 'object', required: true, expected: 'a policy from createPolicy({ roles })' },
    permission: { type: 'string' },
    acr: { type: 'string', check: (acr: string) => (['1fa', '2fa', 'phr'].includes(acr) ? undefined : 'must be 1fa, 2fa or phr') },
    maxAgeSeconds: { type: 'integer', check: within(1, 86_400) },
    stylesheetUrl: { type: 'string' },
  });
  const [action, resource] = (options.permission ?? 'manage:accounts').split(':');
  const guard = [
    requireSession({ acr: options.acr ?? '2fa', maxAgeSeconds: options.maxAgeSeconds ?? 900 }),
    requirePermission(action!, resource ?? '*', { policy: options.policy }),
  ];
  const form = express.urlencoded({ extended: false, limit: '1kb', parameterLimit: 2 });
  const router = Router();

  router.get(
    '/accounts',
    ...guard,
    guarded(async function listAccounts(req: Request, res: Response) {
      const search = typeof req.query.q === 'string' ? req.query.q.slice(0, 100) : '';
      const page = await admin.list(search ? { search } : {});
      res.set('Cache-Control', 'no-store');
      if (req.accepts(['text/html', 'application/json']) === 'application/json') {
        res.json(page);
        return;
      }
      const done = typeof req.query.done === 'string' ? DONE[req.query.done] : undefined;
      const rows = page.accounts.map((account) => accountRow(account, `${admin.users.source}|${account.id}` === req.user!.id)).join('');
      res.type('html').send(
        renderPage({
          title: 'Accounts',
          ...(options.stylesheetUrl ? { stylesheetUrl: options.stylesheetUrl } : {}),
          width: 'wide',
          body:
            `<h1>Accounts</h1>${done ? `<p class="notice" role="status">${escapeHtml(done)}</p>` : ''}` +
            `<form method="get" action="accounts"><label for="q">Search</label><input id="q" name="q" value="${escapeHtml(search)}">` +
            `<button type="submit">Search</button></form><ul class="sessions" id="accounts">${rows}</ul>` +
            `<form method="post" action="sessions/end-all"><button type="submit" class="danger">End every session of every user</button></form>`,
        }),
      );
    }),
  );

  router.post(
    '/accounts/:id/:action',
    ...guard,
    form,
    guarded(async function administerAccount(req: Request, res: Response) {
      const chosen = String(req.params.action) as Action;
      if (!ACTIONS.includes(chosen)) throw new NotFoundError({ code: 'unknown_action', detail: 'There is no such account action.' });
      const accountId = String(req.params.id);
      if ((chosen === 'disable' || chosen === 'remove') && `${admin.users.source}|${accountId}` === req.user!.id) {
        throw new ConflictError({ code: 'own_account', detail: 'You cannot disable or remove your own account.' });
      }
      if (chosen === 'disable') await admin.disable(accountId, req);
      else if (chosen === 'enable') await admin.enable(accountId, req);
      else if (chosen === 'remove') await admin.remove(accountId, req);
      else if (chosen === 'reset-link') await admin.sendResetLink(accountId, req);
      else await admin.endSessions(accountId, req);
      res.redirect(303, `${req.baseUrl}/accounts?done=${chosen}`);
    }),
  );

  router.post(
    '/sessions/end-all',
    ...guard,
    guarded(async function endEverySession(req: Request, res: Response) {
      await admin.endAllSessions(req);
      // The administrator's own session ended too: the next page asks them to sign in again.
      res.redirect(303, `${req.baseUrl}/accounts?done=end-all`);
    }),
  );
  return router;
}
