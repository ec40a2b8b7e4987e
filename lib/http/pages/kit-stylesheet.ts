import type { Request, Response } from 'express';

/**
 * The one stylesheet of every page the kit renders (the login portal, "your sessions", the QR pages on the
 * computer and on the phone): mobile first (a full-width card on a phone, a centred card from 40rem up), system
 * fonts, text contrast of at least 4.5:1 (WCAG 2.2, 1.4.3), a visible keyboard focus (2.4.7), and touch targets of
 * at least 44 px (2.5.5). Served as a file by each router that renders pages, so no page needs inline style.
 */
export const KIT_STYLESHEET = `:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.5;
  --ink: #111827; --muted: #4b5563; --line: #d1d5db; --page: #eef1f5; --surface: #fff; --brand: #1d4ed8; --brand-dark: #1e3a8a;
  --deny: #1f2937; --danger: #b91c1c; --ok: #166534; --focus: #f59e0b; }
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; background: var(--page); color: var(--ink); font-size: 1rem; }
.card { background: var(--surface); padding: 1.5rem 1.25rem 2rem; min-height: 100vh; }
@media (min-width: 40rem) {
  .card { max-width: 34rem; min-height: 0; margin: 3rem auto; padding: 2rem 2.5rem 2.25rem; border-radius: 0.75rem;
    box-shadow: 0 1px 2px rgba(17, 24, 39, 0.08), 0 8px 24px rgba(17, 24, 39, 0.08); }
  .card.wide { max-width: 48rem; }
}
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 0.75rem; }
h2 { font-size: 1.05rem; margin: 1.75rem 0 0.75rem; }
p { margin: 0 0 1rem; }
a { color: var(--brand); text-underline-offset: 0.15em; }
a:hover { color: var(--brand-dark); }
.eyebrow { margin: 0 0 0.25rem; font-size: 0.8rem; font-weight: 600; letter-spacing: 0.06em; text-transform: uppercase; color: var(--muted); }
.muted { color: var(--muted); }
.field { margin-bottom: 1rem; }
label { display: block; font-weight: 600; margin-bottom: 0.3rem; }
input[type=text], input[type=password] { width: 100%; min-height: 2.75rem; padding: 0.5rem 0.75rem; font: inherit;
  border: 1px solid #6b7280; border-radius: 0.375rem; background: #fff; color: var(--ink); }
input[aria-invalid=true] { border-color: var(--danger); border-width: 2px; }
button, .button { display: inline-flex; align-items: center; justify-content: center; min-height: 2.75rem; padding: 0.55rem 1.25rem;
  font: inherit; font-weight: 600; border: 2px solid transparent; border-radius: 0.375rem; background: var(--brand); color: #fff;
  cursor: pointer; text-decoration: none; }
button:hover, .button:hover { background: var(--brand-dark); color: #fff; }
.block { width: 100%; }
.button.secondary { background: #fff; color: var(--ink); border-color: var(--line); }
.button.secondary:hover { background: #f3f4f6; color: var(--ink); }
button.danger { background: var(--danger); }
button.danger:hover { background: #7f1d1d; }
button.deny { background: var(--deny); }
button.deny:hover { background: #000; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.alert { padding: 0.75rem 1rem; background: #fee2e2; color: #7f1d1d; border-left: 4px solid var(--danger); border-radius: 0.25rem; }
.notice { padding: 0.75rem 1rem; background: #dcfce7; color: #14532d; border-left: 4px solid var(--ok); border-radius: 0.25rem; }
.warning { padding: 0.75rem 1rem; background: #fef3c7; color: #78350f; border-left: 4px solid #d97706; border-radius: 0.25rem; }
.divider { display: flex; align-items: center; gap: 0.75rem; margin: 1.5rem 0 1rem; color: var(--muted); font-size: 0.9rem; }
.divider::before, .divider::after { content: ""; flex: 1; border-top: 1px solid var(--line); }
.alternatives { list-style: none; padding: 0; margin: 0; display: grid; gap: 0.5rem; }
.alternatives .button { width: 100%; }
.links { margin-top: 1.5rem; padding-top: 1rem; border-top: 1px solid var(--line); font-size: 0.95rem; }
.links a { display: inline-block; padding: 0.6rem 0; }
.sessions { list-style: none; padding: 0; margin: 1rem 0 1.5rem; border-top: 1px solid var(--line); }
.sessions li { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 0.5rem 1rem;
  padding: 0.9rem 0.5rem; border-bottom: 1px solid var(--line); }
.sessions li[aria-current=true] { background: #eff6ff; }
.sessions .device { font-weight: 600; }
.sessions .facts { margin: 0.15rem 0 0; color: var(--muted); font-size: 0.92rem; }
.badge { display: inline-block; margin-left: 0.4rem; padding: 0 0.5rem; border-radius: 999px; background: #dbeafe; color: var(--brand-dark);
  font-size: 0.8rem; font-weight: 600; vertical-align: 0.1em; }
.badge.failed { background: #fee2e2; color: #7f1d1d; }
.qr-frame { margin: 1.25rem auto; width: fit-content; padding: 0.75rem; background: #fff; border: 1px solid var(--line); border-radius: 0.75rem; }
.qr-frame svg { display: block; width: min(260px, 70vw); height: auto; }
.steps { margin: 0 0 1rem; padding-left: 1.25rem; }
.steps li { margin-bottom: 0.25rem; }
.status { display: flex; align-items: center; gap: 0.5rem; margin: 0 0 0.5rem; padding: 0.6rem 0.85rem; border-radius: 0.375rem;
  background: #f3f4f6; font-weight: 600; }
.status::before { content: ""; flex: none; width: 0.7rem; height: 0.7rem; border-radius: 50%; background: #6b7280; }
.status[data-status=scanned] { background: #fef3c7; color: #78350f; }
.status[data-status=scanned]::before { background: #d97706; }
.status[data-status=confirmed] { background: #dcfce7; color: #14532d; }
.status[data-status=confirmed]::before { background: var(--ok); }
.status[data-status=denied], .status[data-status=expired] { background: #fee2e2; color: #7f1d1d; }
.status[data-status=denied]::before, .status[data-status=expired]::before { background: var(--danger); }
.request { margin: 1rem 0 1.25rem; padding: 0; border: 1px solid var(--line); border-radius: 0.5rem; }
.request div { display: grid; grid-template-columns: 7.5rem 1fr; gap: 0.75rem; padding: 0.7rem 0.9rem; border-bottom: 1px solid var(--line); }
.request div:last-child { border-bottom: 0; }
.request dt { color: var(--muted); }
.request dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.decision { display: grid; grid-template-columns: 1fr 1fr; gap: 0.75rem; margin-top: 1.25rem; }
.decision form { margin: 0; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; margin-bottom: 0.75rem; }
.actions form { margin: 0; }
.decision button { width: 100%; min-height: 3.25rem; font-size: 1.05rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
[hidden] { display: none !important; }
`;

/**
 * Answers a request for {@link KIT_STYLESHEET}, cacheable for an hour.
 *
 * @example
 * router.get('/portal-assets/portal.css', sendKitStylesheet);
 */
export function sendKitStylesheet(_req: Request, res: Response): void {
  res.set({ 'Cache-Control': 'public, max-age=3600', 'X-Content-Type-Options': 'nosniff' }).type('text/css').send(KIT_STYLESHEET);
}
