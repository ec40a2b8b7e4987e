/**
 * The portal's HTML, as pure functions of plain data. Every page is static markup: no inline script or style, so
 * the strict Content-Security-Policy of `securityHeaders()` holds; behaviour and looks come from the router's
 * `/portal-assets/portal.js` and `/portal-assets/portal.css`.
 */

/**
 * Escapes text for HTML element content and double-quoted attributes.
 *
 * @example
 * escapeHtml('<b>"x"</b>'); // '&#60;b&#62;&#34;x&#34;&#60;/b&#62;'
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A "Sign in with …" link on the login page. */
export interface LoginLink {
  label: string;
  href: string;
}

/** What the login page shows. */
export interface LoginPageModel {
  title: string;
  /** Path prefix of the router's assets, e.g. `/portal-assets`. */
  assetsPath: string;
  /** Where the form posts. */
  formAction: string;
  /** The sanitized return_to, carried through a hidden field; empty when none. */
  returnTo: string;
  /** Username to prefill after a failed attempt (never the password). */
  username?: string;
  /** Message announced with role="alert". */
  error?: string;
  qrLink?: LoginLink;
  providerLinks: LoginLink[];
}

function layout(title: string, assetsPath: string, body: string): string {
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)}</title>` +
    `<link rel="stylesheet" href="${escapeHtml(assetsPath)}/portal.css">` +
    `<script src="${escapeHtml(assetsPath)}/portal.js" defer></script>` +
    `</head><body><main class="card">${body}</main></body></html>\n`
  );
}

/**
 * The login page: a password form first (username, password, submit, in that focus order), then the other ways
 * to sign in. An error is announced by screen readers (role="alert") and tied to the fields with aria-describedby.
 *
 * @example
 * res.send(renderLoginPage({ title: 'Sign in', assetsPath: '/portal-assets', formAction: '/login', returnTo: '', providerLinks: [] }));
 */
export function renderLoginPage(model: LoginPageModel): string {
  const invalid = model.error ? ' aria-invalid="true" aria-describedby="login-error"' : '';
  const alert = model.error ? `<p class="alert" role="alert" id="login-error">${escapeHtml(model.error)}</p>` : '';
  const others: string[] = [];
  if (model.qrLink)
    others.push(`<li><a class="button secondary" href="${escapeHtml(model.qrLink.href)}">${escapeHtml(model.qrLink.label)}</a></li>`);
  for (const link of model.providerLinks) {
    others.push(`<li><a class="button secondary" href="${escapeHtml(link.href)}">${escapeHtml(link.label)}</a></li>`);
  }
  const alternatives = others.length
    ? `<section aria-labelledby="other-ways"><h2 id="other-ways">Other ways to sign in</h2><ul class="alternatives">${others.join('')}</ul></section>`
    : '';
  return layout(
    model.title,
    model.assetsPath,
    `<h1>${escapeHtml(model.title)}</h1>${alert}` +
      `<form method="post" action="${escapeHtml(model.formAction)}" class="login-form">` +
      `<input type="hidden" name="return_to" value="${escapeHtml(model.returnTo)}">` +
      `<div class="field"><label for="username">Username</label>` +
      `<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="256" value="${escapeHtml(model.username ?? '')}"${invalid}></div>` +
      `<div class="field"><label for="password">Password</label>` +
      `<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"${invalid}></div>` +
      `<button type="submit">Sign in</button></form>${alternatives}`,
  );
}

/** One row of the "your sessions" page. */
export interface SessionRow {
  /** Opaque handle the revoke form posts back. */
  handle: string;
  userAgent: string;
  ip: string;
  /** Epoch milliseconds. */
  lastSeenAt: number;
  createdAt: number;
  method?: string;
  current: boolean;
}

/** What the sessions page shows. */
export interface SessionsPageModel {
  title: string;
  assetsPath: string;
  userName: string;
  sessions: SessionRow[];
  revokeAction: string;
  logoutAction: string;
  notice?: string;
}

function formatTime(epochMillis: number): string {
  return Number.isFinite(epochMillis) && epochMillis > 0
    ? new Date(epochMillis)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC')
    : 'unknown';
}

/**
 * The "your sessions" page: each signed-in browser of the user with a revoke button, the current one marked.
 *
 * @example
 * res.send(renderSessionsPage({ title: 'Your sessions', assetsPath: '/portal-assets', userName: 'Alice', sessions, revokeAction: '/sessions/revocations', logoutAction: '/logout' }));
 */
export function renderSessionsPage(model: SessionsPageModel): string {
  const rows = model.sessions
    .map((s) => {
      const marker = s.current ? ' <strong class="badge">This browser</strong>' : '';
      return (
        `<tr${s.current ? ' aria-current="true" class="current"' : ''}>` +
        `<td>${escapeHtml(s.userAgent || 'unknown device')}${marker}</td>` +
        `<td>${escapeHtml(s.ip || 'unknown')}</td>` +
        `<td><time datetime="${new Date(s.lastSeenAt || 0).toISOString()}">${escapeHtml(formatTime(s.lastSeenAt))}</time></td>` +
        `<td>${escapeHtml(s.method ?? '')}</td>` +
        `<td><form method="post" action="${escapeHtml(model.revokeAction)}">` +
        `<input type="hidden" name="session" value="${escapeHtml(s.handle)}">` +
        `<button type="submit" class="danger">Revoke<span class="visually-hidden"> the session on ${escapeHtml(s.userAgent || 'unknown device')}</span></button>` +
        '</form></td></tr>'
      );
    })
    .join('');
  const notice = model.notice ? `<p class="notice" role="status">${escapeHtml(model.notice)}</p>` : '';
  return layout(
    model.title,
    model.assetsPath,
    `<h1>${escapeHtml(model.title)}</h1>${notice}<p>Signed in as <strong>${escapeHtml(model.userName)}</strong>.</p>` +
      '<table><caption>Browsers where you are signed in</caption>' +
      '<thead><tr><th scope="col">Device</th><th scope="col">IP address</th><th scope="col">Last seen</th><th scope="col">Method</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>' +
      `<tbody>${rows}</tbody></table>` +
      `<form method="post" action="${escapeHtml(model.logoutAction)}"><button type="submit">Sign out</button></form>`,
  );
}

/** The portal's stylesheet: readable, high-contrast, with a clearly visible keyboard focus. */
export const PORTAL_CSS = `:root { color-scheme: light; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; background: #f3f4f6; color: #111827; }
.card { max-width: 40rem; margin: 3rem auto; padding: 2rem; background: #fff; border-radius: 0.5rem; box-shadow: 0 1px 3px rgba(0,0,0,.2); }
h1 { font-size: 1.6rem; margin-top: 0; }
h2 { font-size: 1.1rem; }
.field { margin-bottom: 1rem; }
label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input[type=text], input[type=password] { width: 100%; box-sizing: border-box; padding: 0.5rem; font-size: 1rem; border: 1px solid #4b5563; border-radius: 0.25rem; }
input[aria-invalid=true] { border-color: #b91c1c; }
button, .button { display: inline-block; padding: 0.55rem 1.1rem; font-size: 1rem; border: 0; border-radius: 0.25rem; background: #1d4ed8; color: #fff; cursor: pointer; text-decoration: none; }
.button.secondary { background: #e5e7eb; color: #111827; }
button.danger { background: #b91c1c; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.alert { padding: 0.75rem; background: #fee2e2; color: #7f1d1d; border-left: 4px solid #b91c1c; }
.notice { padding: 0.75rem; background: #dcfce7; color: #14532d; }
.alternatives { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 0.5rem; }
table { width: 100%; border-collapse: collapse; margin: 1rem 0; }
th, td { text-align: left; padding: 0.4rem; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
tr.current { background: #eff6ff; }
.badge { font-size: 0.8rem; color: #1e3a8a; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

/**
 * The portal's only script: after a failed attempt it moves the keyboard focus to the password field (the
 * username is kept), so a keyboard user can retype at once; the alert itself is announced by role="alert".
 */
export const PORTAL_JS = `document.addEventListener('DOMContentLoaded', function () {
  var alert = document.getElementById('login-error');
  var username = document.getElementById('username');
  var password = document.getElementById('password');
  if (alert && password && username && username.value) { password.focus(); }
  else if (username && !username.value) { username.focus(); }
});
`;
