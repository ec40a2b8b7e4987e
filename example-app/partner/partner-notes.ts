/**
 * "Read my notes" on the partner site: the partner calls the demo's Notes API server-side, with the access token the
 * portal's OpenID Provider issued it for the signed-in user (a JWT whose audience is the Notes API, `notes:read`),
 * and shows what the API answers. The token never reaches the browser.
 */
import type { NextFunction, Request, Response } from 'express';
import { escapeHtml } from '../common/app-pages';
import { notesResource, type DemoConfig } from '../common/config';
import { partnerPage } from './partner-pages';

interface NoteSummary {
  id: string;
  title: string;
}

// What the Notes API answered, as the page shows it: the notes, or the status and why.
type NotesOutcome = { notes: NoteSummary[] } | { status: number; detail: string };

async function fetchNotes(url: string, accessToken: string): Promise<NotesOutcome> {
  const answer = await fetch(url, {
    headers: { Authorization: `Bearer ${accessToken}`, Accept: 'application/json' },
    signal: AbortSignal.timeout(5000),
    redirect: 'error',
  });
  const body: unknown = await answer.json().catch(() => undefined);
  if (answer.ok && Array.isArray(body)) {
    return { notes: body.map((note: Record<string, unknown>) => ({ id: String(note.id), title: String(note.title) })) };
  }
  const detail = body && typeof body === 'object' && typeof (body as { detail?: unknown }).detail === 'string';
  return { status: answer.status, detail: detail ? (body as { detail: string }).detail : 'The Notes API did not answer with notes.' };
}

function renderNotes(outcome: NotesOutcome, api: string): string {
  const result =
    'notes' in outcome
      ? `<p id="notes-result" data-status="200" data-count="${outcome.notes.length}">The Notes API at <code>${escapeHtml(api)}</code> accepted the portal's token: ${outcome.notes.length} note(s).</p>` +
        `<ul id="notes">${outcome.notes.map((note) => `<li data-note-id="${escapeHtml(note.id)}">${escapeHtml(note.title)}</li>`).join('')}</ul>`
      : `<p id="notes-result" data-status="${outcome.status}">The Notes API refused (${outcome.status}): ${escapeHtml(outcome.detail)}</p>`;
  return partnerPage('Partner · my notes', `<h1>My notes</h1>${result}<p><a href="/">Back</a></p>`);
}

/**
 * GET /notes on the partner site: the signed-in user's notes, read from the Notes API with the user's access token.
 * A session without a token (signed in before the API was a resource) is sent to sign in again.
 *
 * @example
 * app.get('/notes', requireSession(), readMyNotes(config));
 */
export function readMyNotes(config: DemoConfig) {
  const api = notesResource(config).indicator;
  return async function readMyNotesPage(req: Request, res: Response, next: NextFunction): Promise<void> {
    try {
      const accessToken = await req.oidc?.accessToken();
      if (!accessToken) {
        res.redirect(303, '/login/portal');
        return;
      }
      const outcome = await fetchNotes(api, accessToken);
      res
        .status('notes' in outcome ? 200 : 502)
        .set('Cache-Control', 'no-store')
        .type('html')
        .send(renderNotes(outcome, api));
    } catch (error) {
      next(error);
    }
  };
}
