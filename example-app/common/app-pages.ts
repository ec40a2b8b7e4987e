/**
 * The look of the demo's own apps (shop and admin): one page layout, their stylesheet and script under `/assets`.
 * Pages are static markup with no inline script or style, so the kit's strict CSP holds.
 */
import { join } from 'node:path';
import express, { type RequestHandler } from 'express';
import { authenticationOf, type SessionUser } from 'express-sso-kit';
import { origin, type DemoConfig } from './config';

/**
 * Escapes text for HTML element content and double-quoted attribute values.
 *
 * @example
 * `<strong>${escapeHtml(user.name)}</strong>`
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Links every demo page shows, so a visitor can move between the sites. */
export interface DemoLinks {
  shop: string;
  admin: string;
  sessions: string;
  notesApi: string;
  /** The portal's two-factor settings (authenticator app, recovery codes). */
  twoFactor: string;
  /** The admin audit page, which needs two factors. */
  audit: string;
}

/**
 * The links of the demo's pages, from the sites' public origins.
 *
 * @example
 * res.send(renderAppPage('Shop', req.user!, demoLinks(config)));
 */
export function demoLinks(config: DemoConfig): DemoLinks {
  return {
    shop: `${origin(config, 'shop')}/`,
    admin: `${origin(config, 'admin')}/`,
    sessions: `${origin(config, 'auth')}/sessions`,
    twoFactor: `${origin(config, 'auth')}/two-factor`,
    audit: `${origin(config, 'admin')}/audit`,
    notesApi: `${origin(config, 'api')}/notes`,
  };
}

// What each factor of the session was (RFC 8176 `amr`), in the words of the page; `user` and `mfa` add nothing.
const FACTOR_LABELS: Record<string, string> = {
  pwd: 'a password',
  otp: 'a one-time code',
  hwk: 'a passkey',
  swk: 'a passkey',
  qr: 'a QR code',
  ext: 'the Demo IdP (OpenID Connect)',
};

/**
 * How the user signed in, every factor of the session: "a password and a one-time code", "a passkey".
 *
 * @example
 * describeSignIn(req.user!); // 'a password and a one-time code'
 */
export function describeSignIn(user: SessionUser): string {
  const labels = [...new Set(authenticationOf(user).amr.flatMap((method) => FACTOR_LABELS[method] ?? []))];
  if (labels.length === 0) return user.method;
  return labels.length === 1 ? labels[0]! : `${labels.slice(0, -1).join(', ')} and ${labels.at(-1)!}`;
}

/** Which account this is, when the sign-in was not the account's own (a linked identity, a QR login of its own). */
function accountNote(user: SessionUser): string {
  if (user.linkedFrom) return ' · the directory account your sign-in is linked to';
  if (user.source.startsWith('qr:')) return " · an account of its own: the QR provider's pseudonymous id, linked to no directory account";
  return '';
}

/**
 * The apps' stylesheet and script, served from `/assets`.
 *
 * @example
 * app.use('/assets', appAssets());
 */
export function appAssets(): RequestHandler {
  return express.static(join(__dirname, 'public'), { maxAge: '1h', index: false });
}

function layout(site: string, title: string, links: DemoLinks, body: string): string {
  const nav = (['Shop', 'Admin'] as const)
    .map((name) => {
      const href = name === 'Shop' ? links.shop : links.admin;
      return `<li><a href="${escapeHtml(href)}"${name === site ? ' aria-current="page"' : ''}>${name}</a></li>`;
    })
    .join('');
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)}</title><link rel="stylesheet" href="/assets/app.css"><script src="/assets/app.js" defer></script></head>` +
    `<body><header class="top"><p class="brand">${escapeHtml(site)} <span>· express-sso-kit demo</span></p>` +
    `<nav aria-label="Demo sites"><ul>${nav}<li><a href="${escapeHtml(links.sessions)}">Your sessions</a></li>` +
    `<li><a href="${escapeHtml(links.audit)}">Audit (two factors)</a></li><li><a href="${escapeHtml(links.twoFactor)}">Two-factor</a></li></ul></nav></header>` +
    `<main>${body}</main></body></html>\n`
  );
}

function whoIsSignedIn(user: SessionUser): string {
  return (
    `<section class="who" aria-labelledby="who-heading"><h2 id="who-heading" class="visually-hidden">Who is signed in</h2>` +
    `<p id="who" data-user-id="${escapeHtml(user.id)}" data-method="${escapeHtml(user.method)}">Signed in as <strong>${escapeHtml(user.name)}</strong>` +
    ` with ${escapeHtml(describeSignIn(user))}.</p>` +
    `<p class="meta">Account <code>${escapeHtml(user.id)}</code>${accountNote(user)} · roles: ${user.roles.length ? escapeHtml(user.roles.join(', ')) : 'none'}</p>` +
    '<form method="post" action="/logout"><button type="submit" class="secondary">Sign out everywhere</button></form></section>'
  );
}

/**
 * A signed-in app page: who is signed in and how, a sign-out button, and the user's notes, which the page's script
 * loads from the api site with a credentialed `fetch` (the api origin travels in `data-api`, not in inline script).
 *
 * @example
 * res.send(renderAppPage('Shop', req.user!, links, '<p>Welcome to the shop.</p>'));
 */
export function renderAppPage(site: string, user: SessionUser, links: DemoLinks, content = ''): string {
  return layout(
    site,
    `${site} · express-sso-kit demo`,
    links,
    `<h1>${escapeHtml(site)}</h1>${content}${whoIsSignedIn(user)}` +
      `<section aria-labelledby="notes-heading" id="notes" data-api="${escapeHtml(links.notesApi)}">` +
      '<h2 id="notes-heading">Your notes <span class="meta">(from the api site)</span></h2>' +
      '<p id="notes-status" role="status" data-state="loading">Loading…</p><ul id="notes-list"></ul>' +
      '<form id="note-form" class="inline"><label for="note-title">New note</label>' +
      '<input id="note-title" name="title" required maxlength="200"><button type="submit">Add note</button></form></section>',
  );
}

/**
 * The admin site's 403 page: the user is signed in, just not allowed, and is told why and what to do.
 *
 * @example
 * res.status(403).send(renderForbiddenPage(req.user, links));
 */
export function renderForbiddenPage(user: SessionUser | undefined, links: DemoLinks): string {
  const who = user ? `You are signed in as <strong>${escapeHtml(user.name)}</strong>, but this account` : 'Your account';
  return layout(
    'Admin',
    'Not allowed · Admin',
    links,
    '<h1>Sorry, this page is for administrators</h1>' +
      `<p id="forbidden">${who} may not read the reports. Ask an administrator for the <code>admin</code> role, or sign in as someone else.</p>` +
      (user ? '<form method="post" action="/logout"><button type="submit">Sign out everywhere</button></form>' : '') +
      `<p><a href="${escapeHtml(links.shop)}">Back to the shop</a></p>`,
  );
}
