import express, { type Request, type Response } from 'express';
import type { Session, SessionData } from 'express-session';
import { randomToken } from '../util/random-token';
import { asOutage } from './session-manager';

/**
 * A form a browser posted that needed a step-up first (the sessions page's "Revoke" with a password-only session),
 * kept in the browser's own session until the step-up is done, so the step-up page can send it on instead of
 * losing the click. It is bound to that session (it lives in it, and a new login starts without it), used once, and
 * good for five minutes. Only fields of a small urlencoded form are kept; the resumed post
 * is an ordinary form post from the portal's page, which passes every check (origin, session, level) again.
 */
export interface ResumableForm {
  /** Names this form in the step-up URL (`resume`), so only the step-up it started sends it on. */
  id: string;
  /** Where the form was posted, absolute (the portal's own origin). */
  action: string;
  /** The form's fields, in order; a name may repeat. */
  fields: Array<[string, string]>;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** How long a kept form waits for its step-up: as long as a user takes to find their authenticator app. */
export const RESUMABLE_FORM_LIFETIME_SECONDS = 300;

// The forms worth resuming are the portal's own small ones; anything bigger goes back to its page instead.
const parseSmallForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 });

function promised(run: (done: (err?: unknown) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => run((err) => (err ? reject(asOutage(err)) : resolve())));
}

function fieldsOf(body: unknown): Array<[string, string]> | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const fields: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    const values = Array.isArray(value) ? value : [value];
    if (!values.every((entry): entry is string => typeof entry === 'string')) return undefined;
    for (const entry of values) fields.push([name, entry]);
  }
  return fields;
}

/**
 * The fields of a small urlencoded form post (read from the body now, or from what a parser already read);
 * undefined for any other body, one too big, or one that cannot be read.
 *
 * @example
 * const fields = await readResumableFields(req, res); // [['session', 'h1'], ['note', 'a b']]
 */
export async function readResumableFields(req: Request, res: Response): Promise<Array<[string, string]> | undefined> {
  if (!req.is('application/x-www-form-urlencoded')) return undefined;
  // The parser leaves a body another parser already read as it is (Express 5's when the request is finished, Express
  // 4's by its `_body` mark); an empty `req.body` an unrelated parser set does not count as read.
  const parsed = await new Promise<boolean>((resolve) => parseSmallForm(req, res, (error?: unknown) => resolve(error === undefined)));
  return parsed ? fieldsOf(req.body) : undefined;
}

/**
 * Keeps a form in the session for the step-up it waits for (one at a time: a newer one replaces it), saved before
 * the browser is sent on; resolves to its id, for the step-up URL's `resume`.
 *
 * @example
 * const id = await keepResumableForm(req, `${origin}${req.originalUrl}`, fields);
 */
export async function keepResumableForm(req: Request, action: string, fields: Array<[string, string]>): Promise<string> {
  const id = randomToken(16);
  const current = req.session as Session & Partial<SessionData>;
  current.stepUpResume = { id, action, fields, createdAt: Date.now() };
  await promised((done) => current.save(done));
  return id;
}

/**
 * Takes the kept form named `id` out of the session: once, and only while it is fresh; undefined otherwise (none
 * kept, another one, too old). The session is saved without it before the form is sent on.
 *
 * @example
 * const form = await takeResumableForm(req, String(req.body.resume));
 */
export async function takeResumableForm(req: Request, id: string, now = Date.now()): Promise<ResumableForm | undefined> {
  const current = req.session as (Session & Partial<SessionData>) | undefined;
  const kept = current?.stepUpResume;
  if (current === undefined || kept === undefined || id === '' || kept.id !== id) return undefined;
  delete current.stepUpResume;
  await promised((done) => current.save(done));
  return now - kept.createdAt <= RESUMABLE_FORM_LIFETIME_SECONDS * 1000 ? kept : undefined;
}
