import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { corsPreflight, type CorsPreflightOptions } from '../../lib/cors';
import { errorHandler, type ErrorLogEntry } from '../../lib/http';
import { captureLogs } from '../helpers/log-capture';
import { expectProblem } from '../helpers/problem';

const running: Server[] = [];
afterAll(() => Promise.all(running.map((server) => new Promise((resolve) => server.close(resolve)))));

async function serve(middleware: RequestHandler): Promise<{ url: string; logs: ErrorLogEntry[] }> {
  const app = express();
  const logs: ErrorLogEntry[] = [];
  app.use('/api', middleware);
  app.get('/api/notes', (_req, res) => {
    res.set('X-Total-Count', '3').json([{ id: 1 }]);
  });
  app.put('/api/notes/:id', (_req, res) => {
    res.json({ id: 1 });
  });
  app.options('/api/notes', (_req, res) => {
    res.set('Allow', 'GET, OPTIONS').status(200).send('app options');
  });
  app.use(errorHandler({ log: (entry) => logs.push(entry) }));
  const server = createServer(app);
  running.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, logs };
}

function preflight(url: string, origin: string, method: string, headers?: string) {
  const test = request(url).options('/api/notes').set('Origin', origin).set('Access-Control-Request-Method', method);
  return headers === undefined ? test : test.set('Access-Control-Request-Headers', headers);
}

function corsHeaders(headers: Record<string, unknown>): string[] {
  return Object.keys(headers).filter((name) => name.startsWith('access-control-'));
}

function varyOf(headers: Record<string, unknown>): string[] {
  return String(headers.vary ?? '')
    .split(',')
    .map((value) => value.trim().toLowerCase())
    .filter(Boolean);
}

const options: CorsPreflightOptions = {
  origins: ['https://shop.example.test', 'https://*.example.test', 'http://localhost:5173'],
  credentials: true,
  methods: ['GET', 'PUT', 'DELETE'],
  allowedHeaders: ['Content-Type', 'Authorization', 'X-Request-Id'],
  exposedHeaders: ['X-Total-Count'],
  maxAgeSeconds: 3600,
};

describe('corsPreflight: an allowed preflight', () => {
  let url: string;
  beforeAll(async () => {
    ({ url } = await serve(corsPreflight(options)));
  });

  it('answers 204 with the CORS headers', async () => {
    const res = await preflight(url, 'https://admin.example.test', 'PUT', 'content-type, x-request-id');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://admin.example.test');
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-allow-methods']).toBe('GET,PUT,DELETE');
    expect(res.headers['access-control-allow-headers']).toBe('Content-Type,Authorization,X-Request-Id');
    expect(res.headers['access-control-max-age']).toBe('3600');
    expect(res.headers['content-length']).toBe('0');
    expect(varyOf(res.headers)).toEqual(
      expect.arrayContaining(['origin', 'access-control-request-method', 'access-control-request-headers']),
    );
  });

  it('compares requested header names case-insensitively and tolerates spacing', async () => {
    await preflight(url, 'https://shop.example.test', 'DELETE', 'AUTHORIZATION,Content-Type ,  x-request-id').expect(204);
  });

  it('allows a preflight without requested headers', async () => {
    await preflight(url, 'http://localhost:5173', 'GET').expect(204);
  });
});

describe('corsPreflight: a refused preflight answers 403 problem+json without CORS headers', () => {
  let url: string;
  beforeAll(async () => {
    ({ url } = await serve(corsPreflight(options)));
  });

  it.each([
    ['a disallowed origin', 'https://evil.test', 'PUT', undefined],
    ['a look-alike origin', 'https://evil-example.test', 'PUT', undefined],
    ['the parent as a prefix', 'https://example.test.evil.com', 'PUT', undefined],
    ['userinfo smuggling', 'https://x.example.test@evil.com', 'PUT', undefined],
    ['http where https was written', 'http://shop.example.test', 'PUT', undefined],
    ['the null origin', 'null', 'PUT', undefined],
    ['a method not allowed', 'https://shop.example.test', 'PATCH', undefined],
    ['an unknown method', 'https://shop.example.test', 'PURGE', undefined],
    ['a header not allowed', 'https://shop.example.test', 'PUT', 'content-type, x-secret'],
    ['a header list with only one disallowed entry', 'https://shop.example.test', 'PUT', 'x-request-id,cookie'],
  ])('refuses %s', async (_name, origin, method, headers) => {
    const res = await preflight(url, origin, method, headers);
    expectProblem(res, 403, 'cors_refused');
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(varyOf(res.headers)).toContain('origin');
  });
});

describe('corsPreflight: actual requests', () => {
  let url: string;
  beforeAll(async () => {
    ({ url } = await serve(corsPreflight(options)));
  });

  it('adds the origin, credentials and exposed headers for an allowed origin', async () => {
    const res = await request(url).get('/api/notes').set('Origin', 'https://admin.example.test').expect(200);
    expect(res.headers['access-control-allow-origin']).toBe('https://admin.example.test');
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-expose-headers']).toBe('X-Total-Count');
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
    expect(varyOf(res.headers)).toContain('origin');
  });

  it('lets a disallowed origin through without any CORS header, so the browser withholds the response', async () => {
    const res = await request(url).get('/api/notes').set('Origin', 'https://evil.test').expect(200);
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(varyOf(res.headers)).toContain('origin');
  });

  it('sets Vary: Origin on a non-CORS answer as well', async () => {
    const res = await request(url).get('/api/notes').expect(200);
    expect(corsHeaders(res.headers)).toEqual([]);
    expect(varyOf(res.headers)).toContain('origin');
  });

  it('keeps a Vary value set before it', async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.vary('Accept-Encoding');
      next();
    });
    app.use(corsPreflight(options));
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    const res = await request(app).get('/').set('Origin', 'https://shop.example.test').expect(200);
    expect(varyOf(res.headers)).toEqual(expect.arrayContaining(['accept-encoding', 'origin']));
  });

  it('lets a plain OPTIONS request (no Access-Control-Request-Method) reach the app', async () => {
    const res = await request(url).options('/api/notes').set('Origin', 'https://shop.example.test').expect(200);
    expect(res.text).toBe('app options');
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example.test');
  });
});

describe('corsPreflight: rejectDisallowedOrigins', () => {
  it('answers 403 to an actual request from a disallowed origin and still serves allowed and non-CORS ones', async () => {
    const { url } = await serve(corsPreflight({ ...options, rejectDisallowedOrigins: true }));
    const res = await request(url).get('/api/notes').set('Origin', 'https://evil.test');
    expectProblem(res, 403, 'cors_refused');
    expect(corsHeaders(res.headers)).toEqual([]);
    await request(url).get('/api/notes').set('Origin', 'https://shop.example.test').expect(200);
    await request(url).get('/api/notes').expect(200);
  });
});

describe('corsPreflight: credentials and "*"', () => {
  it('sends no Allow-Credentials header unless credentials is true', async () => {
    const { url } = await serve(corsPreflight({ origins: ['https://shop.example.test'] }));
    const res = await preflight(url, 'https://shop.example.test', 'PUT', 'content-type').expect(204);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(res.headers['access-control-max-age']).toBe('600');
    expect(res.headers['access-control-allow-headers']).toBe('Content-Type,Authorization');
  });

  it('answers Allow-Origin "*" for origins "*" without credentials', async () => {
    const { url } = await serve(corsPreflight({ origins: '*', maxAgeSeconds: 0 }));
    const res = await preflight(url, 'https://anyone.example', 'GET').expect(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-max-age']).toBe('0');
  });

  it('throws a TypeError for origins "*" with credentials', () => {
    expect(() => corsPreflight({ origins: '*', credentials: true })).toThrow(TypeError);
    expect(() => corsPreflight({ origins: ['*'], credentials: true })).toThrow(/origins "\*" cannot be combined with credentials: true/);
  });
});

describe('corsPreflight: options', () => {
  it.each<[string, unknown, RegExp]>([
    ['origins is missing', {}, /origins is required/],
    [
      'an entry is a bare wildcard host',
      { origins: ['*.example.com'] },
      /origins must list full origins like "https:\/\/app\.example\.com".*got "\*\.example\.com"/,
    ],
    ['an entry has a trailing slash', { origins: ['https://app.example.com/'] }, /got "https:\/\/app\.example\.com\/"/],
    ['an entry has a path', { origins: ['https://app.example.com/api'] }, /got "https:\/\/app\.example\.com\/api"/],
    ['the cors-style origin option is used', { origin: '*', credentials: true }, /unknown option "origin" \(did you mean "origins"\?\)/],
    [
      'maxAge is used for maxAgeSeconds',
      { origins: ['https://a.example.com'], maxAge: 60 },
      /unknown option "maxAge" \(did you mean "maxAgeSeconds"\?\)/,
    ],
    [
      'maxAgeSeconds is negative',
      { origins: ['https://a.example.com'], maxAgeSeconds: -1 },
      /maxAgeSeconds must be from 0 to 86400, got -1/,
    ],
    ['maxAgeSeconds is fractional', { origins: ['https://a.example.com'], maxAgeSeconds: 1.5 }, /maxAgeSeconds must be a whole number/],
    ['methods has "*"', { origins: ['https://a.example.com'], methods: ['*'] }, /methods must list names explicitly/],
    [
      'allowedHeaders has a bad name',
      { origins: ['https://a.example.com'], allowedHeaders: ['X Bad'] },
      /allowedHeaders must contain header or method names, got "X Bad"/,
    ],
    [
      'exposedHeaders is a string',
      { origins: ['https://a.example.com'], exposedHeaders: 'X-Total-Count' },
      /exposedHeaders must be an array/,
    ],
    ['credentials is a string', { origins: ['https://a.example.com'], credentials: 'true' }, /credentials must be true or false/],
  ])('throws a TypeError when %s', (_name, given, message) => {
    expect(() => corsPreflight(given as CorsPreflightOptions)).toThrow(TypeError);
    expect(() => corsPreflight(given as CorsPreflightOptions)).toThrow(message);
  });

  it('detects app.use(corsPreflight) written for app.use(corsPreflight({...}))', async () => {
    const { url, logs } = await serve(corsPreflight as unknown as RequestHandler);
    expectProblem(await request(url).get('/api/notes'), 500);
    expect(logs[0]?.message).toMatch('corsPreflight: it is a factory: write app.use(corsPreflight({ ... })), not app.use(corsPreflight)');
  });

  it('does not mutate the caller options and returns a named middleware', () => {
    const frozen = Object.freeze({
      ...options,
      origins: Object.freeze([...(options.origins as string[])]),
      methods: Object.freeze(['get', 'PUT']),
    });
    const middleware = corsPreflight(frozen);
    expect(middleware.name).toBe('corsPreflightMiddleware');
    expect(frozen.methods).toEqual(['get', 'PUT']);
  });
});

describe('corsPreflight: the cors debug channel says why a request was refused', () => {
  it.each<[string, (url: string) => request.Test, RegExp]>([
    [
      'an origin',
      (url) => preflight(url, 'https://evil.test', 'PUT'),
      /refused preflight for \/api\/notes: origin "https:\/\/evil\.test" is not allowed/,
    ],
    [
      'a method',
      (url) => preflight(url, 'https://shop.example.test', 'PATCH'),
      /from https:\/\/shop\.example\.test: method "PATCH" is not allowed/,
    ],
    ['a header', (url) => preflight(url, 'https://shop.example.test', 'PUT', 'X-Secret-Header'), /header "x-secret-header" is not allowed/],
    [
      'an actual request’s origin',
      (url) => request(url).get('/api/notes').set('Origin', 'https://evil.test'),
      /GET \/api\/notes from origin "https:\/\/evil\.test": not allowed, no CORS headers/,
    ],
  ])('refusing %s', async (_what, send, line) => {
    const { url } = await serve(corsPreflight(options));
    const logs = captureLogs({ debug: 'express-sso-kit:cors' });
    try {
      await send(url);
    } finally {
      logs.stop();
    }
    expect(logs.debugLines('cors')).toEqual([expect.stringMatching(line)]);
  });
});
