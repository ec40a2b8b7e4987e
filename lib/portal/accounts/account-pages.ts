/**
 * The account pages of the portal (password change, forgotten password, reset, address change), as pure functions of
 * plain data in the kit's page shell: no inline script or style, labels on every field, errors announced with
 * role="alert" and tied to their fields, one column that reads at 390 px.
 */
import { escapeHtml } from '../../http/pages/escape-html';
import { renderPage } from '../../http/pages/page-shell';

/** What every account page knows. */
export interface AccountPageBase {
  assetsPath: string;
  /** Messages announced with role="alert" (a refused password lists each broken rule). */
  errors?: readonly string[];
  /** A confirmation announced with role="status". */
  notice?: string;
}

/** A second factor's fields on the reset form (already escaped HTML from the factor). */
export interface ResetFactorView {
  id: string;
  label: string;
  fields: string;
}

function page(base: AccountPageBase, title: string, body: string, scripts: readonly string[] = []): string {
  const errors = base.errors ?? [];
  const alert =
    errors.length === 0
      ? ''
      : errors.length === 1
        ? `<p class="alert" role="alert" id="form-error">${escapeHtml(errors[0]!)}</p>`
        : `<div class="alert" role="alert" id="form-error"><ul>${errors.map((e) => `<li>${escapeHtml(e)}</li>`).join('')}</ul></div>`;
  const notice = base.notice ? `<p class="notice" role="status">${escapeHtml(base.notice)}</p>` : '';
  return renderPage({
    title,
    stylesheetUrl: `${base.assetsPath}/portal.css`,
    scriptUrl: `${base.assetsPath}/portal.js`,
    body:
      `<h1>${escapeHtml(title)}</h1>${alert}${notice}${body}` +
      scripts.map((src) => `<script src="${escapeHtml(src)}" defer></script>`).join(''),
  });
}

function described(base: AccountPageBase, hintId?: string): string {
  const ids = [...((base.errors ?? []).length > 0 ? ['form-error'] : []), ...(hintId ? [hintId] : [])];
  return `${(base.errors ?? []).length > 0 ? ' aria-invalid="true"' : ''}${ids.length ? ` aria-describedby="${ids.join(' ')}"` : ''}`;
}

function newPasswordFields(base: AccountPageBase, hint: string): string {
  return (
    `<div class="field"><label for="new-password">New password</label>` +
    `<input id="new-password" name="new_password" type="password" autocomplete="new-password" required maxlength="1024"${described(base, 'password-hint')}>` +
    `<p class="muted" id="password-hint">${escapeHtml(hint)}</p></div>`
  );
}

/**
 * The password change form: current password, new password, and "Sign me out everywhere else" (checked by default).
 *
 * @example
 * res.send(renderPasswordChangePage({ assetsPath, action: '/password', hint: policy.hint, endOthers: true, sessionsUrl: '/sessions' }));
 */
export function renderPasswordChangePage(
  model: AccountPageBase & { action: string; hint: string; endOthers: boolean; sessionsUrl: string; username?: string },
): string {
  return page(
    model,
    'Change your password',
    `<form method="post" action="${escapeHtml(model.action)}">` +
      (model.username ? `<input type="hidden" name="username" autocomplete="username" value="${escapeHtml(model.username)}">` : '') +
      `<div class="field"><label for="current-password">Current password</label>` +
      `<input id="current-password" name="current_password" type="password" autocomplete="current-password" required maxlength="1024"></div>` +
      newPasswordFields(model, model.hint) +
      `<div class="field"><label><input type="checkbox" name="end_other_sessions" value="1"${model.endOthers ? ' checked' : ''}> ` +
      'Sign me out everywhere else (other browsers and apps)</label></div>' +
      `<button type="submit" class="block">Change password</button></form>` +
      `<p class="links"><a href="${escapeHtml(model.sessionsUrl)}">Back to your sessions</a></p>`,
  );
}

/**
 * The "forgot your password" form, or (after a request) the same answer whatever the address was.
 *
 * @example
 * res.send(renderForgotPasswordPage({ assetsPath, action: '/password/forgot', loginUrl: '/login' }));
 */
export function renderForgotPasswordPage(model: AccountPageBase & { action: string; loginUrl: string; sent?: boolean }): string {
  if (model.sent) {
    return page(
      model,
      'Check your mail',
      '<p>If an account uses that address, we sent it a link to choose a new password. The link works once, for a short time.</p>' +
        '<p>No mail after a few minutes? Look in your spam folder, then ask again.</p>' +
        `<p class="links"><a href="${escapeHtml(model.loginUrl)}">Back to sign in</a></p>`,
    );
  }
  return page(
    model,
    'Forgot your password?',
    '<p>Enter the email address of your account. We will mail you a link to choose a new password.</p>' +
      `<form method="post" action="${escapeHtml(model.action)}">` +
      `<div class="field"><label for="email">Email address</label>` +
      `<input id="email" name="email" type="email" autocomplete="email" required maxlength="320"${described(model)}></div>` +
      `<button type="submit" class="block">Send me a link</button></form>` +
      `<p class="links"><a href="${escapeHtml(model.loginUrl)}">Back to sign in</a></p>`,
  );
}

/**
 * The reset form a mailed link opens: the new password, and one second factor when the account has one.
 *
 * @example
 * res.send(renderResetPasswordPage({ assetsPath, action: '/password/reset', hint, factors: [] }));
 */
export function renderResetPasswordPage(
  model: AccountPageBase & { action: string; hint: string; factors: readonly ResetFactorView[]; passkeySignInUrl?: string },
): string {
  const factor = model.factors[0];
  const others = model.factors
    .slice(1)
    .map(
      (f) => `<li><a href="${escapeHtml(`${model.action}?method=${encodeURIComponent(f.id)}`)}">${escapeHtml(f.label)} instead</a></li>`,
    );
  const factorPart = factor
    ? `<fieldset><legend>${escapeHtml(factor.label)}</legend><p>Your account has a second factor: prove it to set the new password.</p>` +
      `<input type="hidden" name="method" value="${escapeHtml(factor.id)}">${factor.fields}</fieldset>`
    : '';
  const passkey = model.passkeySignInUrl
    ? `<p>Your account is protected by a passkey. <a href="${escapeHtml(model.passkeySignInUrl)}">Sign in with your passkey</a>, then come back to this page to set a new password.</p>`
    : '';
  return page(
    model,
    'Choose a new password',
    passkey +
      (model.passkeySignInUrl && !factor
        ? ''
        : `<form method="post" action="${escapeHtml(model.action)}">${newPasswordFields(model, model.hint)}${factorPart}` +
          `<button type="submit" class="block">Set new password</button></form>`) +
      (others.length ? `<ul class="links">${others.join('')}</ul>` : ''),
  );
}

/**
 * A page with a message and one link onward: a used, expired or altered link, or a change that is done.
 *
 * @example
 * res.status(410).send(renderMessagePage({ assetsPath, title: 'This link has expired', message, link: { href: '/password/forgot', label: 'Ask for a new link' } }));
 */
export function renderMessagePage(
  model: AccountPageBase & { title: string; message: string; link: { href: string; label: string } },
): string {
  return page(
    model,
    model.title,
    `<p>${escapeHtml(model.message)}</p><p><a class="button" href="${escapeHtml(model.link.href)}">${escapeHtml(model.link.label)}</a></p>`,
  );
}

/**
 * The address page: the current address and whether it is confirmed, and a form for a new one (with the password).
 *
 * @example
 * res.send(renderEmailPage({ assetsPath, action: '/email', current: 'a@example.test', verified: true, sessionsUrl: '/sessions' }));
 */
export function renderEmailPage(
  model: AccountPageBase & { action: string; current?: string; verified: boolean; sessionsUrl: string; mailConfigured: boolean },
): string {
  const current = model.current
    ? `<p>Your address is <strong>${escapeHtml(model.current)}</strong>${model.verified ? ' (confirmed)' : ' (not confirmed yet)'}.</p>`
    : '<p>Your account has no email address yet.</p>';
  const form = model.mailConfigured
    ? `<form method="post" action="${escapeHtml(model.action)}">` +
      `<div class="field"><label for="email">New email address</label>` +
      `<input id="email" name="email" type="email" autocomplete="email" required maxlength="320"${described(model)}></div>` +
      `<div class="field"><label for="current-password">Your password</label>` +
      `<input id="current-password" name="current_password" type="password" autocomplete="current-password" required maxlength="1024"></div>` +
      '<p class="muted">We mail a link to the new address; the change applies when you open it. Your old address is told.</p>' +
      `<button type="submit" class="block">Send confirmation link</button></form>`
    : '<p class="muted">This service cannot send mail, so the address cannot be changed here.</p>';
  return page(
    model,
    'Your email address',
    `${current}${form}<p class="links"><a href="${escapeHtml(model.sessionsUrl)}">Back to your sessions</a></p>`,
  );
}

/**
 * The page a verification link opens (after its token moved out of the URL): one button confirms the address, so a
 * mail scanner that only fetches the link changes nothing.
 *
 * @example
 * res.send(renderConfirmEmailPage({ assetsPath, action: '/email/verify', email: 'new@example.test' }));
 */
export function renderConfirmEmailPage(model: AccountPageBase & { action: string; email: string }): string {
  return page(
    model,
    'Confirm your new address',
    `<p>Use <strong>${escapeHtml(model.email)}</strong> as the email address of your account?</p>` +
      `<form method="post" action="${escapeHtml(model.action)}"><button type="submit" class="block">Confirm this address</button></form>`,
  );
}
