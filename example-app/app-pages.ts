import { escapeHtml } from '../lib/portal/portal-pages';
import type { SessionUser } from '../lib/session/types';

/** Links every demo page shows, so a visitor can move between the sites. */
export interface DemoLinks {
  shop: string;
  admin: string;
  portal: string;
  sessions: string;
  notesApi: string;
}

const METHOD_LABELS: Record<string, string> = { password: 'a password', qr: 'a QR code', oidc: 'OpenID Connect' };

function layout(title: string, body: string): string {
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)}</title><link rel="stylesheet" href="/assets/app.css"><script src="/assets/app.js" defer></script>` +
    `</head><body><main>${body}</main></body></html>\n`
  );
}

function nav(links: DemoLinks): string {
  return (
    '<nav aria-label="Demo sites"><ul>' +
    `<li><a href="${escapeHtml(links.shop)}">Shop</a></li><li><a href="${escapeHtml(links.admin)}">Admin</a></li>` +
    `<li><a href="${escapeHtml(links.sessions)}">Your sessions</a></li></ul></nav>`
  );
}

function whoIsLoggedIn(user: SessionUser): string {
  return (
    `<p id="who" data-user-id="${escapeHtml(user.id)}" data-method="${escapeHtml(user.method)}">Signed in as <strong>${escapeHtml(user.name)}</strong>` +
    ` (id <code>${escapeHtml(user.id)}</code>) with ${escapeHtml(METHOD_LABELS[user.method] ?? user.method)}.` +
    ` Roles: ${user.roles.length ? escapeHtml(user.roles.join(', ')) : 'none'}.</p>` +
    '<form method="post" action="/logout"><button type="submit">Sign out everywhere</button></form>'
  );
}

/**
 * The shop or admin start page: who is logged in and how, a sign-out button, and the notes list the page's script
 * loads from the api site with a credentialed `fetch` (the api origin travels in `data-api`, not in an inline script).
 *
 * @example
 * res.send(renderAppPage('Shop', req.user!, links));
 */
export function renderAppPage(siteName: string, user: SessionUser, links: DemoLinks, extra = ''): string {
  return layout(
    `${siteName} · express-sso-kit demo`,
    `<h1>${escapeHtml(siteName)}</h1>${whoIsLoggedIn(user)}${extra}` +
      `<section aria-labelledby="notes-heading" id="notes" data-api="${escapeHtml(links.notesApi)}">` +
      '<h2 id="notes-heading">Your notes (from the api site)</h2>' +
      '<p id="notes-status" role="status" data-state="loading">Loading…</p><ul id="notes-list"></ul>' +
      '<form id="note-form"><label for="note-title">New note</label><input id="note-title" name="title" required maxlength="200">' +
      '<button type="submit">Add note</button></form></section>' +
      nav(links),
  );
}

/**
 * The friendly 403 page of the admin site: the user is signed in, just not allowed.
 *
 * @example
 * res.status(403).send(renderForbiddenPage(req.user!, links));
 */
export function renderForbiddenPage(user: SessionUser | undefined, links: DemoLinks): string {
  const who = user ? `You are signed in as <strong>${escapeHtml(user.name)}</strong>, but your account` : 'Your account';
  return layout(
    'Not allowed · Admin',
    '<h1>Sorry, this page is for administrators</h1>' +
      `<p id="forbidden">${who} may not read the reports. Ask an administrator for the <code>admin</code> role, or sign in as someone else.</p>` +
      (user ? '<form method="post" action="/logout"><button type="submit">Sign out everywhere</button></form>' : '') +
      nav(links),
  );
}
