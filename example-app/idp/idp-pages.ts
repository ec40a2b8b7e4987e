/**
 * The demo identity provider's own login page and stylesheet: another company's look on purpose, so a visitor
 * sees they left the portal for the corporate sign-in, and came back.
 */

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
`;

/** What the login page shows. */
export interface IdpLoginPage {
  uid: string;
  clientName: string;
  error?: string;
  username?: string;
}

/**
 * The provider's password page for one login interaction.
 *
 * @example
 * res.type('html').send(renderIdpLoginPage({ uid: details.uid, clientName: 'the SSO portal' }));
 */
export function renderIdpLoginPage(page: IdpLoginPage): string {
  const invalid = page.error ? ' aria-invalid="true" aria-describedby="idp-error"' : '';
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>Example Corp sign-in</title><link rel="stylesheet" href="${IDP_STYLESHEET_PATH}"></head><body>` +
    '<header>Example Corp · Demo IdP</header><main>' +
    `<h1>Corporate sign-in</h1><p>Sign in to continue to <strong>${escapeHtml(page.clientName)}</strong>.</p>` +
    (page.error ? `<p class="alert" role="alert" id="idp-error">${escapeHtml(page.error)}</p>` : '') +
    `<form method="post" action="/interaction/${escapeHtml(page.uid)}/login">` +
    `<label for="idp-username">Username</label><input id="idp-username" name="username" autocomplete="username" required value="${escapeHtml(page.username ?? '')}"${invalid}>` +
    `<label for="idp-password">Password</label><input id="idp-password" name="password" type="password" autocomplete="current-password" required${invalid}>` +
    '<button type="submit">Sign in at Example Corp</button></form></main></body></html>\n'
  );
}
