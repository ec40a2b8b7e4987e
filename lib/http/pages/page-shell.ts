import { escapeHtml } from './escape-html';

/** What {@link renderPage} puts around a page's content. */
export interface PageShell {
  /** The document title (escaped here). */
  title: string;
  /** Where the router rendering the page serves the kit's stylesheet (or the app's own); none: an unstyled page. */
  stylesheetUrl?: string;
  /** The page's one script, served by the same router; none when the page needs no behaviour. */
  scriptUrl?: string;
  /** The content of `<main>`, already escaped by the caller. */
  body: string;
  /** `wide` for pages with lists (the sessions page); default a narrow card. */
  width?: 'narrow' | 'wide';
  /** Attributes of `<main>` (id and data-* for the page's script), already escaped by the caller. */
  mainAttributes?: string;
  /** Sends the browser on to this URL at once (`<meta http-equiv="refresh">`, no script). */
  refreshUrl?: string;
}

/**
 * The kit's HTML page shell: `lang`, a viewport for phones, a same-origin referrer policy (so the page's own form
 * posts carry an `Origin` the CSRF check can accept), the shared stylesheet and at most one external script. Pages
 * carry no inline style or script, so the strict Content-Security-Policy of `securityHeaders()` holds.
 *
 * @example
 * res.type('html').send(renderPage({ title: 'Sign in', stylesheetUrl: '/portal-assets/portal.css', body: '<h1>Sign in</h1>' }));
 */
export function renderPage(shell: PageShell): string {
  const width = shell.width === 'wide' ? ' wide' : '';
  const attributes = shell.mainAttributes ? ` ${shell.mainAttributes}` : '';
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<meta name="referrer" content="same-origin">' +
    `<title>${escapeHtml(shell.title)}</title>` +
    (shell.refreshUrl ? `<meta http-equiv="refresh" content="0;url=${escapeHtml(shell.refreshUrl)}">` : '') +
    (shell.stylesheetUrl ? `<link rel="stylesheet" href="${escapeHtml(shell.stylesheetUrl)}">` : '') +
    (shell.scriptUrl ? `<script src="${escapeHtml(shell.scriptUrl)}" defer></script>` : '') +
    `</head><body><main class="card${width}"${attributes}>${shell.body}</main></body></html>\n`
  );
}
