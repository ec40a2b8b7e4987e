import qrcode from 'qrcode-generator';
import { escapeHtml } from '../http/pages/escape-html';
import { renderPage } from '../http/pages/page-shell';
import { describeDevice, describeTimeAgo, isoTime } from '../http/pages/readable-request';
import type { QrLoginStatus } from './qr-state';

export { escapeHtml };

/**
 * The Content-Security-Policy of every provider page: no inline script or style, scripts and styles only from the
 * router's own static files, forms only to itself, never framed (QRLjacking pages embed the victim's QR page in a
 * frame).
 *
 * @example
 * res.set('Content-Security-Policy', QR_PAGE_CSP);
 */
export const QR_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * Renders the QR code of `text` as an inline SVG element (server-side, no script needed): one path of dark
 * modules with a quiet zone of two modules, scaled to 260 px.
 *
 * @example
 * const svg = await renderQrSvg('https://idp.example.test/sns/qr-logins/abc/confirmation');
 */
export async function renderQrSvg(text: string): Promise<string> {
  const code = qrcode(0, 'M');
  code.addData(text, 'Byte');
  code.make();
  const modules = code.getModuleCount();
  const margin = 2;
  const size = modules + margin * 2;
  let path = '';
  for (let row = 0; row < modules; row += 1) {
    for (let col = 0; col < modules; col += 1) {
      if (code.isDark(row, col)) path += `M${col + margin} ${row + margin}h1v1h-1z`;
    }
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="QR code to scan with your phone" width="260" height="260" viewBox="0 0 ${size} ${size}" shape-rendering="crispEdges">` +
    `<path fill="#ffffff" d="M0 0h${size}v${size}H0z"/><path fill="#000000" d="${path}"/></svg>`
  );
}

/** What the QR page shows and where its script listens. */
export interface QrPageModel {
  appName: string;
  qrUrl: string;
  expiresAt: number;
  validitySeconds: number;
  eventsUrl: string;
  statusUrl: string;
  redirectionUrl: string;
  retryUrl: string;
  scriptUrl: string;
  stylesheetUrl: string;
  /** The app's own sign-in page (its registration's `loginPageUrl`), linked as "Use another way to sign in". */
  otherWaysUrl?: string;
}

function otherWaysLink(url: string | undefined): string {
  return url ? `<p class="links"><a id="qr-other-ways" href="${escapeHtml(url)}">Use another way to sign in</a></p>` : '';
}

/**
 * The QR page of a new login request, for the computer: what to do in three steps, the code, its live status and
 * countdown, and a way back to the app's other sign-in methods.
 *
 * @example
 * res.type('html').send(await renderQrPage(model));
 */
export async function renderQrPage(model: QrPageModel): Promise<string> {
  const svg = await renderQrSvg(model.qrUrl);
  const app = escapeHtml(model.appName);
  return renderPage({
    title: `Sign in to ${model.appName} with your phone`,
    stylesheetUrl: model.stylesheetUrl,
    scriptUrl: model.scriptUrl,
    mainAttributes:
      `id="qr-login" data-events-url="${escapeHtml(model.eventsUrl)}" data-status-url="${escapeHtml(model.statusUrl)}"` +
      ` data-redirection-url="${escapeHtml(model.redirectionUrl)}" data-retry-url="${escapeHtml(model.retryUrl)}"` +
      ` data-expires-at="${model.expiresAt}"`,
    body:
      `<p class="eyebrow">${app}</p><h1>Sign in with your phone</h1>` +
      '<ol class="steps"><li>Open the sign-in app on your phone, where you are already signed in.</li>' +
      '<li>Scan this code with it.</li><li>Check the request on your phone and confirm it.</li></ol>' +
      `<figure id="qr-code" class="qr-frame">${svg}</figure>` +
      '<p id="qr-status" class="status" role="status" aria-live="polite" data-status="pending">Waiting for a scan.</p>' +
      `<p class="muted">The code expires in <span id="qr-countdown">${model.validitySeconds}</span> seconds.</p>` +
      `<p id="qr-retry" hidden><a class="button" href="${escapeHtml(model.retryUrl)}">Get a new code</a></p>` +
      otherWaysLink(model.otherWaysUrl),
  });
}

/** What {@link renderMessagePage} shows. */
export interface QrMessagePageModel {
  title: string;
  message: string;
  stylesheetUrl: string;
  /** Starts the same app's QR login again. */
  retryUrl?: string;
  /** The app's own sign-in page. */
  otherWaysUrl?: string;
}

/**
 * A page for a request the browser cannot go on with (bad parameters, expired, denied), with links to start again.
 *
 * @example
 * renderMessagePage({ title: 'The code has expired', message: 'The QR code was not confirmed in time.', retryUrl, stylesheetUrl });
 */
export function renderMessagePage(model: QrMessagePageModel): string {
  return renderPage({
    title: model.title,
    stylesheetUrl: model.stylesheetUrl,
    body:
      `<h1>${escapeHtml(model.title)}</h1><p>${escapeHtml(model.message)}</p>` +
      (model.retryUrl ? `<p><a id="qr-retry-link" class="button" href="${escapeHtml(model.retryUrl)}">Get a new code</a></p>` : '') +
      otherWaysLink(model.otherWaysUrl),
  });
}

/** What the web confirmation page (the demo "phone") shows. */
export interface ConfirmationPageModel {
  appName: string;
  status: QrLoginStatus;
  requesterIp: string;
  requesterUserAgent: string;
  createdAt: number;
  actionUrl: string;
  stylesheetUrl: string;
  /** True when the signed-in user is the one who scanned (only they may decide). */
  isScanner: boolean;
  /** The signed-in user's name: the account the other device would be signed in to. */
  userName?: string;
  /** The instant the request's age is counted from, epoch milliseconds. Default now. */
  now?: number;
}

const FINAL_WORDS: Partial<Record<QrLoginStatus, string>> = {
  confirmed: 'You confirmed this sign-in. You can close this page.',
  denied: 'You denied this sign-in. Nobody was signed in.',
  expired: 'This sign-in request has expired. Nobody was signed in.',
};

function requestFacts(model: ConfirmationPageModel): string {
  const at = isoTime(model.createdAt);
  const when = escapeHtml(describeTimeAgo(model.createdAt, model.now ?? Date.now()));
  return (
    '<dl class="request">' +
    `<div><dt>Application</dt><dd id="qr-app">${escapeHtml(model.appName)}</dd></div>` +
    `<div><dt>Device</dt><dd id="qr-ua">${escapeHtml(describeDevice(model.requesterUserAgent))}</dd></div>` +
    `<div><dt>IP address</dt><dd id="qr-ip">${escapeHtml(model.requesterIp)}</dd></div>` +
    `<div><dt>Requested</dt><dd id="qr-when">${at ? `<time datetime="${at}">${when}</time>` : when}</dd></div>` +
    (model.userName ? `<div><dt>Account</dt><dd id="qr-account">${escapeHtml(model.userName)}</dd></div>` : '') +
    '</dl>'
  );
}

/**
 * The web confirmation page, where the user decides whether another device may sign in as them, so the clearest
 * page of all (QRLjacking: an attacker relays a victim's scan of the attacker's own code). It names the application,
 * the requesting device in words ("Chrome on Linux"), its IP address and how long ago it asked, warns against
 * codes someone else sent, and offers Deny exactly as prominently as Confirm; both are same-origin POST forms.
 *
 * @example
 * res.type('html').send(renderConfirmationPage({ appName: 'Shop', status: 'pending', … }));
 */
export function renderConfirmationPage(model: ConfirmationPageModel): string {
  const app = escapeHtml(model.appName);
  const form = (status: string, label: string, style: string) =>
    `<form method="post" action="${escapeHtml(model.actionUrl)}"><input type="hidden" name="status" value="${status}">` +
    `<button type="submit" id="qr-${status}" class="${style}">${label}</button></form>`;
  let heading: string;
  let actions: string;
  if (model.status === 'pending' || (model.status === 'scanned' && model.isScanner)) {
    heading = `Sign in to ${app} on another device?`;
    actions =
      '<p class="warning" id="qr-warning">Only confirm if you are signing in on a device in front of you right now. ' +
      'If someone sent you this code or asked you to scan it, deny: they would be signed in as you.</p>' +
      `<div class="decision">${form('denied', 'Deny', 'deny')}${form('confirmed', 'Confirm', 'confirm')}</div>`;
  } else if (model.status === 'scanned') {
    heading = 'This code is taken';
    actions = '<p id="qr-final">Someone else already scanned this code. Nothing was changed.</p>';
  } else {
    heading = model.status === 'confirmed' ? 'Sign-in confirmed' : model.status === 'denied' ? 'Sign-in denied' : 'Sign-in request expired';
    actions =
      `<p id="qr-final" class="status" data-status="${escapeHtml(model.status)}">` +
      `${escapeHtml(FINAL_WORDS[model.status] ?? `This sign-in request is ${model.status}.`)}</p>`;
  }
  return renderPage({
    title: `Sign-in request · ${model.appName}`,
    stylesheetUrl: model.stylesheetUrl,
    body: `<p class="eyebrow">Sign-in request</p><h1>${heading}</h1>${requestFacts(model)}${actions}`,
  });
}

/**
 * The QR page's script, served as a static file by the router so the page keeps a strict CSP. It follows the
 * request over Server-Sent Events, falls back to polling the status URL, counts down, and on `confirmed` navigates
 * to the redirection URL, which checks the browser binding and redirects to the app.
 *
 * @example
 * router.get('/sns/qr-login/qr-login.js', (_req, res) => res.type('application/javascript').send(QR_PAGE_SCRIPT));
 */
export const QR_PAGE_SCRIPT = `(function () {
  'use strict';
  var root = document.getElementById('qr-login');
  if (!root) return;
  var statusEl = document.getElementById('qr-status');
  var countdownEl = document.getElementById('qr-countdown');
  var retryEl = document.getElementById('qr-retry');
  var expiresAt = Number(root.getAttribute('data-expires-at'));
  var finished = false;
  var source = null;
  var pollTimer = null;
  var messages = {
    pending: 'Waiting for a scan.',
    scanned: 'Scanned. Confirm on your phone.',
    confirmed: 'Confirmed. Signing you in…',
    denied: 'The sign-in was denied on the phone.',
    expired: 'This code has expired.'
  };
  function show(status) {
    statusEl.textContent = messages[status] || status;
    statusEl.setAttribute('data-status', status);
  }
  function finish(status) {
    if (finished) return;
    finished = true;
    if (source) source.close();
    if (pollTimer) clearInterval(pollTimer);
    show(status);
    if (status === 'confirmed') {
      window.location.assign(root.getAttribute('data-redirection-url'));
    } else {
      document.getElementById('qr-code').hidden = true;
      retryEl.hidden = false;
    }
  }
  function handle(status) {
    if (status === 'confirmed' || status === 'denied' || status === 'expired') finish(status);
    else show(status);
  }
  function poll() {
    fetch(root.getAttribute('data-status-url'), { credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (body) { if (body && body.status) handle(body.status); })
      .catch(function () { /* the next poll tries again */ });
  }
  function startPolling() {
    if (pollTimer || finished) return;
    pollTimer = setInterval(poll, 2000);
    poll();
  }
  if (window.EventSource) {
    source = new EventSource(root.getAttribute('data-events-url'), { withCredentials: true });
    source.addEventListener('status', function (event) {
      try { handle(JSON.parse(event.data).status); } catch (e) { /* ignore a malformed event */ }
    });
    source.onerror = function () {
      if (source.readyState === 2) startPolling();
    };
  } else {
    startPolling();
  }
  setInterval(function () {
    var left = Math.max(0, Math.ceil((expiresAt - Date.now()) / 1000));
    countdownEl.textContent = String(left);
    if (left === 0 && !finished) setTimeout(function () { if (!finished) finish('expired'); }, 1500);
  }, 1000);
})();
`;
