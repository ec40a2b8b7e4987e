import express from 'express';
import express4 from 'express4';
import request from 'supertest';
import { errorHandler, HttpError, notFound, toHttpError } from '../../lib/http';
import { StoreUnavailableError } from '../../lib/store';
import { expectProblem } from '../helpers/problem';

type ExpressFactory = typeof express;

/** An app as the README wires one: body parsers with limits, a route with a parameter, the kit's error handler. */
function appOn(factory: ExpressFactory) {
  const app = factory();
  const seen: unknown[] = [];
  app.use(factory.json({ limit: '1kb' }));
  app.use(factory.urlencoded({ extended: true, limit: '1kb', parameterLimit: 20 }));
  app.delete('/sessions/:id', (req, res) => {
    seen.push(req.params.id);
    res.status(204).end();
  });
  app.post('/notes', (req, res) => {
    seen.push(req.body);
    res.status(201).json({ ok: true });
  });
  app.use(errorHandler({ log: false }));
  return { app, seen };
}

describe.each<[string, ExpressFactory]>([
  ['Express 5', express],
  ['Express 4', express4],
])('bad input answers 4xx problem+json on %s, never 500', (_name, factory) => {
  it('answers 400 malformed_uri for a malformed percent-escape in a route parameter, without echoing it', async () => {
    const { app, seen } = appOn(factory);
    for (const path of ['/sessions/%E0%A4%A', '/sessions/%ZZ', '/sessions/%', '/sessions/%ED%A0%80']) {
      const res = await request(app).delete(path);
      expectProblem(res, 400, 'malformed_uri');
      expect(res.text).not.toContain(path.slice('/sessions/'.length));
    }
    expect(seen).toEqual([]);
  });

  it('answers 400 malformed_uri, not 404, for a malformed percent-escape in a path no route matches', async () => {
    const app = factory();
    app.get('/notes', (_req, res) => res.json([]));
    app.use(notFound());
    app.use(errorHandler({ log: false, html: true }));
    for (const path of ['/%E0%A4%A', '/%ZZ', '/notes/%', '/a/%ED%A0%80/b']) {
      const res = await request(app).get(path).set('Accept', 'application/json');
      expectProblem(res, 400, 'malformed_uri');
      expect(res.text).not.toContain(path.slice(1));
      // A browser navigation gets the kit's HTML error page, with the same status.
      const page = await request(app).get(path).set('Accept', 'text/html,application/xhtml+xml');
      expect({ path, status: page.status, type: page.headers['content-type'] }).toEqual({
        path,
        status: 400,
        type: expect.stringMatching(/^text\/html/),
      });
      expect(page.text).toContain('Bad Request');
    }
    // Well-formed escapes of a path that is not there are still a plain 404.
    for (const path of ['/nothing-here', '/caf%C3%A9', '/a%2Fb']) expectProblem(await request(app).get(path), 404, 'not_found');
  });

  it.each<[string, (test: request.Test) => request.Test, number, string]>([
    ['unparsable JSON', (test) => test.set('Content-Type', 'application/json').send('{"title":'), 400, 'entity_parse_failed'],
    [
      'a JSON body over the limit',
      (test) => test.set('Content-Type', 'application/json').send(`{"a":"${'x'.repeat(4096)}"}`),
      413,
      'entity_too_large',
    ],
    [
      'an unsupported charset',
      (test) => test.set('Content-Type', 'application/json; charset=latin9').send('{}'),
      415,
      'charset_unsupported',
    ],
    [
      'an unknown Content-Encoding',
      (test) => test.set('Content-Type', 'application/json').set('Content-Encoding', 'x-garbage').send('{}'),
      415,
      'encoding_unsupported',
    ],
    [
      'a gzip body that does not inflate',
      (test) => test.set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send('not gzip at all'),
      400,
      'content_decoding_failed',
    ],
    [
      'too many form parameters',
      (test) => test.type('form').send(Array.from({ length: 30 }, (_, i) => `p${i}=1`).join('&')),
      413,
      'parameters_too_many',
    ],
  ])('answers %s with its 4xx and a stable code, changing nothing', async (_case, build, status, code) => {
    const { app, seen } = appOn(factory);
    const res = await build(request(app).post('/notes'));
    expectProblem(res, status, code);
    expect(res.body.detail).toEqual(expect.any(String));
    expect(seen).toEqual([]);
  });
});

describe('toHttpError', () => {
  const libraryError = (status: number, fields: Record<string, unknown> = {}) =>
    Object.assign(new Error('quoted input: s3cr3t-value-from-the-client'), { status, statusCode: status, ...fields });

  it('keeps the kit’s own errors and maps a store outage to 503', () => {
    const own = new HttpError(409, { code: 'already_confirmed' });
    expect(toHttpError(own)).toBe(own);
    expect(toHttpError(new StoreUnavailableError())).toMatchObject({ status: 503, code: 'store_unavailable' });
  });

  it.each<[string, Record<string, unknown>, number, string]>([
    ['request.aborted', { type: 'request.aborted', expose: true }, 400, 'request_aborted'],
    ['request.size.invalid', { type: 'request.size.invalid', expose: true }, 400, 'request_size_invalid'],
    ['entity.verify.failed', { type: 'entity.verify.failed', expose: true }, 403, 'entity_verify_failed'],
    ['querystring.parse.rangeError', { type: 'querystring.parse.rangeError', expose: true }, 400, 'parameters_too_deep'],
  ])('maps the body parser error %s to a stable code', (_type, fields, status, code) => {
    const mapped = toHttpError(libraryError(status, fields));
    expect({ status: mapped.status, code: mapped.code }).toEqual({ status, code });
    expect(mapped.detail).not.toContain('s3cr3t');
  });

  it('maps a client error that is not marked expose to its status, by status code when it has no known type', () => {
    expect(toHttpError(libraryError(404))).toMatchObject({ status: 404, code: 'not_found', detail: undefined });
    expect(toHttpError(libraryError(416, { expose: false }))).toMatchObject({ status: 416, code: 'range_not_satisfiable' });
    expect(toHttpError(Object.assign(new Error('x'), { statusCode: 431 }))).toMatchObject({
      status: 431,
      code: 'request_header_fields_too_large',
    });
    expect(toHttpError(Object.assign(new Error('x'), { status: 499 }))).toMatchObject({ status: 499, code: 'client_error' });
  });

  it('keeps 500 for server faults: library 5xx, statuses out of range, plain errors and non-errors', () => {
    for (const error of [
      libraryError(500, { type: 'stream.not.readable', expose: false }),
      libraryError(302),
      libraryError(400.5),
      new Error('bug'),
      new URIError('URI malformed'),
      'a string',
      undefined,
    ]) {
      const mapped = toHttpError(error);
      expect({ status: mapped.status, code: mapped.code, expose: mapped.expose }).toEqual({
        status: 500,
        code: 'internal_error',
        expose: false,
      });
    }
  });
});
