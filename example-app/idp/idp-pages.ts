/**
 * The demo identity provider's own login page and stylesheet: another company's look on purpose, so a visitor
 * sees they left the portal for the corporate sign-in, and came back.
 */

/** What the page hooks use of oidc-provider's koa context. */
interface PageContext {
  type: string;
  body: unknown;
  status: number;
  accepts(...types: string[]): string | false;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Where the provider serves its stylesheet. */
export const IDP_STYLESHEET_PATH = '/idp-assets/idp.css';

/** The provider's stylesheet: no inline style, so its strict CSP holds. */
export const IDP_STYLESHEET = `:root { color-scheme: light; font-family: Georgia, "Times New Roman", serif; line-height: 1.5; }
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; background: #3b0764; color: #111827; }
header { padding: 1rem 1.25rem; color: #f5f3ff; font-size: 1.15rem; font-weight: 700; letter-spacing: 0.02em; }
main { background: #fff; padding: 1.5rem 1.25rem 2rem; }
@media (min-width: 40rem) { main { max-width: 26rem; margin: 2rem auto; border-radius: 0.5rem; padding: 2rem; } }
h1 { font-size: 1.4rem; margin: 0 0 0.5rem; }
label { display: block; font-weight: 700; margin-top: 1rem; font-family: system-ui, sans-serif; }
input { width: 100%; min-height: 2.75rem; padding: 0.5rem; font-size: 1rem; border: 1px solid #6b7280; border-radius: 0.25rem; }
button { margin-top: 1.25rem; width: 100%; min-height: 2.75rem; font-size: 1rem; font-weight: 700; background: #6d28d9; color: #fff;
  border: 0; border-radius: 0.25rem; cursor: pointer; }
button:hover { background: #4c1d95; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.alert { background: #fee2e2; color: #7f1d1d; padding: 0.75rem; border-left: 4px solid #b91c1c; }
button.secondary { background: #fff; color: #3b0764; border: 2px solid #6d28d9; }
button.secondary:hover { background: #f5f3ff; }
a { color: #5b21b6; }
`;

/** What the login page shows. */
export interface IdpLoginPage {
  uid: string;
  clientName: string;
  error?: string;
  username?: string;
}

/** The provider's page shell: its own look, `lang`, a title, a viewport, its stylesheet; no inline style or script. */
function idpPage(title: string, body: string): string {
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)} · Example Corp</title><link rel="stylesheet" href="${IDP_STYLESHEET_PATH}"></head><body>` +
    `<header>Example Corp · Demo IdP</header><main>${body}</main></body></html>\n`
  );
}

/**
 * The confirmation of an RP-initiated logout (oidc-provider's `logoutSource`): its hidden form with the anti-forgery
 * token, and two buttons. "Sign out" ends the provider's session, so the next sign-in asks for the password again.
 *
 * @example
 * features: { rpInitiatedLogout: { enabled: true, logoutSource: async (ctx, form) => { ctx.body = renderIdpLogoutPage(form); } } }
 */
export function renderIdpLogoutPage(providerForm: string): string {
  return idpPage(
    'Sign out',
    '<h1>Sign out of Example Corp too?</h1><p>You signed out of the SSO portal. Sign out of Example Corp as well, so the next ' +
      'sign-in through it asks for your password again.</p>' +
      // oidc-provider's own markup: a POST form carrying its xsrf token, nothing taken from the request.
      `${providerForm}<button type="submit" form="op.logoutForm" name="logout" value="yes" autofocus>Sign out of Example Corp</button>` +
      '<button type="submit" form="op.logoutForm" class="secondary">Stay signed in at Example Corp</button>',
  );
}

/**
 * A page with a heading and one sentence: the end of a logout without a way back, an error, an unknown address.
 *
 * @example
 * ctx.body = renderIdpNoticePage('Signed out', 'You are signed out of Example Corp.');
 */
export function renderIdpNoticePage(title: string, text: string): string {
  return idpPage(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>`);
}

/**
 * The provider's password page for one login interaction.
 *
 * @example
 * res.type('html').send(renderIdpLoginPage({ uid: details.uid, clientName: 'the SSO portal' }));
 */
export function renderIdpLoginPage(page: IdpLoginPage): string {
  const invalid = page.error ? ' aria-invalid="true" aria-describedby="idp-error"' : '';
  return idpPage(
    'Sign in',
    `<h1>Corporate sign-in</h1><p>Sign in to continue to <strong>${escapeHtml(page.clientName)}</strong>.</p>` +
      (page.error ? `<p class="alert" role="alert" id="idp-error">${escapeHtml(page.error)}</p>` : '') +
      `<form method="post" action="/interaction/${escapeHtml(page.uid)}/login">` +
      `<label for="idp-username">Username</label><input id="idp-username" name="username" autocomplete="username" required value="${escapeHtml(page.username ?? '')}"${invalid}>` +
      `<label for="idp-password">Password</label><input id="idp-password" name="password" type="password" autocomplete="current-password" required${invalid}>` +
      '<button type="submit">Sign in at Example Corp</button></form>',
  );
}

/**
 * RP-initiated logout on, with oidc-provider's own pages in the provider's look (its defaults use inline style and a web font from another
 * origin, which the provider's strict CSP refuses): the logout confirmation, the page after a logout that names no
 * way back, and its error page, which says what went wrong in words (never the request's `state`).
 *
 * @example
 * new Provider(issuer, { features: { rpInitiatedLogout: IDP_RP_LOGOUT }, renderError: renderIdpError });
 */
export const IDP_RP_LOGOUT = {
  enabled: true,
  logoutSource(ctx: PageContext, form: string): void {
    ctx.type = 'html';
    ctx.body = renderIdpLogoutPage(form);
  },
  postLogoutSuccessSource(ctx: PageContext): void {
    ctx.type = 'html';
    ctx.body = renderIdpNoticePage('Signed out', 'You are signed out of Example Corp.');
  },
};

/**
 * The provider's error page (oidc-provider's `renderError`).
 *
 * @example
 * new Provider(issuer, { renderError: renderIdpError });
 */
export function renderIdpError(ctx: PageContext, out: { error: string; error_description?: string | undefined }): void {
  ctx.type = 'html';
  ctx.body = renderIdpNoticePage('Something went wrong', out.error_description ?? out.error);
}

/**
 * A koa middleware for `provider.use()`: an address the provider does not serve gets the provider's 404 page when a
 * browser asks (koa's default is the plain text "Not Found").
 *
 * @example
 * provider.use(idpNotFound);
 */
export async function idpNotFound(ctx: PageContext, next: () => Promise<unknown>): Promise<void> {
  await next();
  if (ctx.status === 404 && (ctx.body === undefined || ctx.body === null) && ctx.accepts('json', 'html') === 'html') {
    ctx.status = 404;
    ctx.type = 'html';
    ctx.body = renderIdpNoticePage('Not found', 'Nothing is found at this address of Example Corp.');
  }
}
