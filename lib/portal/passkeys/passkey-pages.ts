/**
 * The portal's passkey page and script. The page is static markup (no inline script or style, for the strict CSP);
 * the script is a same-origin file that also carries `@simplewebauthn/browser`'s bundle, served by the portal itself.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { escapeHtml } from '../../http/pages/escape-html';
import { renderPage } from '../../http/pages/page-shell';
import { describeTimeAgo, isoTime } from '../../http/pages/readable-request';
import { PORTAL_JS, signOutOthersSection } from '../portal-pages';

/** One row of the passkeys page. */
export interface PasskeyRow {
  credentialId: string;
  name: string;
  /** Epoch seconds. */
  createdAt: number;
  lastUsedAt?: number;
  /** A synced passkey (copied between the user's devices by its provider) rather than one bound to a device. */
  synced: boolean;
}

/** What the passkeys page shows. */
export interface PasskeysPageModel {
  assetsPath: string;
  userName: string;
  passkeys: PasskeyRow[];
  /** The router's base path, e.g. '' or '/auth'. */
  basePath: string;
  /** Where to go first when a passkey cannot be added, renamed or removed yet (sign in again, or a second factor), and the link's text. */
  reauthenticate?: { url: string; label: string };
  notice?: string;
  /** The instant times are counted from, epoch milliseconds. Default now. */
  now?: number;
}

function when(seconds: number, now: number): string {
  const iso = isoTime(seconds * 1000);
  const text = escapeHtml(describeTimeAgo(seconds * 1000, now));
  return iso ? `<time datetime="${iso}">${text}</time>` : text;
}

function passkeyItem(row: PasskeyRow, basePath: string, now: number): string {
  const name = escapeHtml(row.name);
  const id = escapeHtml(row.credentialId);
  const facts = [
    row.synced ? 'synced between your devices' : 'kept on one device',
    `added ${when(row.createdAt, now)}`,
    row.lastUsedAt === undefined ? 'never used' : `last used ${when(row.lastUsedAt, now)}`,
  ];
  return (
    `<li><div><span class="device">${name}</span><p class="facts">${facts.join(' · ')}</p></div>` +
    `<form method="post" action="${escapeHtml(basePath)}/passkeys/rename"><input type="hidden" name="credential" value="${id}">` +
    `<label for="rename-${id}" class="visually-hidden">New name for ${name}</label>` +
    `<input id="rename-${id}" name="name" type="text" required maxlength="64" value="${name}">` +
    `<button type="submit" class="secondary">Rename</button></form>` +
    `<form method="post" action="${escapeHtml(basePath)}/passkeys/remove"><input type="hidden" name="credential" value="${id}">` +
    `<button type="submit" class="danger">Remove<span class="visually-hidden"> ${name}</span></button></form></li>`
  );
}

/**
 * The signed-in user's passkeys: each with its name, whether it is synced, when it was added and last used, a
 * rename and a remove form; and a button to add one (shown by the script where the browser supports passkeys), or a
 * link to sign in again when the login is too old to add one.
 *
 * @example
 * res.send(renderPasskeysPage({ assetsPath: '/portal-assets', userName: 'Alice', passkeys: [], basePath: '' }));
 */
export function renderPasskeysPage(model: PasskeysPageModel): string {
  const now = model.now ?? Date.now();
  const base = escapeHtml(model.basePath);
  const items = model.passkeys.map((row) => passkeyItem(row, model.basePath, now)).join('');
  const notice = model.notice ? `<p class="notice" role="status">${escapeHtml(model.notice)}</p>` : '';
  const add = model.reauthenticate
    ? `<p>To add, rename or remove a passkey, <a href="${escapeHtml(model.reauthenticate.url)}">${escapeHtml(model.reauthenticate.label)}</a> first.</p>`
    : `<div class="field"><label for="passkey-name">Name of the new passkey</label>` +
      `<input id="passkey-name" type="text" maxlength="64" placeholder="Laptop, phone, security key"></div>` +
      `<button type="button" id="passkey-add" hidden>Add a passkey</button>`;
  return renderPage({
    title: 'Your passkeys',
    stylesheetUrl: `${model.assetsPath}/portal.css`,
    scriptUrl: `${model.assetsPath}/passkeys.js`,
    width: 'wide',
    mainAttributes:
      `data-passkey-registration-options="${base}/passkeys/registration/options" ` +
      `data-passkey-register="${base}/passkeys/registration" data-passkey-done="${base}/passkeys?added=1"`,
    body:
      `<h1>Your passkeys</h1>${notice}<p class="alert" role="alert" id="passkey-status" hidden></p>` +
      `<p>Signed in as <strong>${escapeHtml(model.userName)}</strong>. A passkey signs you in without a password, ` +
      'with your fingerprint, face or device PIN.</p>' +
      `<h2 id="passkey-list">Passkeys</h2>` +
      (items ? `<ul class="sessions" aria-labelledby="passkey-list">${items}</ul>` : '<p>You have no passkey yet.</p>') +
      `<h2>Add a passkey</h2>${add}` +
      signOutOthersSection(`${model.basePath}/logout`),
  });
}

/**
 * The passkey behaviour of the login, passkeys and step-up pages: sign in with a passkey (a button, and the browser's
 * autofill where it offers passkeys in the username field), add a passkey, and sign the step-up page's challenge. Posts JSON to the portal's own
 * routes, reads problem+json `detail` for messages, and never handles a secret: the private key stays in the
 * authenticator.
 */
const PASSKEY_PAGE_JS = `(function () {
  var lib = window.SimpleWebAuthnBrowser;
  // The browser's own WebAuthn errors speak to developers ("The operation either timed out or was not allowed. See:
  // https://www.w3.org/TR/…"); the page says what happened in words, by the error's name. The portal's answers
  // (problem+json detail) are written for people already and are shown as they are.
  var MESSAGES = {
    NotAllowedError: 'No passkey was used: it was cancelled or took too long, or this device has no passkey for this site. Try again, or sign in another way.',
    InvalidStateError: 'This device already holds a passkey for your account.',
    SecurityError: 'Passkeys cannot be used at this address.',
    NotSupportedError: 'This browser or device cannot use a passkey here. Sign in another way.'
  };
  var FALLBACK = 'The passkey could not be used. Try again, or sign in another way.';
  function post(url, body) {
    return fetch(url, { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(body || {}) })
      .then(function (res) {
        return res.json().catch(function () { return {}; }).then(function (data) {
          if (!res.ok) { var error = new Error(data.detail || FALLBACK); error.fromPortal = true; throw error; }
          return data;
        });
      });
  }
  function show(error) {
    if (error && error.name === 'AbortError') return;
    var status = document.getElementById('passkey-status');
    var text = error && error.fromPortal ? error.message : (error && MESSAGES[error.name]) || FALLBACK;
    if (status) { status.textContent = text; status.hidden = false; }
  }
  function signIn(main, autofill) {
    return post(main.dataset.passkeyOptions).then(function (options) {
      return lib.startAuthentication({ optionsJSON: options, useBrowserAutofill: autofill });
    }).then(function (response) {
      return post(main.dataset.passkeySignIn, { response: response, return_to: main.dataset.returnTo || '' });
    }).then(function (result) { window.location.assign(result.redirect); });
  }
  document.addEventListener('DOMContentLoaded', function () {
    var main = document.querySelector('main');
    if (!main || !lib || !lib.browserSupportsWebAuthn()) return;
    var button = document.getElementById('passkey-sign-in');
    if (button && main.dataset.passkeySignIn) {
      button.hidden = false;
      button.addEventListener('click', function () { signIn(main, false).catch(show); });
      lib.browserSupportsWebAuthnAutofill().then(function (autofill) { if (autofill) signIn(main, true).catch(show); });
    }
    var stepUp = document.querySelector('input[data-passkey-step-up]');
    if (stepUp && stepUp.form) {
      stepUp.form.addEventListener('submit', function (event) {
        if (stepUp.value) return;
        event.preventDefault();
        var form = stepUp.form;
        post(stepUp.getAttribute('data-passkey-step-up')).then(function (options) {
          return lib.startAuthentication({ optionsJSON: options });
        }).then(function (response) { stepUp.value = JSON.stringify(response); form.submit(); }).catch(show);
      });
    }
    var add = document.getElementById('passkey-add');
    if (add && main.dataset.passkeyRegister) {
      add.hidden = false;
      add.addEventListener('click', function () {
        var name = document.getElementById('passkey-name');
        post(main.dataset.passkeyRegistrationOptions).then(function (options) {
          return lib.startRegistration({ optionsJSON: options });
        }).then(function (response) {
          return post(main.dataset.passkeyRegister, { response: response, name: name ? name.value : '' });
        }).then(function () { window.location.assign(main.dataset.passkeyDone); }).catch(show);
      });
    }
  });
})();
`;

let script: string | undefined;

/**
 * The script of the pages that use passkeys: `@simplewebauthn/browser`'s UMD bundle (read once from the installed
 * package, so no CDN is involved), then the portal's own page script and the passkey behaviour.
 *
 * @example
 * res.type('text/javascript').send(passkeyScript());
 */
export function passkeyScript(): string {
  // The package exports only its modules; the browser bundle sits beside them, one folder up from the CommonJS entry.
  const bundle = join(dirname(require.resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js');
  script ??= `${readFileSync(bundle, 'utf8')}\n;${PORTAL_JS}\n${PASSKEY_PAGE_JS}`;
  return script;
}
