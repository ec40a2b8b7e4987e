import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { errorHandler, KeySet, requireBearer, ssoSession, type ErrorLogEntry } from '../../lib';
import { HttpError } from '../../lib/http/errors';
import { MemoryStore, StoreUnavailableError } from '../../lib/store';
import { GENERATED_REQUEST_ID, ISO_UTC, recordEvents } from '../helpers/event-recorder';
import { loadJose } from '../helpers/jose-tokens';
import { captureLogs } from '../helpers/log-capture';
import { expectProblem } from '../helpers/problem';
import { ssoOptions } from '../helpers/sso-apps';

function failing(error: unknown, configure: (app: express.Express) => void = () => undefined, handler = errorHandler()) {
  const app = express();
  configure(app);
  app.get('/sns/qr-logins/:authCode/events', (_req: Request, _res: Response, next: NextFunction) => next(error));
  app.use(handler);
  return app;
}

const AUTH_CODE = 'Yq3v0c1X9kTQ2mZp8s7RbA4nW6eLhJdU';

describe('the request id', () => {
  it('is in every problem body and the X-Request-Id header, a fresh UUID per request', async () => {
    const app = failing(new HttpError(409, { code: 'conflict' }));
    const [one, two] = [await request(app).get(`/sns/qr-logins/${AUTH_CODE}/events`), await request(app).get(`/sns/qr-logins/x/events`)];
    for (const res of [one, two]) {
      expectProblem(res, 409, 'conflict');
      expect(res.body.request_id).toMatch(GENERATED_REQUEST_ID);
      expect(res.headers['x-request-id']).toBe(res.body.request_id);
    }
    expect(one.body.request_id).not.toBe(two.body.request_id);
  });

  it("is a trusted proxy's X-Request-Id, and never a client's", async () => {
    const error = new HttpError(409, { code: 'conflict' });
    const untrusted = await request(failing(error)).get('/sns/qr-logins/x/events').set('X-Request-Id', 'chosen-by-client');
    expect(untrusted.body.request_id).toMatch(GENERATED_REQUEST_ID);
    const trusted = await request(failing(error, (app) => app.set('trust proxy', 'loopback')))
      .get('/sns/qr-logins/x/events')
      .set('X-Request-Id', 'proxy-7f3a9c');
    expect(trusted.body.request_id).toBe('proxy-7f3a9c');
    // A value a proxy would never send (a header line break, a quote, 200 characters) is replaced, not carried.
    for (const odd of ['a"b', 'x'.repeat(200), 'id with space']) {
      const res = await request(failing(error, (app) => app.set('trust proxy', 'loopback')))
        .get('/sns/qr-logins/x/events')
        .set('X-Request-Id', odd);
      expect(res.body.request_id).toMatch(GENERATED_REQUEST_ID);
    }
  });
});

describe('5xx answers as security events', () => {
  it('records a store outage answered 503 as store.unavailable, without the auth_code or the query, and prints no line', async () => {
    const recorder = recordEvents();
    const logs = captureLogs({ debug: false });
    let res;
    try {
      res = await request(failing(new StoreUnavailableError(), () => undefined, errorHandler({ events: recorder.events }))).get(
        `/sns/qr-logins/${AUTH_CODE}/events?state=st-secret`,
      );
    } finally {
      logs.stop();
    }
    expectProblem(res, 503, 'store_unavailable');
    const event = await recorder.only('store.unavailable');
    expect(event).toEqual({
      time: expect.stringMatching(ISO_UTC),
      type: 'store.unavailable',
      outcome: 'failure',
      reason: 'store_unavailable',
      requestId: res.body.request_id,
      host: expect.any(String),
      status: 503,
      httpMethod: 'GET',
      path: '/sns/qr-logins/[redacted]/events',
      route: '/sns/qr-logins/:authCode/events',
      network: '127.0.0.1/32',
    });
    expect(logs.lines).toEqual([]);
    // The outage is counted in the store errors metric, and as the event it is.
    const metrics = await recorder.events.metrics.registry.metrics();
    expect(metrics).toMatch(/^sso_store_errors_total 1$/m);
    expect(metrics).toMatch(/^sso_security_events_total\{type="store\.unavailable",outcome="failure",reason="store_unavailable"\} 1$/m);
    await recorder.events.close();
  });

  it('records an unexpected error as error.internal with its name, never its message', async () => {
    const recorder = recordEvents();
    const res = await request(failing(new TypeError('secret-ish detail'), () => undefined, errorHandler({ events: recorder.events }))).get(
      '/sns/qr-logins/x/events',
    );
    expectProblem(res, 500, 'internal_error');
    const event = await recorder.only('error.internal');
    expect(event).toMatchObject({ reason: 'internal_error', status: 500, code: 'internal_error', errorName: 'TypeError' });
    expect(JSON.stringify(event)).not.toContain('secret-ish');
    await recorder.events.close();
  });

  it('finds the events of the session when it has none of its own', async () => {
    const recorder = recordEvents();
    const store = new MemoryStore();
    const sessions = ssoSession(ssoOptions({ store, events: recorder.events }));
    const res = await request(failing(new StoreUnavailableError(), (app) => app.use(sessions))).get('/sns/qr-logins/x/events');
    expectProblem(res, 503, 'store_unavailable');
    expect(await recorder.only('store.unavailable')).toMatchObject({ requestId: res.body.request_id });
    await recorder.events.close();
    await store.close();
  });

  it('finds the events of the requireBearer that failed closed', async () => {
    const recorder = recordEvents();
    const app = express();
    app.get(
      '/api',
      requireBearer({
        keys: { getKey: () => Promise.reject(new StoreUnavailableError()) },
        algorithms: ['ES256'],
        issuer: 'https://auth.example.test',
        audience: 'api',
        events: recorder.events,
      }),
      (_req, res) => res.end(),
    );
    app.use(errorHandler());
    const token = KeySet.generate('ES256');
    const signed = await new (await loadJose()).SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: token.signingKey.kid, typ: 'at+jwt' })
      .setIssuer('https://auth.example.test')
      .setAudience('api')
      .setExpirationTime('5m')
      .sign(token.signingKey.key);
    const res = await request(app).get('/api').set('Authorization', `Bearer ${signed}`);
    expectProblem(res, 503, 'store_unavailable');
    expect(await recorder.only('store.unavailable')).toMatchObject({ requestId: res.body.request_id, httpMethod: 'GET', path: '/api' });
    expect(recorder.ofType('token.refused')).toEqual([]);
    await recorder.events.close();
  });

  it("gives a custom log the time, the request id and the client's network", async () => {
    const logged: ErrorLogEntry[] = [];
    const res = await request(failing(new Error('boom'), () => undefined, errorHandler({ log: (entry) => logged.push(entry) }))).get(
      '/sns/qr-logins/x/events',
    );
    expect(logged).toEqual([
      expect.objectContaining({
        time: expect.stringMatching(ISO_UTC),
        requestId: res.body.request_id,
        network: '127.0.0.1/32',
        status: 500,
      }),
    ]);
  });
});
