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
  /** How long each access token works, seconds. */
  accessTokenSeconds: number;
  /** How long the client keeps access without the user (its refresh tokens), seconds; 0 when it gets none. */
  refreshTokenSeconds: number;
  /** How long the answer is remembered, days; 0 when it is not (the client is asked at every request). */
  rememberedDays: number;
  /** The portal page where the user sees and withdraws what apps were allowed. */
  connectedAppsUrl: string;
}

/** A duration in words: "10 minutes", "14 days". */
export function durationText(seconds: number): string {
  const units: Array<[number, string]> = [
    [86_400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, unit] of units) {
    if (seconds >= size) {
      const count = Math.round(seconds / size);
      return `${count} ${unit}${count === 1 ? '' : 's'}`;
    }
  }
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
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
  const client = escapeHtml(model.clientName);
  const away =
    model.refreshTokenSeconds > 0
      ? `<p id="consent-offline"><strong>${client}</strong> keeps this access while you are away: it can renew it without you ` +
        `for up to ${durationText(model.refreshTokenSeconds)} after its last use, until you withdraw it.</p>`
      : `<p id="consent-offline">${client} gets no access while you are away: it must send you here again.</p>`;
  const terms =
    `<p id="consent-terms">Each access it gets works for ${durationText(model.accessTokenSeconds)}. ${away}` +
    (model.rememberedDays > 0
      ? `<p>Your answer is remembered for ${model.rememberedDays} days. You can withdraw it at any time on ` +
        `<a href="${escapeHtml(model.connectedAppsUrl)}">Connected apps</a>.</p>`
      : `<p id="consent-each-time">You are asked each time ${client} signs you in. You can withdraw an access it holds on ` +
        `<a href="${escapeHtml(model.connectedAppsUrl)}">Connected apps</a>.</p>`);
  return renderPage({
    title: `Allow ${model.clientName}?`,
    stylesheetUrl: stylesheet(model.assetsPath),
    body:
      `<h1>Allow ${escapeHtml(model.clientName)}?</h1>` +
      `<p>Signed in as <strong>${escapeHtml(model.userName)}</strong>. <strong>${escapeHtml(model.clientName)}</strong> asks to:</p>` +
      `<ul class="scopes">${items}</ul>` +
      terms +
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

/** One client on the Connected apps page. */
export interface ConnectedAppRow {
  clientId: string;
  clientName: string;
  scopes: readonly string[];
  /** Epoch milliseconds; undefined when never recorded. */
  lastUsedAt: number | undefined;
  /** Whether the client can renew its access while the user is away (it holds refresh tokens). */
  offline: boolean;
}

/** What the Connected apps page shows. */
export interface ConnectedAppsPageModel {
  assetsPath: string;
  userName: string;
  apps: readonly ConnectedAppRow[];
  /** Where "Withdraw" posts. */
  withdrawAction: string;
  notice?: string;
}

/**
 * The apps the signed-in user allowed through the provider: each with what it may see, whether it keeps access while
 * the user is away and when it last used it, and a button that withdraws it (its tokens stop working at once).
 *
 * @example
 * res.send(renderConnectedAppsPage({ assetsPath: '/portal-assets', userName: 'Alice', apps, withdrawAction: '/connected-apps/withdraw' }));
 */
export function renderConnectedAppsPage(model: ConnectedAppsPageModel): string {
  const rows = model.apps.map((app) => {
    const name = escapeHtml(app.clientName);
    const scopes = app.scopes.map((scope) => `<li>${escapeHtml(SCOPE_TEXT[scope] ?? `Use the "${scope}" permission`)}</li>`).join('');
    const used =
      app.lastUsedAt === undefined
        ? 'not used yet'
        : `last used <time datetime="${new Date(app.lastUsedAt).toISOString()}">${new Date(app.lastUsedAt).toUTCString()}</time>`;
    return (
      `<li data-client="${escapeHtml(app.clientId)}"><div><span class="device">${name}</span>` +
      `<p class="facts">${used} · ${app.offline ? 'keeps access while you are away' : 'only while you use it'}</p>` +
      `<ul class="scopes">${scopes}</ul></div>` +
      `<form method="post" action="${escapeHtml(model.withdrawAction)}"><input type="hidden" name="client" value="${escapeHtml(app.clientId)}">` +
      `<button type="submit" class="danger">Withdraw<span class="visually-hidden"> ${name}</span></button></form></li>`
    );
  });
  const notice = model.notice ? `<p class="notice" role="status">${escapeHtml(model.notice)}</p>` : '';
  return renderPage({
    title: 'Connected apps',
    stylesheetUrl: stylesheet(model.assetsPath),
    width: 'wide',
    body:
      `<h1>Connected apps</h1>${notice}<p>Signed in as <strong>${escapeHtml(model.userName)}</strong>. ` +
      'These apps may sign you in and use your account. Withdrawing one ends its access at once; it asks you again next time.</p>' +
      (rows.length > 0 ? `<ul class="sessions">${rows.join('')}</ul>` : '<p>No app has access to your account.</p>'),
  });
}
