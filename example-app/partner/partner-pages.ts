/**
 * The partner app's pages: another organisation's look, on its own domain. Static markup with no inline script or
 * style, so the kit's strict CSP holds; the demo apps' stylesheet is reused for legibility only.
 */
import type { SessionUser } from 'express-sso-kit';
import { escapeHtml } from '../common/app-pages';

/**
 * A page of the partner site around `body` (trusted markup; escape what it holds).
 *
 * @example
 * res.send(partnerPage('Partner · my notes', '<h1>My notes</h1>'));
 */
export function partnerPage(title: string, body: string): string {
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)}</title><link rel="stylesheet" href="/assets/app.css"></head>` +
    '<body><header class="top"><p class="brand">Partner <span>· an app on another domain</span></p></header>' +
    `<main>${body}</main></body></html>\n`
  );
}

/**
 * The signed-in page: who the portal's OpenID Provider says this is, and a sign-out that ends the portal session too
 * (RP-initiated logout at the provider).
 *
 * @example
 * res.send(renderPartnerPage(req.user!, 'http://auth.sso.localhost:8080'));
 */
export function renderPartnerPage(user: SessionUser, portal: string): string {
  return partnerPage(
    'Partner · express-sso-kit demo',
    '<h1>Partner</h1>' +
      `<p>This app lives outside the portal's domain, so it cannot read the portal's cookie. It signed you in through the portal's OpenID Provider at <code>${escapeHtml(portal)}</code>, with a session of its own.</p>` +
      '<section class="who" aria-labelledby="who-heading"><h2 id="who-heading" class="visually-hidden">Who is signed in</h2>' +
      `<p id="who" data-user-id="${escapeHtml(user.id)}" data-method="${escapeHtml(user.method)}">Signed in as <strong>${escapeHtml(user.name)}</strong> through the portal.</p>` +
      `<p class="meta">Account <code>${escapeHtml(user.id)}</code> · roles: ${user.roles.length ? escapeHtml(user.roles.join(', ')) : 'none'}</p>` +
      '<form method="get" action="/notes"><button type="submit" id="read-notes">Read my notes</button> <span class="meta">from the Notes API, with the access token the portal gave this app (<code>notes:read</code>)</span></form>' +
      '<form method="post" action="/logout/portal"><button type="submit" class="secondary">Sign out (here and at the portal)</button></form></section>',
  );
}

/**
 * What the partner shows when the portal cannot be an OpenID Provider (plain http on a domain that is not a loopback
 * name): why, and how to turn it on.
 *
 * @example
 * res.status(503).send(renderPartnerOffPage());
 */
export function renderPartnerOffPage(): string {
  return partnerPage(
    'Partner · off',
    '<h1>Partner sign-in is off</h1>' +
      '<p id="partner-off">The portal acts as an OpenID Provider only over https, or over plain http on <code>*.localhost</code> names. ' +
      'Run the demo with its default domains, or behind TLS (<code>DEMO_SECURE=1</code>).</p>',
  );
}

/**
 * Where the portal's end-session page returns: signed out here and at the portal.
 *
 * @example
 * res.type('html').send(renderPartnerSignedOutPage());
 */
export function renderPartnerSignedOutPage(): string {
  return partnerPage(
    'Partner · signed out',
    '<h1>Signed out</h1><p id="signed-out">You are signed out of the partner app and of the portal.</p><p><a href="/">Sign in again</a></p>',
  );
}
