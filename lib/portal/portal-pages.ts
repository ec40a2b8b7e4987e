/**
 * The portal's HTML, as pure functions of plain data. Every page is static markup in the kit's page shell: no
 * inline script or style, so the strict Content-Security-Policy of `securityHeaders()` holds; looks and behaviour
 * come from the router's `/portal-assets/portal.css` (the kit's one stylesheet) and `/portal-assets/portal.js`.
 */
import { escapeHtml } from '../http/pages/escape-html';
import { renderPage } from '../http/pages/page-shell';
import { describeDevice, describeTimeAgo, isoTime } from '../http/pages/readable-request';

export { escapeHtml };

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
  /** The forgotten-password page, linked under the password form when the portal can mail reset links. */
  forgotPasswordUrl?: string;
  /** Passkey sign-in: where the page script gets options and posts the assertion. None: no passkey sign-in. */
  passkeys?: { optionsUrl: string; signInUrl: string };
}

function assets(assetsPath: string): { stylesheetUrl: string; scriptUrl: string } {
  return { stylesheetUrl: `${assetsPath}/portal.css`, scriptUrl: `${assetsPath}/portal.js` };
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
  const links = [...(model.qrLink ? [model.qrLink] : []), ...model.providerLinks];
  const others = links.map((link) => `<li><a class="button secondary" href="${escapeHtml(link.href)}">${escapeHtml(link.label)}</a></li>`);
  const passkey = model.passkeys
    ? '<p class="alert" role="alert" id="passkey-status" hidden></p>' +
      '<button type="button" id="passkey-sign-in" class="block secondary" hidden>Use a passkey</button>'
    : '';
  const alternatives =
    others.length || passkey
      ? `<section aria-labelledby="other-ways"><h2 id="other-ways" class="divider">Other ways to sign in</h2>${passkey}${others.length ? `<ul class="alternatives">${others.join('')}</ul>` : ''}</section>`
      : '';
  // With passkeys the username field also offers the browser's saved passkeys (conditional UI, "autofill").
  const usernameAutocomplete = model.passkeys ? 'username webauthn' : 'username';
  return renderPage({
    title: model.title,
    ...assets(model.assetsPath),
    ...(model.passkeys
      ? {
          scriptUrl: `${model.assetsPath}/passkeys.js`,
          mainAttributes:
            `data-passkey-options="${escapeHtml(model.passkeys.optionsUrl)}" data-passkey-sign-in="${escapeHtml(model.passkeys.signInUrl)}" ` +
            `data-return-to="${escapeHtml(model.returnTo)}"`,
        }
      : {}),
    body:
      `<h1>${escapeHtml(model.title)}</h1>${alert}` +
      `<form method="post" action="${escapeHtml(model.formAction)}" class="login-form">` +
      `<input type="hidden" name="return_to" value="${escapeHtml(model.returnTo)}">` +
      `<div class="field"><label for="username">Username</label>` +
      `<input id="username" name="username" type="text" autocomplete="${usernameAutocomplete}" autocapitalize="none" spellcheck="false" required maxlength="256" value="${escapeHtml(model.username ?? '')}"${invalid}></div>` +
      `<div class="field"><label for="password">Password</label>` +
      `<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"${invalid}></div>` +
      `<button type="submit" class="block">Sign in</button></form>` +
      (model.forgotPasswordUrl ? `<p><a href="${escapeHtml(model.forgotPasswordUrl)}">Forgot your password?</a></p>` : '') +
      alternatives,
  });
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
  /** The passkeys page, linked when the portal offers passkeys. */
  passkeysUrl?: string;
  /** The "Recent security activity" page, linked when given. */
  activityUrl?: string;
  /** Further account pages linked under the list (password change, email address). */
  accountLinks?: ReadonlyArray<{ href: string; label: string }>;
  notice?: string;
  /** The instant "last active" is counted from, epoch milliseconds. Default now. */
  now?: number;
}

const METHODS: Record<string, string> = {
  password: 'signed in with a password',
  qr: 'signed in with a QR code',
  oidc: 'signed in through an identity provider',
  basic: 'signed in with Basic authentication',
  passkey: 'signed in with a passkey',
};

function sessionItem(session: SessionRow, revokeAction: string, now: number): string {
  const device = describeDevice(session.userAgent);
  const seen = isoTime(session.lastSeenAt);
  const when = escapeHtml(describeTimeAgo(session.lastSeenAt, now));
  const facts = [
    `IP ${escapeHtml(session.ip || 'unknown')}`,
    `active ${seen ? `<time datetime="${seen}">${when}</time>` : when}`,
    ...(session.method ? [escapeHtml(METHODS[session.method] ?? `signed in with ${session.method}`)] : []),
  ];
  return (
    `<li${session.current ? ' aria-current="true"' : ''}><div>` +
    `<span class="device">${escapeHtml(device)}</span>${session.current ? ' <strong class="badge">This browser</strong>' : ''}` +
    `<p class="facts">${facts.join(' · ')}</p></div>` +
    `<form method="post" action="${escapeHtml(revokeAction)}">` +
    `<input type="hidden" name="session" value="${escapeHtml(session.handle)}">` +
    `<button type="submit" class="danger">Revoke<span class="visually-hidden"> the session on ${escapeHtml(device)}</span></button>` +
    '</form></li>'
  );
}

/**
 * The "your sessions" page: each signed-in browser of the user by a readable device name ("Chrome on Linux"), its
 * IP and when it was last active ("5 minutes ago"), with a revoke button each; the current one is marked. At the
 * end, "Sign out of this browser" and "Sign out everywhere" (`scope=everywhere`), both posting to `logoutAction`.
 *
 * @example
 * res.send(renderSessionsPage({ title: 'Your sessions', assetsPath: '/portal-assets', userName: 'Alice', sessions, revokeAction: '/sessions/revocations', logoutAction: '/logout' }));
 */
export function renderSessionsPage(model: SessionsPageModel): string {
  const now = model.now ?? Date.now();
  const items = model.sessions.map((session) => sessionItem(session, model.revokeAction, now)).join('');
  const notice = model.notice ? `<p class="notice" role="status">${escapeHtml(model.notice)}</p>` : '';
  return renderPage({
    title: model.title,
    ...assets(model.assetsPath),
    width: 'wide',
    body:
      `<h1>${escapeHtml(model.title)}</h1>${notice}` +
      `<p>Signed in as <strong>${escapeHtml(model.userName)}</strong>. Revoke any browser you do not recognise.</p>` +
      `<h2 id="browsers">Browsers where you are signed in</h2><ul class="sessions" aria-labelledby="browsers">${items}</ul>` +
      (model.passkeysUrl ? `<p><a href="${escapeHtml(model.passkeysUrl)}">Your passkeys</a></p>` : '') +
      (model.activityUrl ? `<p><a href="${escapeHtml(model.activityUrl)}">Recent security activity</a></p>` : '') +
      (model.accountLinks ?? []).map((link) => `<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.label)}</a></p>`).join('') +
      '<h2 id="sign-out">Sign out</h2><div class="actions" role="group" aria-labelledby="sign-out">' +
      `<form method="post" action="${escapeHtml(model.logoutAction)}"><button type="submit" class="button secondary">Sign out of this browser</button></form>` +
      `<form method="post" action="${escapeHtml(model.logoutAction)}"><input type="hidden" name="scope" value="everywhere">` +
      '<button type="submit" class="danger">Sign out everywhere</button></form></div>' +
      '<p class="muted">Signing out everywhere ends every session of yours, in every browser and on every app.</p>' +
      signOutOthersSection(model.logoutAction),
  });
}

/**
 * The offer to end every other session of the user, this one kept (`scope=others` on the sign-out route): on the
 * sessions page and on every page a changed sign-in method lands on (ASVS 5.0 7.4.3), since a factor replaced after a
 * loss or a theft leaves the sessions the thief may hold.
 *
 * @example
 * body += signOutOthersSection('/logout');
 */
export function signOutOthersSection(logoutAction: string): string {
  return (
    '<h2 id="other-sessions">Your other sessions</h2>' +
    '<p>Changed how you sign in because a device was lost, or someone else may know your password or codes? ' +
    'Sign out of every other browser and app where you are signed in; you stay signed in here.</p>' +
    `<form method="post" action="${escapeHtml(logoutAction)}" data-sign-out-others><input type="hidden" name="scope" value="others">` +
    '<button type="submit" class="button secondary">Sign out my other sessions</button></form>'
  );
}

/**
 * The portal's only script: after a failed attempt it moves the keyboard focus to the password field (the
 * username is kept), so a keyboard user can retype at once; the alert itself is announced by role="alert". After a
 * step-up a form waited for, it sends that form on (`data-resume`), so the user's click is not lost.
 */
export const PORTAL_JS = `document.addEventListener('DOMContentLoaded', function () {
  var resume = document.querySelector('form[data-resume]');
  if (resume) { resume.submit(); return; }
  var alert = document.getElementById('login-error');
  var username = document.getElementById('username');
  var password = document.getElementById('password');
  if (alert && password && username && username.value) { password.focus(); }
  else if (username && !username.value) { username.focus(); }
});
`;
