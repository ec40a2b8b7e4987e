import { randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import {
  BadGatewayError,
  ConflictError,
  errorHandler,
  ForbiddenError,
  GoneError,
  MethodNotAllowedError,
  methodNotAllowed,
  NotAcceptableError,
  NotFoundError,
  notFound,
  requireRepresentation,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthorizedError,
  UnprocessableEntityError,
  type ErrorLogEntry,
} from '../../lib/http';
import { StoreUnavailableError } from '../../lib/store';
import { captureLogs } from '../helpers/log-capture';
import { expectProblem } from '../helpers/problem';

function appThrowing(error: unknown, options: Parameters<typeof errorHandler>[0] = { log: false }) {
  const app = express();
  app.get('/boom', (_req: Request, _res: Response, next: NextFunction) => next(error));
  app.use(errorHandler(options));
  return app;
}

describe('errorHandler renders RFC 9457 problem+json', () => {
  it.each([
    [new UnauthorizedError({ headers: { 'WWW-Authenticate': 'Bearer realm="api"' } }), 401, 'unauthorized'],
    [new ForbiddenError({ code: 'permission_denied' }), 403, 'permission_denied'],
    [new ConflictError(), 409, 'conflict'],
    [new GoneError(), 410, 'gone'],
    [new NotAcceptableError(['application/json']), 406, 'not_acceptable'],
    [new TooManyRequestsError(30), 429, 'too_many_requests'],
    [new BadGatewayError(), 502, 'bad_gateway'],
    [new ServiceUnavailableError(), 503, 'service_unavailable'],
  ])('answers %p with its status and code', async (error, status, code) => {
    const res = await request(appThrowing(error)).get('/boom');
    expectProblem(res, status, code);
    expect(res.body.title).toEqual(expect.any(String));
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('sends the headers an error carries', async () => {
    const res = await request(appThrowing(new UnauthorizedError({ headers: { 'WWW-Authenticate': 'Bearer realm="api"' } }))).get('/boom');
    expect(res.headers['www-authenticate']).toBe('Bearer realm="api"');
    const allow = await request(appThrowing(new MethodNotAllowedError(['GET', 'POST']))).get('/boom');
    expect(allow.headers.allow).toBe('GET, POST');
    const retry = await request(appThrowing(new TooManyRequestsError(29.2))).get('/boom');
    expect(retry.headers['retry-after']).toBe('30');
  });

  it('lists field errors of a 422', async () => {
    const res = await request(appThrowing(new UnprocessableEntityError([{ field: 'title', message: 'is required' }]))).get('/boom');
    expectProblem(res, 422, 'validation_failed');
    expect(res.body.errors).toEqual([{ field: 'title', message: 'is required' }]);
  });

  it('maps a store outage to 503 with Retry-After, never to a login or a 500', async () => {
    const res = await request(appThrowing(new StoreUnavailableError())).get('/boom');
    expectProblem(res, 503, 'store_unavailable');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('hides the message of an unexpected error and logs it without the query string', async () => {
    const logged: ErrorLogEntry[] = [];
    const app = appThrowing(new Error('database password is hunter2'), { log: (entry) => logged.push(entry) });
    const res = await request(app).get('/boom?code=secret-code');
    expectProblem(res, 500, 'internal_error');
    expect(JSON.stringify(res.body)).not.toContain('hunter2');
    expect(logged).toHaveLength(1);
    expect(logged[0]?.path).toBe('/boom');
    expect(JSON.stringify(logged)).not.toContain('secret-code');
  });

  it('does not log client errors', async () => {
    const logged: ErrorLogEntry[] = [];
    await request(appThrowing(new ForbiddenError(), { log: (entry) => logged.push(entry) })).get('/boom');
    expect(logged).toHaveLength(0);
  });

  it('answers 400 problem+json for a malformed JSON body, changing nothing', async () => {
    const app = express();
    const seen: unknown[] = [];
    app.post('/notes', express.json(), (req, res) => {
      seen.push(req.body);
      res.status(201).json(req.body);
    });
    app.use(errorHandler({ log: false }));
    const res = await request(app).post('/notes').set('Content-Type', 'application/json').send('{"title":');
    expectProblem(res, 400, 'entity_parse_failed');
    expect(seen).toHaveLength(0);
  });

  it('renders a small HTML page for browser navigations when asked', async () => {
    const app = appThrowing(new ForbiddenError({ detail: 'You need <read> on reports.' }), { log: false, html: true, homeUrl: '/start' });
    const page = await request(app).get('/boom').set('Accept', 'text/html,application/xhtml+xml');
    expect(page.status).toBe(403);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('You need &#60;read&#62; on reports.');
    expect(page.text).toContain('href="/start"');
    const api = await request(app).get('/boom').set('Accept', 'application/json');
    expectProblem(api, 403);
  });

  it('renders the HTML page for a form a browser posted, and problem+json for a script or an API client', async () => {
    const app = express();
    app.all('/step-up', express.urlencoded({ extended: false }), (_req: Request, _res: Response, next: NextFunction) =>
      next(new ForbiddenError({ code: 'csrf_origin', detail: 'This form was sent from another site.' })),
    );
    app.use(errorHandler({ log: false, html: true, homeUrl: '/login' }));
    const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/plain']) {
      const page = await request(app).post('/step-up').set('Accept', browser).set('Content-Type', type).send('');
      expect({ type, status: page.status, contentType: page.headers['content-type'] }).toEqual({
        type,
        status: 403,
        contentType: expect.stringMatching(/^text\/html/),
      });
      expect(page.text).toContain('This form was sent from another site.');
      expect(page.text).toContain('href="/login"');
    }
    // A bodiless form post (a button alone) too.
    expect((await request(app).post('/step-up').set('Accept', browser)).headers['content-type']).toMatch(/^text\/html/);
    // fetch() with JSON, or an API client asking for anything: the problem document.
    expectProblem(await request(app).post('/step-up').set('Accept', browser).set('Content-Type', 'application/json').send('{}'), 403);
    expectProblem(await request(app).post('/step-up').set('Accept', '*/*').type('form').send('a=1'), 403);
    // No form sends PUT.
    expectProblem(await request(app).put('/step-up').set('Accept', browser).type('form').send('a=1'), 403);
  });

  it("renders the HTML page in the kit's page shell, with the app's stylesheet when given one", async () => {
    const styled = appThrowing(new NotFoundError(), { log: false, html: true, stylesheetUrl: '/portal-assets/portal.css' });
    const page = await request(styled).get('/boom').set('Accept', 'text/html');
    expect(page.status).toBe(404);
    expect(page.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(page.text).toContain('<link rel="stylesheet" href="/portal-assets/portal.css">');
    expect(page.text).toContain('<main class="card"><p class="eyebrow">Error 404</p><h1>Not Found</h1>');
    expect(page.text).not.toMatch(/<style|\sstyle=|<script/i);
    const plain = await request(appThrowing(new NotFoundError(), { log: false, html: true }))
      .get('/boom')
      .set('Accept', 'text/html');
    expect(plain.text).not.toContain('<link rel="stylesheet"');
  });

  it.each(['https://cdn.example.test/kit.css', '//cdn.example.test/kit.css', 'javascript:alert(1)', 'kit.css'])(
    "refuses a stylesheetUrl off the app's origin: %s",
    (stylesheetUrl) => {
      expect(() => errorHandler({ html: true, stylesheetUrl })).toThrow(/errorHandler: stylesheetUrl must be a path on the app's origin/);
    },
  );

  it("lets Express's own handler use status and headers when ours is not mounted", async () => {
    const app = express();
    app.get('/boom', (_req, _res, next) => next(new UnauthorizedError({ headers: { 'WWW-Authenticate': 'Basic realm="x"' } })));
    const res = await request(app).get('/boom');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="x"');
  });

  it('refuses a log option that is not a function, and unknown options', () => {
    expect(() => errorHandler({ log: 'console' as unknown as false })).toThrow(
      'errorHandler: log must be a function or false, got "console"',
    );
    expect(() => errorHandler({ log: true as unknown as false })).toThrow(/log must be a function or false \(logging is on by default\)/);
    expect(() => errorHandler({ homeURL: '/' } as never)).toThrow(/unknown option "homeURL" \(did you mean "homeUrl"\?\)/);
  });
});

describe('errorHandler log lines carry no credential', () => {
  const authCode = randomBytes(24).toString('base64url');

  /** A QR-provider-like route whose store is down, under the default logger (or the given one). */
  function qrEventsApp(log?: (entry: ErrorLogEntry) => void) {
    const app = express();
    const router = express.Router();
    router.get('/sns/qr-logins/:authCode/events', (_req, _res, next) => next(new StoreUnavailableError()));
    app.use(router);
    app.use((_req: Request, _res: Response, next: NextFunction) => next(new StoreUnavailableError()));
    app.use(errorHandler(log ? { log } : {}));
    return app;
  }

  it('logs a 503 of a path carrying an auth_code with the code replaced and without the query', async () => {
    const logs = captureLogs({ debug: false });
    let res;
    try {
      res = await request(qrEventsApp()).get(`/sns/qr-logins/${authCode}/events?state=st-secret&code=c0de-secret`);
    } finally {
      logs.stop();
    }
    expectProblem(res, 503, 'store_unavailable');
    // ASVS 16.2.1: when, which request (the id the answer carries), from where; never the query or the auth_code.
    const time = String.raw`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z`;
    expect(logs.lines).toEqual([
      {
        source: 'console.error',
        text: expect.stringMatching(
          new RegExp(
            String.raw`^\[express-sso-kit\] ${time} 503 store_unavailable GET /sns/qr-logins/\[redacted\]/events ` +
              String.raw`\(request ${res.body.request_id}, from 127\.0\.0\.1/32\): ` +
              String.raw`ServiceUnavailableError: The session store is unavailable\. Try again shortly\.$`,
          ),
        ),
      },
    ]);
    expect(res.headers['x-request-id']).toBe(res.body.request_id);
  });

  it('gives a custom logger the route pattern and the redacted path', async () => {
    const logged: ErrorLogEntry[] = [];
    await request(qrEventsApp((entry) => logged.push(entry))).get(`/sns/qr-logins/${authCode}/events`);
    expect(logged).toEqual([
      expect.objectContaining({ status: 503, path: '/sns/qr-logins/[redacted]/events', route: '/sns/qr-logins/:authCode/events' }),
    ]);
  });

  it('redacts percent-encoded and token-like segments of a path no route matched', async () => {
    const logged: ErrorLogEntry[] = [];
    const app = qrEventsApp((entry) => logged.push(entry));
    await request(app).get(`/reset/${authCode}/x%2Fy/42/sessions`);
    expect(logged.map((entry) => [entry.path, entry.route])).toEqual([['/reset/[redacted]/[redacted]/42/sessions', undefined]]);
  });

  it('redacts runs that look like tokens in the message of an unexpected error', async () => {
    const token = `eyJhbGciOiJIUzI1NiJ9.${randomBytes(30).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
    const logged: ErrorLogEntry[] = [];
    const res = await request(appThrowing(new Error(`upstream refused ${token} for user 42`), { log: (entry) => logged.push(entry) })).get(
      '/boom',
    );
    expectProblem(res, 500, 'internal_error');
    expect(logged[0]?.message).toBe('upstream refused [redacted] for user 42');
  });
});

describe('route helpers', () => {
  const app = express();
  app
    .route('/notes')
    .get((_req, res) => res.json([]))
    .all(methodNotAllowed(['GET', 'POST']));
  app.get('/report', requireRepresentation(['application/json']), (_req, res) => res.json({ ok: true }));
  app.use(notFound());
  app.use(errorHandler({ log: false }));

  it('answers 405 with Allow for an unsupported method', async () => {
    const res = await request(app).delete('/notes');
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.allow).toBe('GET, POST, HEAD, OPTIONS');
  });

  it('answers 406 when no acceptable representation exists', async () => {
    expectProblem(await request(app).get('/report').set('Accept', 'text/csv'), 406, 'not_acceptable');
    expect((await request(app).get('/report').set('Accept', 'application/json')).status).toBe(200);
  });

  it('answers 404 problem+json for unknown paths, without repeating the path', async () => {
    const res = await request(app).get('/nothing-here-Yq3v0c1X9kTQ2mZp');
    expectProblem(res, 404, 'not_found');
    expect(res.text).not.toContain('Yq3v0c1X9kTQ2mZp');
  });

  it('refuses to build helpers without their lists', () => {
    expect(() => methodNotAllowed([])).toThrow(TypeError);
    expect(() => requireRepresentation([])).toThrow(TypeError);
  });
});
