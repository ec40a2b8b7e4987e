/**
 * The portal's second-factor pages as pure functions of plain data, in the kit's page shell: no inline script or
 * style (the strict CSP holds), the QR code as inline SVG drawn on the server.
 */
import { renderPage } from '../../http/pages/page-shell';
import { escapeHtml, signOutOthersSection } from '../portal-pages';

/** One method offered on the step-up page. */
export interface StepUpMethodView {
  id: string;
  label: string;
  /** The method's own fields (already escaped HTML). */
  fields: string;
  /** Same-origin scripts the method needs. */
  scripts?: readonly string[];
}

/** What the step-up page shows. */
export interface StepUpPageModel {
  assetsPath: string;
  action: string;
  /** The sanitized return_to ('' for none) and the requirement, carried in hidden fields. */
  returnTo: string;
  acr: string;
  maxAge: string;
  /** Ask the password again (the login is older than the requirement allows). */
  needsPassword: boolean;
  methods: StepUpMethodView[];
  /** The kept form this step-up sends on once done (`requireSession`'s `resume`), carried in a hidden field. */
  resume?: string;
  error?: string;
}

function assets(assetsPath: string): { stylesheetUrl: string; scriptUrl: string } {
  return { stylesheetUrl: `${assetsPath}/portal.css`, scriptUrl: `${assetsPath}/portal.js` };
}

function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
}

function passwordFields(prefix: string): string {
  return (
    `<div class="field"><label for="${prefix}-username">Username</label>` +
    `<input id="${prefix}-username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="256"></div>` +
    `<div class="field"><label for="${prefix}-password">Password</label>` +
    `<input id="${prefix}-password" name="password" type="password" autocomplete="current-password" required maxlength="1024"></div>`
  );
}

/**
 * The step-up page: one form per available method (the password fields too when the login is not recent enough),
 * each posting the method's id with the requirement and return_to.
 *
 * @example
 * res.send(renderStepUpPage({ assetsPath: '/portal-assets', action: '/step-up', returnTo, acr: '2fa', maxAge: '300', needsPassword: false, methods }));
 */
export function renderStepUpPage(model: StepUpPageModel): string {
  const alert = model.error ? `<p class="alert" role="alert" id="login-error">${escapeHtml(model.error)}</p>` : '';
  const carried =
    hidden('return_to', model.returnTo) +
    hidden('acr', model.acr) +
    hidden('max_age', model.maxAge) +
    (model.resume ? hidden('resume', model.resume) : '');
  const forms = model.methods.map(
    (method) =>
      `<section aria-labelledby="method-${escapeHtml(method.id)}"><h2 id="method-${escapeHtml(method.id)}">${escapeHtml(method.label)}</h2>` +
      `<form method="post" action="${escapeHtml(model.action)}" class="login-form" data-method="${escapeHtml(method.id)}">` +
      carried +
      hidden('method', method.id) +
      (model.needsPassword ? passwordFields(method.id) : '') +
      method.fields +
      `<button type="submit" class="block">Continue</button></form></section>`,
  );
  const intro =
    (model.needsPassword
      ? 'This page needs a recent sign-in: enter your password and a second factor.'
      : 'This page needs a second factor.') + (model.resume ? ' Then what you asked for is done.' : '');
  const scripts = [...new Set(model.methods.flatMap((method) => method.scripts ?? []))]
    .map((src) => `<script src="${escapeHtml(src)}" defer></script>`)
    .join('');
  return renderPage({
    title: 'Confirm it is you',
    ...assets(model.assetsPath),
    body: `<h1>Confirm it is you</h1>${alert}<p>${escapeHtml(intro)}</p>${forms.join('')}${scripts}`,
  });
}

/** What the page that sends a kept form on shows. */
export interface ResumePageModel {
  assetsPath: string;
  /** Where the form goes (the portal's own origin) and its fields, as the browser first posted them. */
  action: string;
  fields: ReadonlyArray<readonly [string, string]>;
}

/**
 * The page after a step-up that a form waited for: the form again, as the browser posted it, which the portal's
 * script sends at once (`data-resume`); without script, one click on "Continue" does. It is an ordinary form post of
 * the portal's own page, so the origin check, the session and the level are checked again when it arrives.
 *
 * @example
 * res.send(renderResumePage({ assetsPath: '/portal-assets', action: 'https://auth.example.test/sessions/revocations', fields: [['session', 'h1']] }));
 */
export function renderResumePage(model: ResumePageModel): string {
  return renderPage({
    title: 'Continuing',
    ...assets(model.assetsPath),
    body:
      '<h1>Thank you, that was you</h1><p>Now doing what you asked for.</p>' +
      `<form method="post" action="${escapeHtml(model.action)}" data-resume>` +
      model.fields.map(([name, value]) => hidden(escapeHtml(name), value)).join('') +
      '<button type="submit" class="block">Continue</button></form>',
  });
}

/** What the authenticator-app enrolment page shows. */
export interface TotpEnrolmentPageModel {
  assetsPath: string;
  action: string;
  returnTo: string;
  /** The QR code of the `otpauth://` URI, inline SVG. */
  qrSvg: string;
  /** The secret in groups of four, for typing into an app by hand. */
  secret: string;
  /** The pending secret sealed for this user, posted back with the code. */
  sealedPending: string;
  error?: string;
}

/**
 * The enrolment page: scan the QR code (or type the secret), then type one code to prove the app has it.
 *
 * @example
 * res.send(renderTotpEnrolmentPage({ assetsPath, action: '/two-factor/totp', returnTo, qrSvg, secret, sealedPending }));
 */
export function renderTotpEnrolmentPage(model: TotpEnrolmentPageModel): string {
  const alert = model.error ? `<p class="alert" role="alert" id="login-error">${escapeHtml(model.error)}</p>` : '';
  const grouped = model.secret.replace(/(.{4})(?=.)/g, '$1 ');
  return renderPage({
    title: 'Set up an authenticator app',
    ...assets(model.assetsPath),
    body:
      `<h1>Set up an authenticator app</h1>${alert}` +
      '<p>Scan this code with an authenticator app, then type the 6-digit code it shows.</p>' +
      `<figure class="qr">${model.qrSvg}<figcaption>Or type this key: <code data-totp-secret>${escapeHtml(grouped)}</code></figcaption></figure>` +
      `<form method="post" action="${escapeHtml(model.action)}" class="login-form">` +
      hidden('return_to', model.returnTo) +
      hidden('pending', model.sealedPending) +
      `<div class="field"><label for="totp-code">Code from your authenticator app</label>` +
      `<input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="7" pattern="[0-9 ]{6,7}"></div>` +
      `<button type="submit" class="block">Turn on</button></form>`,
  });
}

/**
 * The recovery codes, shown once: the user is asked to keep them somewhere safe.
 *
 * @example
 * res.send(renderRecoveryCodesPage({ assetsPath, codes, continueUrl: 'https://admin.example.test/' }));
 */
export function renderRecoveryCodesPage(model: {
  assetsPath: string;
  codes: readonly string[];
  continueUrl: string;
  /** The sign-out route, to offer ending the user's other sessions now that a factor changed. */
  logoutAction?: string;
}): string {
  const items = model.codes.map((code) => `<li><code>${escapeHtml(code)}</code></li>`).join('');
  return renderPage({
    title: 'Your recovery codes',
    ...assets(model.assetsPath),
    body:
      '<h1>Your recovery codes</h1>' +
      '<p>Keep these codes somewhere safe. Each one works once, when you cannot use your authenticator app. They are shown only now.</p>' +
      `<ol class="recovery-codes" data-recovery-codes>${items}</ol>` +
      `<p><a class="button block" href="${escapeHtml(model.continueUrl)}">Continue</a></p>` +
      (model.logoutAction === undefined ? '' : signOutOthersSection(model.logoutAction)),
  });
}

/** What the two-factor settings page shows. */
export interface TwoFactorPageModel {
  assetsPath: string;
  userName: string;
  totpEnrolled: boolean;
  remainingRecoveryCodes: number;
  enrolUrl: string;
  regenerateAction: string;
  /** Where the form that turns the authenticator app off posts. */
  removeAction: string;
  /** The sign-out route, to offer ending the user's other sessions after a change. */
  logoutAction?: string;
}

/**
 * The two-factor settings: whether an authenticator app is set up, how many recovery codes are left, and the
 * actions (set up, replace or turn off the app, new recovery codes).
 *
 * @example
 * res.send(renderTwoFactorPage({ assetsPath, userName, totpEnrolled: true, remainingRecoveryCodes: 9, enrolUrl, regenerateAction, removeAction }));
 */
export function renderTwoFactorPage(model: TwoFactorPageModel): string {
  const app = model.totpEnrolled
    ? `<p data-totp-status="on">An authenticator app is set up.</p><p><a class="button secondary" href="${escapeHtml(model.enrolUrl)}">Replace the authenticator app</a></p>` +
      `<form method="post" action="${escapeHtml(model.removeAction)}" data-totp-remove><p>Turning it off also deletes your recovery codes.</p>` +
      `<button type="submit" class="button secondary">Turn off the authenticator app</button></form>`
    : `<p data-totp-status="off">No authenticator app is set up.</p><p><a class="button" href="${escapeHtml(model.enrolUrl)}">Set up an authenticator app</a></p>`;
  const codes = model.totpEnrolled
    ? `<h2>Recovery codes</h2><p>${model.remainingRecoveryCodes} unused recovery code${model.remainingRecoveryCodes === 1 ? '' : 's'} left.</p>` +
      `<form method="post" action="${escapeHtml(model.regenerateAction)}"><button type="submit" class="button secondary">Make new recovery codes</button></form>`
    : '';
  return renderPage({
    title: 'Two-factor authentication',
    ...assets(model.assetsPath),
    body:
      `<h1>Two-factor authentication</h1><p>Signed in as <strong>${escapeHtml(model.userName)}</strong>.</p><h2>Authenticator app</h2>${app}${codes}` +
      (model.logoutAction === undefined ? '' : signOutOthersSection(model.logoutAction)),
  });
}
