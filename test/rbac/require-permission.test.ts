import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RedisStore as SessionStore } from 'connect-redis';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import session from 'express-session';
import request from 'supertest';
import type { JWTPayload } from 'jose' with { 'resolution-mode': 'import' };
import type { ErrorLogEntry } from '../../lib/http';
import { errorHandler, NotFoundError, UnauthorizedError } from '../../lib/http';
import { createPolicy, requirePermission, type RequirePermissionOptions } from '../../lib/rbac';
import type { SessionUser } from '../../lib/session/types';
import { createRedisConnection, RedisStore, type KeyValueStore } from '../../lib/store';
import { captureLogs } from '../helpers/log-capture';
import { expectProblem } from '../helpers/problem';
import { deleteByPrefix, startPrivateRedis, testPrefix, testRedisClient, testRedisStore, type PrivateRedis } from '../helpers/redis';
import { TEST_SOURCE, userId } from '../helpers/sso-apps';
import type {} from '../../lib';

type Jose = typeof import('jose', { with: { 'resolution-mode': 'import' } });
let jose: Jose;
const secret = new TextEncoder().encode('a-test-signing-secret-of-32-bytes!');

const policy = createPolicy({
  roles: {
    viewer: { permissions: ['read:reports', 'read:reports:*'] },
    editor: { permissions: ['write:reports:*'], inherits: ['viewer'] },
    publicReader: { permissions: ['read:reports:public'] },
    admin: { permissions: ['*:*'] },
  },
});

function mint(claims: JWTPayload): Promise<string> {
  return new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuedAt().setExpirationTime('5m').sign(secret);
}

/** Verifies a Bearer token minted above and sets req.auth, as requireBearer does. */
function testBearer(): RequestHandler {
  return async function testBearerMiddleware(req: Request, _res: Response, next: NextFunction) {
    const match = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    if (!match?.[1]) {
      next(new UnauthorizedError({ code: 'token_required', headers: { 'WWW-Authenticate': 'Bearer' } }));
      return;
    }
    try {
      const { payload, protectedHeader } = await jose.jwtVerify(match[1], secret, { algorithms: ['HS256'] });
      req.auth = { token: match[1], header: protectedHeader as never, payload };
      next();
    } catch {
      next(new UnauthorizedError({ code: 'invalid_token' }));
    }
  };
}

interface Running {
  server: Server;
  url: string;
  logs: ErrorLogEntry[];
}
const running: Server[] = [];

async function serve(build: (app: express.Express) => void): Promise<Running> {
  const app = express();
  const logs: ErrorLogEntry[] = [];
  build(app);
  app.get(/.*/, (_req, res) => {
    res.json({ ok: true });
  });
  app.use(errorHandler({ log: (entry) => logs.push(entry) }));
  const server = createServer(app);
  running.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, logs };
}

const sessionClient = testRedisClient();
let sessionPrefix: string;

/**
 * express-session on real Redis, with a login route that stores the user as ssoSession's login does (`?source=`
 * names another identity source), and, unless `vouch` is false, the session's user set as `req.user`, as
 * ssoSession does for a live session.
 */
function withSession(app: express.Express, { vouch = true } = {}): void {
  app.use(
    session({
      store: new SessionStore({ client: sessionClient, prefix: sessionPrefix }),
      secret: 'session-secret-for-tests',
      resave: false,
      saveUninitialized: false,
      cookie: { httpOnly: true, sameSite: 'lax' },
    }),
  );
  if (vouch) {
    app.use((req, _res, next) => {
      req.user = req.session.user;
      next();
    });
  }
  app.post('/login/:id/:roles', (req, res, next) => {
    req.session.regenerate((error) => {
      if (error) return next(error);
      const source = typeof req.query.source === 'string' ? req.query.source : TEST_SOURCE;
      const user: SessionUser = {
        id: userId(String(req.params.id), source),
        source,
        subject: String(req.params.id),
        name: 'Test',
        roles: String(req.params.roles).split(',').filter(Boolean),
        method: 'password',
        authenticatedAt: Date.now(),
      };
      req.session.user = user;
      res.status(204).end();
    });
  });
}

async function loggedIn(url: string, id: string, roles: string[], source?: string) {
  const agent = request.agent(url);
  await agent
    .post(`/login/${id}/${roles.join(',') || ','}`)
    .query(source === undefined ? {} : { source })
    .expect(204);
  return agent;
}

beforeAll(async () => {
  jose = await import('jose');
  sessionPrefix = testPrefix('rbac-sess');
});

afterAll(async () => {
  await Promise.all(running.map((server) => new Promise((resolve) => server.close(resolve))));
  await deleteByPrefix(sessionClient, sessionPrefix);
  await sessionClient.quit();
});

describe('requirePermission: roles from the session user', () => {
  let app: Running;
  beforeAll(async () => {
    app = await serve((a) => {
      withSession(a);
      a.get(
        '/reports/:id',
        requirePermission('read', (req) => `reports:${String(req.params.id)}`, { policy }),
      );
      a.delete(
        '/reports/:id',
        requirePermission('delete', (req) => `reports:${String(req.params.id)}`, { policy }),
        (_req, res) => {
          res.status(204).end();
        },
      );
    });
  });

  it('lets a viewer read a report', async () => {
    const agent = await loggedIn(app.url, 'u1', ['viewer']);
    await agent.get('/reports/42').expect(200);
  });

  it('refuses with 403 permission_denied, naming the action and resource but not the roles', async () => {
    const agent = await loggedIn(app.url, 'u1', ['viewer']);
    const res = await agent.delete('/reports/42');
    expectProblem(res, 403, 'permission_denied');
    expect(res.body.detail).toContain('delete');
    expect(res.body.detail).toContain('reports:42');
    expect(JSON.stringify(res.body)).not.toContain('viewer');
  });

  it('answers 401 with a challenge when the session has no user', async () => {
    const res = await request(app.url).get('/reports/42');
    expectProblem(res, 401, 'authentication_required');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('reads only req.user: a user in the session that no session middleware vouched for is not logged in', async () => {
    const unvouched = await serve((a) => {
      withSession(a, { vouch: false });
      a.get(
        '/reports/:id',
        requirePermission('read', (req) => `reports:${String(req.params.id)}`, { policy }),
      );
    });
    const agent = await loggedIn(unvouched.url, 'u1', ['admin']);
    expectProblem(await agent.get('/reports/42'), 401, 'authentication_required');
  });

  it('does not read a URL-supplied "*" as a wildcard', async () => {
    const agent = await loggedIn(app.url, 'u2', ['publicReader']);
    await agent.get('/reports/public').expect(200);
    expectProblem(await agent.get('/reports/%2A'), 403, 'permission_denied');
    expectProblem(await agent.get('/reports/other'), 403, 'permission_denied');
  });

  it('grants nothing for roles the policy does not know', async () => {
    const agent = await loggedIn(app.url, 'u3', ['superuser']);
    expectProblem(await agent.get('/reports/42'), 403, 'permission_denied');
  });

  it('says on the rbac debug channel why a request was denied, without the session cookie', async () => {
    const agent = await loggedIn(app.url, 'u4', ['viewer']);
    const anonymous = request(app.url);
    const logs = captureLogs({ debug: 'express-sso-kit:rbac' });
    try {
      await agent.delete('/reports/42');
      await agent.get('/reports/%2A');
      await anonymous.get('/reports/42');
    } finally {
      logs.stop();
    }
    expect(logs.debugLines('rbac')).toEqual([
      expect.stringMatching(/DELETE \/reports\/42: denied delete on reports:42: the session's roles \[viewer\] do not grant it$/),
      expect.stringMatching(
        /GET \/reports\/\[redacted\]: denied read on \(a resource that is not a concrete name\): the session's roles \[viewer\]/,
      ),
      expect.stringMatching(/GET \/reports\/42: no authenticated user or token, 401$/),
    ]);
    expect(logs.containing('connect.sid')).toEqual([]);
  });
});

describe('requirePermission: roles from a verified token', () => {
  let app: Running;
  beforeAll(async () => {
    app = await serve((a) => {
      a.use('/api', testBearer());
      a.put(
        '/api/reports/:id',
        requirePermission('write', (req) => `reports:${String(req.params.id)}`, { policy }),
        (_req, res) => {
          res.json({ written: true });
        },
      );
      a.get('/api/namespaced', requirePermission('read', 'reports', { policy, rolesClaim: 'https://example.test/roles' }));
      a.get('/api/keycloak', requirePermission('read', 'reports', { policy, rolesClaim: ['realm_access', 'roles'] }));
      a.get(
        '/api/scoped/:id',
        requirePermission('read', (req) => `reports:${String(req.params.id)}`, {
          policy,
          scopePermissions: { 'reports.read': ['read:reports:*'] },
        }),
      );
    });
  });

  it('reads roles from the roles claim', async () => {
    await request(app.url)
      .put('/api/reports/1')
      .set('Authorization', `Bearer ${await mint({ sub: 'a', roles: ['editor'] })}`)
      .expect(200);
    const res = await request(app.url)
      .put('/api/reports/1')
      .set('Authorization', `Bearer ${await mint({ sub: 'a', roles: ['viewer'] })}`);
    expectProblem(res, 403, 'permission_denied');
  });

  it('accepts a single string as the roles claim', async () => {
    await request(app.url)
      .put('/api/reports/1')
      .set('Authorization', `Bearer ${await mint({ sub: 'a', roles: 'editor' })}`)
      .expect(200);
  });

  it('reads a namespaced claim name literally, dots and all', async () => {
    await request(app.url)
      .get('/api/namespaced')
      .set('Authorization', `Bearer ${await mint({ 'https://example.test/roles': ['viewer'] })}`)
      .expect(200);
    expectProblem(
      await request(app.url)
        .get('/api/namespaced')
        .set('Authorization', `Bearer ${await mint({ roles: ['viewer'] })}`),
      403,
    );
  });

  it('follows a claim path such as realm_access.roles', async () => {
    await request(app.url)
      .get('/api/keycloak')
      .set('Authorization', `Bearer ${await mint({ realm_access: { roles: ['viewer'] } })}`)
      .expect(200);
    expectProblem(
      await request(app.url)
        .get('/api/keycloak')
        .set('Authorization', `Bearer ${await mint({ realm_access: { roles: [] } })}`),
      403,
    );
  });

  it('grants mapped scopes from "scope" and "scp", and nothing for unmapped ones', async () => {
    await request(app.url)
      .get('/api/scoped/9')
      .set('Authorization', `Bearer ${await mint({ scope: 'openid reports.read' })}`)
      .expect(200);
    await request(app.url)
      .get('/api/scoped/9')
      .set('Authorization', `Bearer ${await mint({ scp: ['reports.read'] })}`)
      .expect(200);
    expectProblem(
      await request(app.url)
        .get('/api/scoped/9')
        .set('Authorization', `Bearer ${await mint({ scope: 'reports.write' })}`),
      403,
    );
    expectProblem(
      await request(app.url)
        .get('/api/scoped/9')
        .set('Authorization', `Bearer ${await mint({ scope: 'reports.readx' })}`),
      403,
    );
  });

  it('never lets a token without roles through', async () => {
    expectProblem(
      await request(app.url)
        .put('/api/reports/1')
        .set('Authorization', `Bearer ${await mint({ sub: 'a' })}`),
      403,
    );
  });
});

describe('requirePermission: a verified token wins over the ambient session cookie', () => {
  it('decides by the token roles when both a session user and a token are present', async () => {
    const app = await serve((a) => {
      withSession(a);
      a.get('/both', testBearer(), requirePermission('write', 'reports:1', { policy }));
    });
    const agent = await loggedIn(app.url, 'boss', ['admin']);
    expectProblem(await agent.get('/both').set('Authorization', `Bearer ${await mint({ roles: ['viewer'] })}`), 403, 'permission_denied');
    await agent
      .get('/both')
      .set('Authorization', `Bearer ${await mint({ roles: ['editor'] })}`)
      .expect(200);
  });
});

describe('requirePermission: loadRoles', () => {
  let store: RedisStore;
  let cleanup: () => Promise<void>;
  let calls = 0;
  let app: Running;

  beforeAll(async () => {
    ({ store, cleanup } = await testRedisStore('rbac-roles'));
    await store.addToSet(`roles:${userId('u10')}`, ['editor']);
    const loadRoles = async (req: Request) => {
      calls += 1;
      return store.members(`roles:${req.user?.id}`);
    };
    app = await serve((a) => {
      withSession(a);
      a.get(
        '/write-twice',
        requirePermission('read', 'reports', { policy, loadRoles }),
        requirePermission('write', 'reports:2', { policy, loadRoles }),
      );
      a.get('/bad-loader', requirePermission('read', 'reports', { policy, loadRoles: () => 'editor' as never }));
      a.get(
        '/failing-loader',
        requirePermission('read', 'reports', {
          policy,
          loadRoles: () => {
            throw new Error('bug in the loader');
          },
        }),
      );
    });
  });
  afterAll(() => cleanup());

  it('uses the loaded roles instead of the session roles, loading once per request', async () => {
    const agent = await loggedIn(app.url, 'u10', ['viewer']);
    calls = 0;
    await agent.get('/write-twice').expect(200);
    expect(calls).toBe(1);
    const other = await loggedIn(app.url, 'u11', ['admin']);
    expectProblem(await other.get('/write-twice'), 403, 'permission_denied');
  });

  it('fails closed with 500 when the loader returns no list or throws a programming error', async () => {
    const agent = await loggedIn(app.url, 'u10', ['admin']);
    expectProblem(await agent.get('/bad-loader'), 500);
    expectProblem(await agent.get('/failing-loader'), 500);
    expect(app.logs.map((entry) => entry.message)).toEqual(
      expect.arrayContaining([expect.stringMatching(/loadRoles must resolve to an array/), 'bug in the loader']),
    );
  });
});

describe('requirePermission: a role store outage', () => {
  let redis: PrivateRedis;
  let store: KeyValueStore;
  let client: ReturnType<typeof testRedisClient>;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    client = createRedisConnection(redis.url);
    store = new RedisStore(client, { prefix: testPrefix('rbac-outage') });
    await store.addToSet(`roles:${userId('u20')}`, ['admin']);
  });
  afterAll(async () => {
    // Bring the server back so the client can finish cleanly instead of leaving a reconnect or command timer behind.
    await redis.start();
    await store.ping().catch(() => undefined);
    await client.quit().catch(() => undefined);
    client.disconnect();
    await store.close();
    await redis.stop();
  });

  it('answers 503 with Retry-After, never "allowed" and never "logged out"', async () => {
    const app = await serve((a) => {
      withSession(a);
      a.get('/admin', requirePermission('delete', 'reports:1', { policy, loadRoles: (req) => store.members(`roles:${req.user?.id}`) }));
    });
    const agent = await loggedIn(app.url, 'u20', []);
    await agent.get('/admin').expect(200);
    await redis.stop();
    const res = await agent.get('/admin');
    expectProblem(res, 503, 'roles_unavailable');
    expect(res.headers['retry-after']).toBeDefined();
  });
});

describe('requirePermission: check (ownership)', () => {
  const owners = new Map([['r1', userId('alice')]]);
  let app: Running;
  let checked: Array<{ action: string; resource: string; source: string }> = [];
  beforeAll(async () => {
    app = await serve((a) => {
      withSession(a);
      a.get(
        '/reports/:id',
        requirePermission('read', (req) => `reports:${String(req.params.id)}`, {
          policy,
          check: async (req, context) => {
            checked.push({ action: context.action, resource: context.resource, source: context.source });
            const owner = owners.get(String(req.params.id));
            if (owner === undefined) throw new NotFoundError({ detail: 'No such report.' });
            return owner === req.user?.id;
          },
        }),
      );
    });
  });

  it('allows the owner', async () => {
    checked = [];
    await (await loggedIn(app.url, 'alice', ['viewer'])).get('/reports/r1').expect(200);
    expect(checked).toEqual([{ action: 'read', resource: 'reports:r1', source: 'session' }]);
  });

  it('refuses someone else with 403 even though the policy allows the action', async () => {
    expectProblem(await (await loggedIn(app.url, 'bob', ['viewer'])).get('/reports/r1'), 403, 'permission_denied');
  });

  it("refuses the owner's subject signed in through another source", async () => {
    const elsewhere = await loggedIn(app.url, 'alice', ['viewer'], 'oidc:https://other.idp.test');
    expectProblem(await elsewhere.get('/reports/r1'), 403, 'permission_denied');
  });

  it('passes on an HttpError thrown by the check', async () => {
    expectProblem(await (await loggedIn(app.url, 'bob', ['viewer'])).get('/reports/missing'), 404, 'not_found');
  });

  it('does not run the check when the policy already refuses', async () => {
    checked = [];
    expectProblem(await (await loggedIn(app.url, 'alice', ['nobody'])).get('/reports/r1'), 403);
    expect(checked).toEqual([]);
  });
});

describe('requirePermission: order guard and misuse', () => {
  it('fails with an error naming the middleware that must come first when nothing authenticated the request', async () => {
    const app = await serve((a) => {
      a.get('/unguarded', requirePermission('read', 'reports', { policy }));
    });
    const res = await request(app.url).get('/unguarded');
    expectProblem(res, 500, 'middleware_order');
    expect(res.body.detail).not.toMatch(/requireSession/);
    expect(app.logs[0]?.message).toMatch(/requireSession\(\).*requireBearer\(\).*before requirePermission/);
  });

  it('treats a request as anonymous (401) when a token middleware ran and left req.auth undefined', async () => {
    const app = await serve((a) => {
      a.get(
        '/optional',
        (req, _res, next) => {
          req.auth = undefined;
          next();
        },
        requirePermission('read', 'reports', { policy }),
      );
    });
    expectProblem(await request(app.url).get('/optional'), 401, 'authentication_required');
  });

  it('detects app.use(requirePermission) written for app.use(requirePermission(...))', async () => {
    const app = await serve((a) => {
      a.use(requirePermission as unknown as RequestHandler);
    });
    expectProblem(await request(app.url).get('/x'), 500);
    expect(app.logs[0]?.message).toMatch(
      "requirePermission: it is a factory: write app.use(requirePermission('read', 'reports', { policy })), not app.use(requirePermission)",
    );
  });
});

describe('requirePermission: options', () => {
  it.each<[string, () => unknown, RegExp]>([
    [
      'policy is missing',
      () => requirePermission('read', 'reports', {} as never),
      /policy is required \(the compiled policy: build it once with createPolicy/,
    ],
    ['options are missing', () => requirePermission('read', 'reports', undefined as never), /pass options with a policy/],
    [
      'an option is unknown',
      () => requirePermission('read', 'reports', { policy, roleClaim: 'x' } as never),
      /unknown option "roleClaim" \(did you mean "rolesClaim"\?\)/,
    ],
    ['the action is a wildcard', () => requirePermission('*', 'reports', { policy }), /action must be a name/],
    ['the resource is a wildcard', () => requirePermission('read', 'reports:*', { policy }), /resource must be a name/],
    ['rolesClaim is empty', () => requirePermission('read', 'reports', { policy, rolesClaim: '' }), /rolesClaim must be/],
    [
      'loadRoles is not a function',
      () => requirePermission('read', 'reports', { policy, loadRoles: [] as never }),
      /loadRoles must be a function/,
    ],
    [
      'a scope maps to a malformed permission',
      () => requirePermission('read', 'reports', { policy, scopePermissions: { s: ['read'] } }),
      /scopePermissions\["s"\].*"read"/,
    ],
    [
      'the challenge has a line break',
      () => requirePermission('read', 'reports', { policy, challenge: 'Bearer\r\nX: y' }),
      /challenge must be/,
    ],
  ])('throws a TypeError when %s', (_name, build, message) => {
    expect(build).toThrow(TypeError);
    expect(build).toThrow(message);
  });

  it('does not mutate the caller options', () => {
    const options: RequirePermissionOptions = Object.freeze({
      policy,
      rolesClaim: Object.freeze(['a', 'b']),
      scopePermissions: Object.freeze({ s: Object.freeze(['read:reports']) }),
    });
    expect(() => requirePermission('read', 'reports', options)).not.toThrow();
  });

  it('returns a named middleware', () => {
    expect(requirePermission('read', 'reports', { policy }).name).toBe('requirePermissionMiddleware');
  });
});
