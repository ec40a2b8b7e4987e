import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import request from 'supertest';
import {
  accountAdmin,
  accountAdminRoutes,
  AccountTokens,
  redisUserDirectory,
  type AccountAdmin,
  type WritableUserDirectory,
} from '../../lib/accounts';
import { errorHandler } from '../../lib/http';
import { mailer, type Mailer } from '../../lib/mail';
import { createPolicy } from '../../lib/rbac';
import { establishLogin, requireSession, ssoSession, type SsoSessionMiddleware } from '../../lib/session';
import { RedisStore } from '../../lib/store';
import { until } from '../helpers/cached-session-apps';
import { recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { startMailCatcher, type MailCatcher } from '../helpers/mail-catcher';
import { deleteByPrefix, testPrefix, testRedisClient } from '../helpers/redis';

const SECRET = 'account-admin-test-secret-0123456789-abcdef';
const ADMIN_ORIGIN = 'https://admin.example.test';
const COOKIE = '__Secure-sso.sid';
const policy = createPolicy({ roles: { admin: { permissions: ['manage:accounts'] } } });

interface Instance {
  url: string;
  sso: SsoSessionMiddleware;
  store: RedisStore;
  close(): Promise<void>;
}

/**
 * One app instance ("one process"): its own Redis connection and session cache, the admin routes, a test login
 * that signs a directory account in at a chosen level, and `GET /me`.
 */
async function startInstance(prefix: string, build: (store: RedisStore, sso: SsoSessionMiddleware) => AccountAdmin): Promise<Instance> {
  const store = new RedisStore(testRedisClient(), { prefix });
  const sso = ssoSession({
    store,
    cookieDomain: 'example.test',
    secret: SECRET,
    loginUrl: 'https://auth.example.test/login',
    cache: { maxAgeSeconds: 600 },
  });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(sso);
  app.post('/test/login/:id', express.json(), async (req, res, next) => {
    try {
      const body = req.body as { roles?: string[]; acr?: string; ageSeconds?: number };
      await establishLogin(req, {
        source: 'directory:local',
        subject: String(req.params.id),
        name: String(req.params.id),
        roles: body.roles ?? [],
        method: 'password',
        authentication: {
          amr: body.acr === '2fa' ? ['pwd', 'otp'] : ['pwd'],
          authTime: Math.floor(Date.now() / 1000) - (body.ageSeconds ?? 0),
        },
      });
      res.status(204).end();
    } catch (error) {
      next(error);
    }
  });
  app.get('/me', requireSession(), (req, res) => {
    res.json({ id: req.user!.id });
  });
  app.use('/admin', accountAdminRoutes(build(store, sso), { policy }));
  app.use(errorHandler({ log: false }));
  const server = await new Promise<Server>((resolve) => {
    const created = app.listen(0, '127.0.0.1', () => resolve(created));
  });
  await until(() => sso.cache!.ready, 10_000, 'the session cache tracking');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sso,
    store,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await sso.manager.close();
      await store.close();
    },
  };
}

function cookieOf(res: request.Response): string {
  const line = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((value) => value.startsWith(`${COOKIE}=`));
  if (!line) throw new Error(`no session cookie (${res.status})`);
  return line.split(';')[0]!;
}

/** A request as a browser on the admin site sends it: https behind the proxy, its own Origin. */
function onAdmin(test: request.Test, cookie?: string, origin = ADMIN_ORIGIN): request.Test {
  test.set('Host', 'admin.example.test').set('X-Forwarded-Proto', 'https').set('Origin', origin);
  return cookie ? test.set('Cookie', cookie) : test;
}

describe('accountAdmin across two instances sharing Redis, each with the session cache on', () => {
  let prefix: string;
  let one: Instance;
  let two: Instance;
  let users: WritableUserDirectory;
  let catcher: MailCatcher;
  let mail: Mailer;
  let recorder: EventRecorder;
  let resets: AccountTokens;

  beforeAll(async () => {
    catcher = await startMailCatcher();
    mail = mailer({ smtp: { host: catcher.host, port: catcher.port }, from: 'no-reply@example.test', siteName: 'Example' });
  });
  afterAll(async () => {
    mail.close();
    await catcher.close();
  });

  beforeEach(async () => {
    prefix = testPrefix('account-admin');
    recorder = recordEvents({ app: 'admin' });
    const build = (store: RedisStore, sso: SsoSessionMiddleware) => {
      users = redisUserDirectory(store);
      resets = new AccountTokens({ store, users, purpose: 'password-reset' });
      // The real thing an app wires: a single-use token, mailed to the account's own address.
      const sendResetLink = async (userId: string) => {
        const account = await users.findById(userId);
        const issued = await resets.issue(userId);
        if (!account?.email || !issued) return;
        await mail.send('passwordReset', account.email, {
          name: account.name,
          link: `https://auth.example.test/reset?token=${issued.token}`,
          expiresInMinutes: 15,
        });
      };
      return accountAdmin({ users, sessions: sso, store, sendResetLink, events: recorder.events });
    };
    one = await startInstance(prefix, build);
    two = await startInstance(prefix, build);
    await users.createUser({ id: 'root', username: 'root', name: 'Root', roles: ['admin'] });
    await users.createUser({ id: 'alice', username: 'alice', name: 'Alice', email: 'alice@example.test' });
  });
  afterEach(async () => {
    await one.close();
    await two.close();
    await recorder.events.close();
    const client = testRedisClient();
    await deleteByPrefix(client, prefix); // one key at a time: a Cluster refuses a DEL across hash slots
    client.disconnect();
  });

  async function login(instance: Instance, id: string, body: Record<string, unknown> = {}): Promise<string> {
    return cookieOf(await onAdmin(request(instance.url).post(`/test/login/${id}`)).send(body));
  }

  /** GET /me on both instances twice, so each instance's cache holds the session. */
  async function cachedOnBoth(cookie: string): Promise<void> {
    for (const instance of [one, two, one, two])
      expect((await request(instance.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', cookie)).status).toBe(200);
    expect(one.sso.cache!.size).toBeGreaterThan(0);
    expect(two.sso.cache!.size).toBeGreaterThan(0);
  }

  async function rootCookie(): Promise<string> {
    return login(one, 'root', { roles: ['admin'], acr: '2fa' });
  }

  it('disabling ends every session of the user at once: each instance answers 401 at the next request, cached or not', async () => {
    const tabs = [await login(one, 'alice'), await login(two, 'alice')];
    for (const tab of tabs) await cachedOnBoth(tab);
    const done = await onAdmin(request(two.url).post('/admin/accounts/alice/disable'), await rootCookie())
      .type('form')
      .send({});
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe('/admin/accounts?done=disable');
    for (const tab of tabs) {
      for (const instance of [one, two])
        expect((await request(instance.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', tab)).status).toBe(401);
    }
    expect((await users.findById('alice'))?.disabled).toBe(true);
    expect(recorder.recorded.find((event) => event.type === 'account.disabled')).toMatchObject({
      reason: 'admin',
      userId: 'directory:local|alice',
      actorId: 'directory:local|root',
    });
    expect(recorder.recorded.find((event) => event.type === 'session.ended')).toMatchObject({ reason: 'account_disabled', count: 2 });
  });

  it('removing ends every session too, and the account is gone', async () => {
    const tab = await login(one, 'alice');
    await cachedOnBoth(tab);
    expect((await onAdmin(request(one.url).post('/admin/accounts/alice/remove'), await rootCookie()).send()).status).toBe(303);
    expect((await request(two.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', tab)).status).toBe(401);
    expect((await request(one.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', tab)).status).toBe(401);
    expect(await users.findById('alice')).toBeNull();
    expect(recorder.recorded.map((event) => event.type)).toContain('account.removed');
  });

  it('enables a disabled account again', async () => {
    const root = await rootCookie();
    await onAdmin(request(one.url).post('/admin/accounts/alice/disable'), root).send();
    expect((await onAdmin(request(one.url).post('/admin/accounts/alice/enable'), root).send()).status).toBe(303);
    expect((await users.findById('alice'))?.disabled).toBe(false);
    expect(recorder.recorded.map((event) => event.type)).toContain('account.enabled');
  });

  it('sends a reset link to the account owner: the administrator sees no password and no link', async () => {
    const res = await onAdmin(request(one.url).post('/admin/accounts/alice/reset-link'), await rootCookie()).send();
    expect(res.status).toBe(303);
    const page = await onAdmin(request(one.url).get(res.headers.location as string), await rootCookie());
    expect(page.text).toContain('A password reset link was sent');
    expect(page.text).not.toMatch(/token=/);
    const message = await catcher.nextMessage();
    expect(message.envelopeTo).toEqual(['alice@example.test']);
    const token = /token=([A-Za-z0-9_.-]+)/.exec(message.text ?? '')![1]!;
    const redeemed = await resets.redeem(token);
    expect(redeemed).toMatchObject({ ok: true, account: { id: 'alice' } });
    expect(recorder.recorded.find((event) => event.type === 'password.reset_requested')).toMatchObject({ reason: 'admin' });
  });

  it('ends all sessions of one user, and all sessions of everyone', async () => {
    const alice = await login(one, 'alice');
    const bob = await login(two, 'bob');
    await cachedOnBoth(alice);
    await cachedOnBoth(bob);
    const root = await rootCookie();
    expect((await onAdmin(request(one.url).post('/admin/accounts/alice/end-sessions'), root).send()).status).toBe(303);
    expect((await request(two.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', alice)).status).toBe(401);
    expect((await request(two.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', bob)).status).toBe(200);
    expect((await onAdmin(request(one.url).post('/admin/sessions/end-all'), root).send()).status).toBe(303);
    for (const instance of [one, two]) {
      expect((await request(instance.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', bob)).status).toBe(401);
      expect((await request(instance.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', root)).status).toBe(401);
    }
  });

  it('needs the permission and a recent second factor for every admin request', async () => {
    const plain = await login(one, 'alice', { acr: '2fa' });
    expect((await onAdmin(request(one.url).post('/admin/accounts/root/disable'), plain).send()).status).toBe(403);
    const onePassword = await login(one, 'root', { roles: ['admin'] });
    const weak = await onAdmin(request(one.url).post('/admin/accounts/alice/disable'), onePassword)
      .set('Accept', 'application/json')
      .send();
    expect(weak.status).toBe(401);
    expect(weak.body.code).toBe('insufficient_user_authentication');
    const stale = await login(one, 'root', { roles: ['admin'], acr: '2fa', ageSeconds: 3600 });
    expect(
      (await onAdmin(request(one.url).post('/admin/accounts/alice/disable'), stale).set('Accept', 'application/json').send()).status,
    ).toBe(401);
    expect((await onAdmin(request(one.url).post('/admin/accounts/alice/disable')).send()).status).toBe(401);
    expect((await users.findById('alice'))?.disabled).toBe(false);
  });

  it.each([
    ['disable', '/admin/accounts/alice/disable'],
    ['enable', '/admin/accounts/alice/enable'],
    ['remove', '/admin/accounts/alice/remove'],
    ['reset link', '/admin/accounts/alice/reset-link'],
    ['end sessions', '/admin/accounts/alice/end-sessions'],
    ['end every session', '/admin/sessions/end-all'],
  ])('refuses a cross-origin POST to %s (CSRF) and changes nothing', async (_label, path) => {
    const tab = await login(two, 'alice');
    const res = await onAdmin(request(one.url).post(path), await rootCookie(), 'https://evil.test').send();
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('csrf_origin');
    expect(await users.findById('alice')).toMatchObject({ disabled: false });
    expect((await request(two.url).get('/me').set('X-Forwarded-Proto', 'https').set('Cookie', tab)).status).toBe(200);
  });

  it('answers bad input with 4xx problems, never 5xx, and refuses disabling one’s own account', async () => {
    const root = await rootCookie();
    const json = (test: request.Test) => test.set('Accept', 'application/json');
    expect((await json(onAdmin(request(one.url).post('/admin/accounts/nobody/disable'), root)).send()).status).toBe(404);
    expect((await json(onAdmin(request(one.url).post('/admin/accounts/alice/explode'), root)).send()).status).toBe(404);
    expect((await json(onAdmin(request(one.url).post(`/admin/accounts/${'x'.repeat(200)}/disable`), root)).send()).status).toBe(400);
    expect((await json(onAdmin(request(one.url).post('/admin/accounts/root/disable'), root)).send()).status).toBe(409);
    expect((await json(onAdmin(request(one.url).post('/admin/accounts/root/reset-link'), root)).send()).body.code).toBe('no_email');
    const html = await onAdmin(request(one.url).post('/admin/accounts/nobody/remove'), root).set('Accept', 'text/html').send();
    expect(html.status).toBe(404);
  });

  it('lists accounts on a page with a search, never a password hash', async () => {
    const page = await onAdmin(request(one.url).get('/admin/accounts?q=ali'), await rootCookie()).set('Accept', 'text/html');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Alice (alice)');
    expect(page.text).not.toContain('Root (root)');
    const listed = await onAdmin(request(one.url).get('/admin/accounts'), await rootCookie()).set('Accept', 'application/json');
    expect(listed.body.accounts.map((account: { id: string }) => account.id).sort()).toEqual(['alice', 'root']);
    expect(JSON.stringify(listed.body)).not.toContain('scrypt');
  });
});
