/**
 * The provider's HTML, as pure functions of plain data, in the kit's page shell: no inline script or style, so
 * the strict Content-Security-Policy of `securityHeaders()` holds.
 */
import { escapeHtml } from '../http/pages/escape-html';
import { renderPage } from '../http/pages/page-shell';

/** What the consent page shows. */
export interface ConsentPageModel {
  assetsPath: string;
  clientName: string;
  userName: string;
  /** The scopes asked for and not yet granted to this client by this user. */
  scopes: readonly string[];
  /** Where "Allow" posts. */
  allowAction: string;
  /** Where "Deny" posts. */
  denyAction: string;
}

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are (your account identifier)',
  profile: 'See your name and roles',
  email: 'See your email address',
};

function stylesheet(assetsPath: string): string {
  return `${assetsPath}/portal.css`;
}

/**
 * The consent page of a third-party client: which data it asks for, and two buttons. The answer is remembered per
 * user, client and scope, so the page appears again only when the client asks for more.
 *
 * @example
 * res.send(renderConsentPage({ assetsPath: '/portal-assets', clientName: 'Partner', userName: 'Alice', scopes: ['openid', 'email'], allowAction, denyAction }));
 */
export function renderConsentPage(model: ConsentPageModel): string {
  const items = model.scopes.map((scope) => `<li>${escapeHtml(SCOPE_TEXT[scope] ?? `Use the "${scope}" permission`)}</li>`).join('');
  return renderPage({
    title: `Allow ${model.clientName}?`,
    stylesheetUrl: stylesheet(model.assetsPath),
    body:
      `<h1>Allow ${escapeHtml(model.clientName)}?</h1>` +
      `<p>Signed in as <strong>${escapeHtml(model.userName)}</strong>. <strong>${escapeHtml(model.clientName)}</strong> asks to:</p>` +
      `<ul class="scopes">${items}</ul>` +
      `<form method="post" action="${escapeHtml(model.allowAction)}"><button type="submit" class="block">Allow</button></form>` +
      `<form method="post" action="${escapeHtml(model.denyAction)}"><button type="submit" class="button secondary block">Deny</button></form>`,
  });
}

/**
 * The confirmation of an RP-initiated logout: oidc-provider's hidden form (its anti-forgery token) and a button
 * that submits it. Signing out here ends the portal session too.
 *
 * @example
 * ctx.body = renderLogoutConfirmPage('/portal-assets', form);
 */
export function renderLogoutConfirmPage(assetsPath: string, providerForm: string): string {
  return renderPage({
    title: 'Sign out',
    stylesheetUrl: stylesheet(assetsPath),
    body:
      '<h1>Sign out?</h1><p>This signs you out of the portal and of every app you signed in to with it.</p>' +
      // The form is oidc-provider's own markup: a POST form with its xsrf token, nothing from the request.
      `${providerForm}<button type="submit" form="op.logoutForm" name="logout" value="yes" class="block">Sign out</button>`,
  });
}

/**
 * A page with a heading and one sentence: the end of a logout, or an error of the protocol.
 *
 * @example
 * ctx.body = renderNoticePage('/portal-assets', 'Signed out', 'You are signed out.');
 */
export function renderNoticePage(assetsPath: string, title: string, text: string): string {
  return renderPage({
    title,
    stylesheetUrl: stylesheet(assetsPath),
    body: `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>`,
  });
}

/**
 * A page that sends the browser on to `url` at once (meta refresh) with a link as fallback. It ends a redirect chain
 * that began with a form on the portal: Chrome holds every redirect after a form POST to that page's CSP
 * `form-action`, which would block the last hop to the client's redirect URI.
 *
 * @example
 * res.type('html').send(renderContinuePage('/portal-assets', resumeUrl));
 */
export function renderContinuePage(assetsPath: string, url: string): string {
  return renderPage({
    title: 'Signing you in',
    stylesheetUrl: stylesheet(assetsPath),
    refreshUrl: url,
    body: `<h1>Signing you in…</h1><p><a href="${escapeHtml(url)}">Continue</a></p>`,
  });
}
