import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { basicCredentials, requireBasic, type RequireBasicOptions } from '../../lib/basic';
import { errorHandler, type ErrorLogEntry } from '../../lib/http';
import { hashPassword } from '../../lib/portal/password-hash';
import { createPolicy, requirePermission } from '../../lib/rbac';
import { createRedisConnection, RedisStore } from '../../lib/store';
import { expectProblem, problemWithoutRequestId } from '../helpers/problem';
import { startPrivateRedis, testPrefix } from '../helpers/redis';
import type {} from '../../lib';

const CHALLENGE = 'Basic realm="Operations", charset="UTF-8"';
const running: Server[] = [];
afterAll(() => Promise.all(running.map((server) => new Promise((resolve) => server.close(resolve)))));

async function serve(
  build: (app: express.Express) => void,
  trustProxy: boolean | string = 'loopback',
): Promise<{ url: string; logs: ErrorLogEntry[] }> {
  const app = express();
  app.set('trust proxy', trustProxy);
  const logs: ErrorLogEntry[] = [];
  build(app);
  app.get(/.*/, (req, res) => {
    res.json(req.user ?? null);
  });
  app.use(errorHandler({ log: (entry) => logs.push(entry) }));
  const server = createServer(app);
  running.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, logs };
}

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

let verify: ReturnType<typeof basicCredentials>;
let url: string;

beforeAll(async () => {
  verify = basicCredentials({
    ops: { passwordHash: await hashPassword('ops-password', { N: 1024 }), name: 'Ops robot', roles: ['editor'] },
    jürgen: 'pässwörd',
  });
  const policy = createPolicy({ roles: { editor: { permissions: ['write:reports:*'] } } });
  ({ url } = await serve((app) => {
    app.use('/ops', requireBasic({ realm: 'Operations', verify }));
    app.put(
      '/ops/reports/:id',
      requirePermission('write', (req) => `reports:${String(req.params.id)}`, { policy }),
      (_req, res) => {
        res.status(204).end();
      },
    );
  }));
});

/** A request as it arrives from a TLS-terminating proxy on loopback. */
const viaHttps = (path: string) => request(url).get(path).set('X-Forwarded-Proto', 'https');

describe('requireBasic: credentials', () => {
  it('sets req.user with method basic for good credentials', async () => {
    const res = await viaHttps('/ops/status').set('Authorization', basic('ops', 'ops-password')).expect(200);
    expect(res.body).toEqual({
      id: 'basic:credentials|ops',
      source: 'basic:credentials',
      subject: 'ops',
      name: 'Ops robot',
      roles: ['editor'],
      method: 'basic',
      authenticatedAt: expect.any(Number),
    });
  });

  it('accepts UTF-8 user-ids and passwords', async () => {
    const res = await viaHttps('/ops/status').set('Authorization', basic('jürgen', 'pässwörd')).expect(200);
    expect(res.body).toMatchObject({ id: 'basic:credentials|jürgen', subject: 'jürgen' });
  });

  it('names its users by the source option, so they never share an id with another source', async () => {
    const { url: robots } = await serve((app) => {
      app.use(requireBasic({ verify, source: 'basic:ops-robots' }));
    });
    const res = await request(robots)
      .get('/')
      .set('X-Forwarded-Proto', 'https')
      .set('Authorization', basic('ops', 'ops-password'))
      .expect(200);
    expect(res.body).toMatchObject({ id: 'basic:ops-robots|ops', source: 'basic:ops-robots', subject: 'ops' });
  });

  it('feeds requirePermission with the roles of the Basic user', async () => {
    await request(url)
      .put('/ops/reports/1')
      .set('X-Forwarded-Proto', 'https')
      .set('Authorization', basic('ops', 'ops-password'))
      .expect(204);
    const res = await request(url)
      .put('/ops/reports/1')
      .set('X-Forwarded-Proto', 'https')
      .set('Authorization', basic('jürgen', 'pässwörd'));
    expectProblem(res, 403, 'permission_denied');
  });

  it('answers 401 with the realm challenge when credentials are missing', async () => {
    const res = await viaHttps('/ops/status');
    expectProblem(res, 401, 'credentials_required');
    expect(res.headers['www-authenticate']).toBe(CHALLENGE);
  });

  it('answers 401 with the Basic challenge for another scheme', async () => {
    const res = await viaHttps('/ops/status').set('Authorization', 'Bearer abc');
    expectProblem(res, 401, 'credentials_required');
    expect(res.headers['www-authenticate']).toBe(CHALLENGE);
  });

  it('answers a wrong password and an unknown user identically, with 401 and the challenge', async () => {
    const wrong = await viaHttps('/ops/status').set('Authorization', basic('ops', 'nope'));
    const unknown = await viaHttps('/ops/status').set('Authorization', basic('mallory', 'nope'));
    expectProblem(wrong, 401, 'invalid_credentials');
    expect(wrong.headers['www-authenticate']).toBe(CHALLENGE);
    expect(unknown.status).toBe(401);
    expect(problemWithoutRequestId(unknown.body)).toEqual(problemWithoutRequestId(wrong.body));
    expect(unknown.headers['www-authenticate']).toBe(wrong.headers['www-authenticate']);
  });

  it.each([
    ['malformed base64', 'Basic b3BzOm9wcy1wYXNzd29yZA=!'],
    ['a missing colon', `Basic ${Buffer.from('ops').toString('base64')}`],
    ['non-UTF-8 bytes', `Basic ${Buffer.from([0x6f, 0x3a, 0xc3, 0x28]).toString('base64')}`],
    ['non-canonical base64', 'Basic YWxpY2U6eB=='],
  ])('answers 400 invalid_basic_credentials for %s', async (_name, header) => {
    const res = await viaHttps('/ops/status').set('Authorization', header);
    expectProblem(res, 400, 'invalid_basic_credentials');
    expect(res.headers['www-authenticate']).toBeUndefined();
  });
});

describe('requireBasic: HTTPS only', () => {
  it('refuses plain HTTP with 403 https_required and no challenge, even with good credentials', async () => {
    const res = await request(url).get('/ops/status').set('Authorization', basic('ops', 'ops-password'));
    expectProblem(res, 403, 'https_required');
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(JSON.stringify(res.body)).not.toContain('ops');
  });

  it('accepts credentials over a real TLS connection without any proxy header', async () => {
    // A throwaway self-signed certificate for 127.0.0.1, made with the openssl CLI.
    const dir = mkdtempSync(join(tmpdir(), 'basic-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
      const cert = readFileSync(join(dir, 'cert.pem'));
      const app = express();
      app.use(requireBasic({ realm: 'Operations', verify }));
      app.get('/', (req, res) => {
        res.json(req.user);
      });
      app.use(errorHandler({ log: false }));
      const server = createTlsServer({ key: readFileSync(join(dir, 'key.pem')), cert }, app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const tlsUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const res = await request(tlsUrl).get('/').ca(cert).set('Authorization', basic('ops', 'ops-password')).expect(200);
        expect(res.body).toMatchObject({ id: 'basic:credentials|ops', method: 'basic' });
        const challenged = await request(tlsUrl).get('/').ca(cert);
        expectProblem(challenged, 401, 'credentials_required');
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ignores X-Forwarded-Proto unless the proxy is trusted', async () => {
    const untrusted = await serve((app) => {
      app.use(requireBasic({ realm: 'Operations', verify }));
    }, false);
    const res = await request(untrusted.url).get('/').set('X-Forwarded-Proto', 'https').set('Authorization', basic('ops', 'ops-password'));
    expectProblem(res, 403, 'https_required');
  });

  it('accepts plain HTTP with allowInsecureLocalDevelopment, after a warning', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const insecure = await serve((app) => {
      app.use(requireBasic({ realm: 'Dev', verify, allowInsecureLocalDevelopment: true }));
    }, false);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/allowInsecureLocalDevelopment is on/));
    expect(warn.mock.calls.flat().join(' ')).not.toMatch(/pässwörd|ops-password/);
    warn.mockRestore();
    await request(insecure.url).get('/').set('Authorization', basic('ops', 'ops-password')).expect(200);
  });
});

describe('requireBasic: verifier failures', () => {
  it('answers 503 with Retry-After when the credential store is down, never 401', async () => {
    const redis = await startPrivateRedis();
    const client = createRedisConnection(redis.url);
    const store = new RedisStore(client, { prefix: testPrefix('basic-outage') });
    try {
      await store.set('user:ops', 'ops-password');
      const { url: storeUrl } = await serve((app) => {
        app.use(
          requireBasic({
            realm: 'Operations',
            verify: async (username, password) => {
              const expected = await store.get(`user:${username}`);
              return expected !== null && expected === password ? { id: username } : null;
            },
          }),
        );
      });
      const ask = () => request(storeUrl).get('/').set('X-Forwarded-Proto', 'https').set('Authorization', basic('ops', 'ops-password'));
      await ask().expect(200);
      await redis.stop();
      const res = await ask();
      expectProblem(res, 503, 'store_unavailable');
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      await redis.start();
      await store.ping().catch(() => undefined);
      await client.quit().catch(() => undefined);
      client.disconnect();
      await redis.stop();
    }
  });

  it('fails with 500 when verify resolves to something that is not a user', async () => {
    const { url: badUrl, logs } = await serve((app) => {
      app.use(requireBasic({ verify: () => ({ name: 'no id' }) as never }));
    });
    expectProblem(await request(badUrl).get('/').set('X-Forwarded-Proto', 'https').set('Authorization', basic('a', 'b')), 500);
    expect(logs[0]?.message).toMatch(/verify must resolve to null or a user/);
  });
});

describe('requireBasic: options', () => {
  const ok = () => null;
  it.each<[string, unknown, RegExp]>([
    ['verify is missing', {}, /verify is required/],
    ['the realm has a quote', { verify: ok, realm: 'a"b' }, /realm must be printable ASCII without quotes/],
    ['the realm has a line break', { verify: ok, realm: 'a\r\nX-Injected: 1' }, /realm must be printable ASCII/],
    ['the realm has a backslash', { verify: ok, realm: 'a\\b' }, /realm must be printable ASCII/],
    ['the realm is empty', { verify: ok, realm: '' }, /realm must be printable ASCII/],
    ['the realm is not ASCII', { verify: ok, realm: 'Zürich' }, /realm must be printable ASCII/],
    ['an option is unknown', { verify: ok, relm: 'x' }, /unknown option "relm"/],
    [
      'allowInsecureLocalDevelopment is not a boolean',
      { verify: ok, allowInsecureLocalDevelopment: 'yes' },
      /allowInsecureLocalDevelopment must be true or false/,
    ],
    [
      'the renamed allowInsecureHttp is given',
      { verify: ok, allowInsecureHttp: true },
      /"allowInsecureHttp" was renamed to allowInsecureLocalDevelopment/,
    ],
    ['an option is misspelled', { verify: ok, allowedOrigin: [] }, /unknown option "allowedOrigin" \(did you mean "allowedOrigins"\?\)/],
    ['allowedOrigins holds a pattern', { verify: ok, allowedOrigins: ['https://*.example.test'] }, /allowedOrigins must list full origins/],
    ['allowedOrigins holds an http origin', { verify: ok, allowedOrigins: ['http://admin.example.test'] }, /allowedOrigins must use https/],
    ['the source has no kind', { verify: ok, source: 'robots' }, /source must be "<kind>:<name>"/],
    ['the source has a "|"', { verify: ok, source: 'basic:a|b' }, /source must be .* without spaces or "\|"/],
  ])('throws a TypeError when %s', (_name, given, message) => {
    expect(() => requireBasic(given as RequireBasicOptions)).toThrow(TypeError);
    expect(() => requireBasic(given as RequireBasicOptions)).toThrow(message);
  });

  it('uses the default realm "Restricted"', async () => {
    const { url: plain } = await serve((app) => {
      app.use(requireBasic({ verify: ok }));
    });
    const res = await request(plain).get('/').set('X-Forwarded-Proto', 'https');
    expect(res.headers['www-authenticate']).toBe('Basic realm="Restricted", charset="UTF-8"');
  });

  it('detects app.use(requireBasic) written for app.use(requireBasic({...}))', async () => {
    const { url: misused, logs } = await serve((app) => {
      app.use(requireBasic as unknown as RequestHandler);
    });
    expectProblem(await request(misused).get('/'), 500);
    expect(logs[0]?.message).toMatch(/requireBasic: it is a factory: write app\.use\(requireBasic\(\{ \.\.\. \}\)\)/);
  });

  it('returns a named middleware', () => {
    expect(requireBasic({ verify: ok }).name).toBe('requireBasicMiddleware');
  });
});

describe('requireBasic: browser-sent credentials from other pages', () => {
  let opsUrl: string;
  beforeAll(async () => {
    ({ url: opsUrl } = await serve((app) => {
      app.use('/listed', requireBasic({ realm: 'Operations', verify, allowedOrigins: ['https://admin.example.test'] }));
      app.use('/deploys', requireBasic({ realm: 'Operations', verify }));
      app.post(/.*/, (req, res) => {
        res.status(201).json(req.user);
      });
    }));
  });
  const post = (path = '/deploys') =>
    request(opsUrl)
      .post(path)
      .set('Host', 'ops.example.test')
      .set('X-Forwarded-Proto', 'https')
      .set('Authorization', basic('ops', 'ops-password'));

  it('refuses a POST a browser sent from another origin, before reading the credentials', async () => {
    expectProblem(await post().set('Origin', 'https://evil.example.test').set('Sec-Fetch-Site', 'same-site'), 403, 'csrf_origin');
    expectProblem(await post().set('Authorization', 'Basic !!!').set('Origin', 'https://evil.test'), 403, 'csrf_origin');
  });

  it('accepts a POST from its own origin, or from an origin listed in allowedOrigins', async () => {
    expect((await post().set('Origin', 'https://ops.example.test').set('Sec-Fetch-Site', 'same-origin')).status).toBe(201);
    expect((await post('/listed/deploys').set('Origin', 'https://admin.example.test').set('Sec-Fetch-Site', 'same-site')).status).toBe(201);
    expectProblem(await post().set('Origin', 'https://admin.example.test').set('Sec-Fetch-Site', 'same-site'), 403, 'csrf_origin');
  });

  it('treats a request without Origin, Referer or Sec-Fetch-* as a non-browser client (curl) and lets it pass', async () => {
    expect((await post()).status).toBe(201);
  });

  it('refuses a browser request (Sec-Fetch-*) that names no origin', async () => {
    expectProblem(await post().set('Sec-Fetch-Mode', 'navigate').set('Sec-Fetch-Site', 'same-site'), 403, 'csrf_origin');
  });

  it('lets a cross-site GET (a link to the tool) pass: safe methods change nothing', async () => {
    const res = await request(opsUrl)
      .get('/deploys/status')
      .set('X-Forwarded-Proto', 'https')
      .set('Sec-Fetch-Site', 'cross-site')
      .set('Referer', 'https://chat.example.net/')
      .set('Authorization', basic('ops', 'ops-password'));
    expect(res.status).toBe(200);
  });
});
