import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type RequestHandler, type Response, Router } from 'express';
import {
  GoneError,
  HttpError,
  methodNotAllowed,
  NotFoundError,
  requireRepresentation,
  UnauthorizedError,
  UnprocessableEntityError,
  type FieldError,
} from 'express-sso-kit';

/** A note as the API returns it. */
export interface Note {
  id: string;
  title: string;
  body: string;
  createdAt: string;
  updatedAt: string;
}

const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const FIELDS = new Set(['title', 'body']);
const READ_ONLY = new Set(['id', 'createdAt', 'updatedAt']);

/**
 * Checks a note body: for PUT and POST every writable field (title, body) must be there, for PATCH only the
 * present ones are checked. Read-only fields may be echoed back unchanged (a client PUTs what it GOT) but not altered.
 *
 * @example
 * validateNoteInput({ title: '' }, 'partial'); // [{ field: 'title', message: 'is required and must be a non-empty string' }]
 */
export function validateNoteInput(input: unknown, mode: 'complete' | 'partial', current?: Note): FieldError[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return [{ field: '/', message: 'must be a JSON object' }];
  }
  const value = input as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(value)) {
    if (READ_ONLY.has(key)) {
      if (!current || value[key] !== current[key as keyof Note]) errors.push({ field: key, message: 'is read-only' });
    } else if (!FIELDS.has(key)) {
      errors.push({ field: key, message: 'is not a field of a note' });
    }
  }
  if (mode === 'complete' || 'title' in value) {
    const title = value.title;
    if (typeof title !== 'string' || title.trim().length === 0)
      errors.push({ field: 'title', message: 'is required and must be a non-empty string' });
    else if (title.length > 200) errors.push({ field: 'title', message: 'must be at most 200 characters' });
  }
  if (mode === 'complete' || 'body' in value) {
    const body = value.body;
    if (typeof body !== 'string') errors.push({ field: 'body', message: 'is required and must be a string (may be empty)' });
    else if (body.length > 10_000) errors.push({ field: 'body', message: 'must be at most 10000 characters' });
  }
  return errors;
}

/**
 * Per-owner notes kept in process memory, with tombstones so a deleted note answers 410 rather than 404.
 *
 * @example
 * const notes = new NoteRepository();
 * notes.save('alice', { id: 'n1', title: 'Hi', body: '', createdAt: now, updatedAt: now });
 */
export class NoteRepository {
  private readonly notes = new Map<string, Note>();
  private readonly removed = new Set<string>();

  private key(owner: string, id: string): string {
    return `${owner}\u0000${id}`;
  }

  list(owner: string): Note[] {
    const prefix = `${owner}\u0000`;
    return [...this.notes.entries()].filter(([key]) => key.startsWith(prefix)).map(([, note]) => ({ ...note }));
  }

  find(owner: string, id: string): Note | 'gone' | undefined {
    const key = this.key(owner, id);
    if (this.removed.has(key)) return 'gone';
    const note = this.notes.get(key);
    return note ? { ...note } : undefined;
  }

  save(owner: string, note: Note): Note {
    this.notes.set(this.key(owner, note.id), { ...note });
    return { ...note };
  }

  remove(owner: string, id: string): void {
    const key = this.key(owner, id);
    this.notes.delete(key);
    this.removed.add(key);
  }
}

/** Options of {@link notesApi}. */
export interface NotesApiOptions {
  /** Runs first on every route, e.g. `requireAuth({ bearer, session })`; sets `req.user` or `req.auth`, or fails with 401. */
  authenticate: RequestHandler;
  repository?: NoteRepository;
}

// Notes belong to an identity, never to a bare subject: a signed-in user by its id (`<source>|<subject>`), a
// Bearer token by (its issuer, its sub), written the same way.
function ownerOf(req: Request): string {
  const claims = req.auth?.payload;
  if (claims && typeof claims.iss === 'string' && typeof claims.sub === 'string' && claims.sub !== '') {
    return `token:${claims.iss}|${claims.sub}`;
  }
  if (req.user) return req.user.id;
  throw new UnauthorizedError({ detail: 'Sign in or send a Bearer token.' });
}

function pick(input: Record<string, unknown>): Partial<Pick<Note, 'title' | 'body'>> {
  const out: Partial<Pick<Note, 'title' | 'body'>> = {};
  if (typeof input.title === 'string') out.title = input.title;
  if (typeof input.body === 'string') out.body = input.body;
  return out;
}

const JSON_TYPES = ['application/json', 'application/merge-patch+json'];

// A plain OPTIONS (a CORS preflight never gets here: corsPreflight answers it first) describes the methods
// (RFC 9110, section 9.3.7).
function allowOnly(allow: string) {
  return function describeMethods(_req: Request, res: Response) {
    res.setHeader('Allow', allow);
    res.status(204).end();
  };
}

/**
 * The demo's REST collection `/notes`, with the methods and status codes of RFC 9110: GET list/item (200, 404, 410 once deleted),
 * POST 201 with Location, PUT create-or-replace (201 or 200, complete resource), PATCH 200 with the complete
 * resource, DELETE 204, 405 with Allow, 406 for an unavailable representation, 415 for a non-JSON body,
 * 400 for malformed JSON, 422 with field errors.
 *
 * @example
 * app.use(notesApi({ authenticate: requireAuth({ bearer: requireBearer({ … }), session: requireSession() }) }));
 */
export function notesApi(options: NotesApiOptions): Router {
  if (typeof options?.authenticate !== 'function') {
    throw new TypeError('notesApi: authenticate must be a middleware such as requireAuth({ bearer, session })');
  }
  const repository = options.repository ?? new NoteRepository();
  const router = Router();
  const representation = requireRepresentation(['application/json']);
  const parseJson = express.json({ limit: '32kb', type: JSON_TYPES, strict: true });

  function requireJsonBody(req: Request, _res: Response, next: NextFunction): void {
    if (!req.is(JSON_TYPES)) {
      next(
        new HttpError(415, {
          code: 'unsupported_media_type',
          detail: 'Send the note as application/json.',
          headers: { 'Accept-Patch': 'application/merge-patch+json, application/json' },
        }),
      );
      return;
    }
    parseJson(req, _res, next);
  }

  function load(req: Request): { owner: string; id: string; note: Note | undefined } {
    const owner = ownerOf(req);
    const id = String(req.params.id);
    if (!ID_PATTERN.test(id)) throw new NotFoundError({ detail: 'No note has this id.' });
    const found = repository.find(owner, id);
    if (found === 'gone') throw new GoneError({ detail: 'This note was deleted.' });
    return { owner, id, note: found };
  }

  function withLocation(req: Request, res: Response, id: string): void {
    res.location(`${req.baseUrl}/notes/${encodeURIComponent(id)}`);
  }

  router
    .route('/notes')
    .get(options.authenticate, representation, function listNotes(req: Request, res: Response) {
      res.json(repository.list(ownerOf(req)));
    })
    .post(options.authenticate, representation, requireJsonBody, function createNote(req: Request, res: Response) {
      const owner = ownerOf(req);
      const errors = validateNoteInput(req.body, 'complete');
      if (errors.length) throw new UnprocessableEntityError(errors, { detail: 'The note is not valid.' });
      const now = new Date().toISOString();
      const note = repository.save(owner, {
        id: randomUUID(),
        ...(pick(req.body) as Pick<Note, 'title' | 'body'>),
        createdAt: now,
        updatedAt: now,
      });
      withLocation(req, res, note.id);
      res.status(201).json(note);
    })
    .options(allowOnly('GET, POST, HEAD, OPTIONS'))
    .all(methodNotAllowed(['GET', 'POST']));

  router
    .route('/notes/:id')
    .get(options.authenticate, representation, function readNote(req: Request, res: Response) {
      const { note } = load(req);
      if (!note) throw new NotFoundError({ detail: 'No note has this id.' });
      res.json(note);
    })
    .put(options.authenticate, representation, requireJsonBody, function replaceNote(req: Request, res: Response) {
      const { owner, id, note } = load(req);
      const errors = validateNoteInput(req.body, 'complete', note ?? ({ id } as Note));
      if (errors.length) throw new UnprocessableEntityError(errors, { detail: 'The note is not valid.' });
      const now = new Date().toISOString();
      const saved = repository.save(owner, {
        id,
        ...(pick(req.body) as Pick<Note, 'title' | 'body'>),
        createdAt: note?.createdAt ?? now,
        updatedAt: now,
      });
      if (!note) withLocation(req, res, id);
      res.status(note ? 200 : 201).json(saved);
    })
    .patch(options.authenticate, representation, requireJsonBody, function updateNote(req: Request, res: Response) {
      const { owner, note } = load(req);
      if (!note) throw new NotFoundError({ detail: 'No note has this id.' });
      const errors = validateNoteInput(req.body, 'partial', note);
      if (errors.length) throw new UnprocessableEntityError(errors, { detail: 'The change is not valid.' });
      res.json(repository.save(owner, { ...note, ...pick(req.body), updatedAt: new Date().toISOString() }));
    })
    .delete(options.authenticate, function deleteNote(req: Request, res: Response) {
      const { owner, id, note } = load(req);
      if (!note) throw new NotFoundError({ detail: 'No note has this id.' });
      repository.remove(owner, id);
      res.status(204).end();
    })
    .options(allowOnly('GET, PUT, PATCH, DELETE, HEAD, OPTIONS'))
    .all(methodNotAllowed(['GET', 'PUT', 'PATCH', 'DELETE']));

  return router;
}
