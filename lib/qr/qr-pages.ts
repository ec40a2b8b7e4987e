import qrcode from 'qrcode-generator';
import type { QrLoginStatus } from './qr-state';

/**
 * Escapes text for HTML element content and double-quoted attributes.
 *
 * @example
 * `<dd>${escapeHtml(userAgent)}</dd>`
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The Content-Security-Policy of every provider page: no inline script or style, scripts only from the router's own
 * static file, forms only to itself, never framed (QRLjacking pages embed the victim's QR page in a frame).
 *
 * @example
 * res.set('Content-Security-Policy', QR_PAGE_CSP);
 */
export const QR_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function page(title: string, body: string, scriptUrl?: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<meta name="referrer" content="same-origin"><title>${escapeHtml(title)}</title>` +
    `${scriptUrl ? `<script src="${escapeHtml(scriptUrl)}" defer></script>` : ''}</head><body>${body}</body></html>`
  );
}

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
    `<svg xmlns="http://www.w3.org/2000/svg" width="260" height="260" viewBox="0 0 ${size} ${size}" shape-rendering="crispEdges">` +
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
}

/**
 * The QR page of a new login request.
 *
 * @example
 * res.type('html').send(await renderQrPage(model));
 */
export async function renderQrPage(model: QrPageModel): Promise<string> {
  const svg = await renderQrSvg(model.qrUrl);
  return page(
    `Sign in to ${model.appName}`,
    `<main id="qr-login" data-events-url="${escapeHtml(model.eventsUrl)}" data-status-url="${escapeHtml(model.statusUrl)}"` +
      ` data-redirection-url="${escapeHtml(model.redirectionUrl)}" data-retry-url="${escapeHtml(model.retryUrl)}"` +
      ` data-expires-at="${model.expiresAt}">` +
      `<h1>Sign in to ${escapeHtml(model.appName)}</h1>` +
      `<p>Scan this code with the app on your phone, then confirm there.</p>` +
      `<figure id="qr-code">${svg}</figure>` +
      `<p id="qr-status" role="status" aria-live="polite" data-status="pending">Waiting for a scan.</p>` +
      `<p>The code expires in <span id="qr-countdown">${model.validitySeconds}</span> seconds.</p>` +
      `<p id="qr-retry" hidden><a href="${escapeHtml(model.retryUrl)}">Get a new code</a></p>` +
      `</main>`,
    model.scriptUrl,
  );
}

/**
 * A page for a request the browser cannot go on with (bad parameters, expired, denied), with an optional link to start again.
 *
 * @example
 * renderMessagePage('The code has expired', 'The QR code was not confirmed in time.', retryUrl);
 */
export function renderMessagePage(title: string, message: string, retryUrl?: string): string {
  return page(
    title,
    `<main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>` +
      `${retryUrl ? `<p><a id="qr-retry-link" href="${escapeHtml(retryUrl)}">Get a new code</a></p>` : ''}</main>`,
  );
}

/** What the web confirmation page (the demo "phone") shows. */
export interface ConfirmationPageModel {
  appName: string;
  status: QrLoginStatus;
  requesterIp: string;
  requesterUserAgent: string;
  createdAt: number;
  actionUrl: string;
  /** True when the signed-in user is the one who scanned (only they may decide). */
  isScanner: boolean;
}

/**
 * The web confirmation page: the request's origin (against QRLjacking) and POST forms for the next step.
 *
 * @example
 * res.type('html').send(renderConfirmationPage({ appName: 'Shop', status: 'pending', … }));
 */
export function renderConfirmationPage(model: ConfirmationPageModel): string {
  const details =
    `<dl><dt>Application</dt><dd id="qr-app">${escapeHtml(model.appName)}</dd>` +
    `<dt>Requested from</dt><dd id="qr-ip">${escapeHtml(model.requesterIp)}</dd>` +
    `<dt>Browser</dt><dd id="qr-ua">${escapeHtml(model.requesterUserAgent)}</dd>` +
    `<dt>At</dt><dd>${escapeHtml(new Date(model.createdAt).toISOString())}</dd></dl>`;
  const form = (status: string, label: string) =>
    `<form method="post" action="${escapeHtml(model.actionUrl)}"><input type="hidden" name="status" value="${status}">` +
    `<button type="submit" id="qr-${status}">${label}</button></form>`;
  let actions: string;
  if (model.status === 'pending' || (model.status === 'scanned' && model.isScanner)) {
    actions =
      `<p>Only confirm if you started this sign-in yourself, on the computer shown above.</p>` +
      `<p>Sign in to ${escapeHtml(model.appName)} on that computer?</p>${form('confirmed', 'Confirm')}${form('denied', 'Deny')}`;
  } else if (model.status === 'scanned') {
    actions = '<p>Someone else already scanned this code.</p>';
  } else {
    actions = `<p id="qr-final">This sign-in request is ${escapeHtml(model.status)}.</p>`;
  }
  return page(`Sign in to ${model.appName}?`, `<main><h1>Sign-in request</h1>${details}${actions}</main>`);
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
