import { connect } from 'node:net';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Test } from 'supertest';
import request from 'supertest';
import { errorHandler, establishLogin, ssoSession } from '../../lib';
import { startKitWirings, HOSTS, PASSWORD, type KitWirings } from '../helpers/csrf-wirings';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';
import { TEST_SECRET } from '../helpers/sso-apps';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const express4 = require('express4') as typeof express;

/**
 * Cross-site request forgery against every state-changing endpoint the kit mounts on the shared session cookie.
 * Each attack is a request a victim's browser sends with the victim's cookie because a page of the attacker made
 * it: from another site, from a sibling subdomain (same-site, so SameSite=Lax still attaches the cookie), with the
 * Origin stripped, from an opaque origin, or with only a foreign Referer.
 */
const ATTACKS: ReadonlyArray<[string, (test: Test) => Test]> = [
  ['from another site', (test) => test.set('Sec-Fetch-Site', 'cross-site').set('Origin', 'https://evil.test')],
  ['from a sibling subdomain', (test) => test.set('Sec-Fetch-Site', 'same-site').set('Origin', 'https://evil.example.test')],
  ['without Origin or Referer', (test) => test],
  ['from an opaque origin (Origin: null)', (test) => test.set('Origin', 'null')],
  ['with only a foreign Referer', (test) => test.set('Referer', 'https://evil.example.test/attack.html')],
];
const fromSite = (site: keyof typeof HOSTS) => (test: Test) =>
  test.set('Origin', `https://${HOSTS[site]}`).set('Sec-Fetch-Site', 'same-origin');

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let kit: KitWirings;

beforeAll(async () => {
  redis = await testRedisStore('csrf-attacks');
  kit = await startKitWirings(redis.store);
});
afterAll(async () => {
  await kit.close();
  await redis.cleanup();
});

async function isSignedIn(cookie: string): Promise<boolean> {
  const res = await kit.site('shop').get('/account/sessions').set('Cookie', cookie).set('Accept', 'application/json');
  return res.status === 200;
}

/** The public handle of the session behind `other`, as `cookie`'s owner sees it in the list. */
async function handleOf(cookie: string, other: string): Promise<string> {
  const mine = (await kit.site('shop').get('/account/sessions').set('Cookie', cookie).set('Accept', 'application/json')).body as Array<{
    id: string;
    current: boolean;
  }>;
  const theirs = (await kit.site('shop').get('/account/sessions').set('Cookie', other).set('Accept', 'application/json')).body as Array<{
    id: string;
    current: boolean;
  }>;
  const handle = theirs.find((entry) => entry.current)?.id;
  if (!handle || !mine.some((entry) => entry.id === handle)) throw new Error('the second session is not listed');
  return handle;
}

async function qrStatus(cookie: string, authCode: string): Promise<string> {
  return (await kit.site('idp').get(`/sns/qr-logins/${authCode}`).set('Cookie', cookie)).body.status as string;
}

describe.each(ATTACKS)('CSRF %s', (_attack, attack) => {
  it('cannot make a handler that reads req.user itself act for the victim', async () => {
    const cookie = await kit.login();
    const before = kit.changes.length;
    const res = await attack(kit.site('shop').post('/profile').set('Cookie', cookie).send({ name: 'pwned' }));
    expectProblem(res, 403, 'csrf_origin');
    expect(kit.changes.length).toBe(before);
    expect(await isSignedIn(cookie)).toBe(true);
  });

  it('cannot pass requirePermission mounted after ssoSession', async () => {
    const cookie = await kit.login();
    const before = kit.changes.length;
    expectProblem(await attack(kit.site('shop').put('/reports/7').set('Cookie', cookie).send({})), 403, 'csrf_origin');
    expect(kit.changes.length).toBe(before);
  });

  it("cannot end one of the victim's sessions through sessionsResource (DELETE)", async () => {
    const cookie = await kit.login();
    const other = await kit.login();
    const handle = await handleOf(cookie, other);
    expectProblem(await attack(kit.site('shop').delete(`/account/sessions/${handle}`).set('Cookie', cookie)), 403, 'csrf_origin');
    expect(await isSignedIn(other)).toBe(true);
  });

  it('cannot log the victim out everywhere (logoutEverywhere)', async () => {
    const cookie = await kit.login();
    expectProblem(await attack(kit.site('shop').post('/logout/everywhere').set('Cookie', cookie)), 403, 'csrf_origin');
    expect(await isSignedIn(cookie)).toBe(true);
  });

  it('cannot log the victim out through oidcLogout', async () => {
    const cookie = await kit.login();
    expectProblem(await attack(kit.site('auth').post('/logout/corp').set('Cookie', cookie)), 403, 'csrf_origin');
    expect(await isSignedIn(cookie)).toBe(true);
  });

  it("cannot log the victim out at the portal, nor revoke one of the victim's sessions there", async () => {
    const cookie = await kit.login();
    const other = await kit.login();
    expectProblem(await attack(kit.site('auth').post('/logout').set('Cookie', cookie).type('form').send({})), 403, 'csrf_origin');
    const handle = await handleOf(cookie, other);
    const revoke = kit.site('auth').post('/sessions/revocations').set('Cookie', cookie).type('form').send({ session: handle });
    expectProblem(await attack(revoke), 403, 'csrf_origin');
    expect(await isSignedIn(cookie)).toBe(true);
    expect(await isSignedIn(other)).toBe(true);
  });

  it('cannot confirm or deny a QR login as the victim (confirmation form and REST resource)', async () => {
    const cookie = await kit.login();
    const authCode = await kit.startQrLogin();
    const form = kit.site('idp').post(`/sns/qr-logins/${authCode}/confirmation`).set('Cookie', cookie).type('form');
    expectProblem(await attack(form.send({ status: 'confirmed' })), 403, 'csrf_origin');
    const patch = kit.site('idp').patch(`/sns/qr-logins/${authCode}`).set('Cookie', cookie).type('json');
    expectProblem(await attack(patch.send({ status: 'scanned' })), 403, 'csrf_origin');
    expect(await qrStatus(cookie, authCode)).toBe('pending');
  });

  it('cannot use Basic credentials the browser remembers (requireBasic)', async () => {
    const before = kit.changes.length;
    // A current browser marks every request with Fetch Metadata, whatever the page strips.
    const browser = kit.site('ops').put('/ops/reports/9').auth('deploy', PASSWORD).set('Sec-Fetch-Dest', 'empty').send({});
    expectProblem(await attack(browser), 403, 'csrf_origin');
    expect(kit.changes.length).toBe(before);
  });
});

describe('the same requests from the pages of the site itself pass', () => {
  it('a handler reading req.user, and requirePermission after ssoSession', async () => {
    const cookie = await kit.login();
    expect((await fromSite('shop')(kit.site('shop').post('/profile').set('Cookie', cookie).send({}))).status).toBe(204);
    expect((await fromSite('shop')(kit.site('shop').put('/reports/7').set('Cookie', cookie).send({}))).status).toBe(204);
    expect(kit.changes.slice(-2)).toEqual(['profile:directory:local|alice', 'report:7:directory:local|alice']);
  });

  it('sessionsResource DELETE, then logoutEverywhere', async () => {
    const cookie = await kit.login();
    const other = await kit.login();
    const handle = await handleOf(cookie, other);
    expect((await fromSite('shop')(kit.site('shop').delete(`/account/sessions/${handle}`).set('Cookie', cookie))).status).toBe(204);
    expect(await isSignedIn(other)).toBe(false);
    expect((await fromSite('shop')(kit.site('shop').post('/logout/everywhere').set('Cookie', cookie))).status).toBe(204);
    expect(await isSignedIn(cookie)).toBe(false);
  });

  it('oidcLogout, and the portal logout and revocation', async () => {
    const viaOidc = await kit.login();
    const res = await fromSite('auth')(kit.site('auth').post('/logout/corp').set('Cookie', viaOidc));
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/^https:\/\/corp-idp\.example\.net\/session\/end\?/);
    expect(await isSignedIn(viaOidc)).toBe(false);

    const cookie = await kit.login();
    const other = await kit.login();
    const handle = await handleOf(cookie, other);
    const revoke = kit.site('auth').post('/sessions/revocations').set('Cookie', cookie).type('form').send({ session: handle });
    expect((await fromSite('auth')(revoke)).status).toBe(303);
    expect(await isSignedIn(other)).toBe(false);
    expect((await fromSite('auth')(kit.site('auth').post('/logout').set('Cookie', cookie).type('form').send({}))).status).toBe(303);
    expect(await isSignedIn(cookie)).toBe(false);
  });

  it('QR confirmation form and REST resource', async () => {
    const cookie = await kit.login();
    const authCode = await kit.startQrLogin();
    const patch = kit.site('idp').patch(`/sns/qr-logins/${authCode}`).set('Cookie', cookie).type('json');
    expect((await fromSite('idp')(patch.send({ status: 'scanned' }))).status).toBe(200);
    const form = kit.site('idp').post(`/sns/qr-logins/${authCode}/confirmation`).set('Cookie', cookie).type('form');
    expect((await fromSite('idp')(form.send({ status: 'denied' }))).status).toBe(303);
    expect(await qrStatus(cookie, authCode)).toBe('denied');
  });

  it("requireBasic from the tool's own page, and from curl or a server (no Origin, Referer or Fetch Metadata)", async () => {
    expect((await fromSite('ops')(kit.site('ops').put('/ops/reports/3').auth('deploy', PASSWORD).send({}))).status).toBe(204);
    expect((await kit.site('ops').put('/ops/reports/4').auth('deploy', PASSWORD).send({})).status).toBe(204);
    expect(kit.changes.slice(-2)).toEqual(['report:3:basic:credentials|deploy', 'report:4:basic:credentials|deploy']);
  });
});

describe('same-origin requests on a non-default port', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  /** An app on a real port, reached as `http://shop.sso.localhost:<port>` (plain-http local development). */
  async function start(factory: typeof express): Promise<{ origin: string; url: string }> {
    const app = factory();
    const server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    servers.push(server);
    const port = (server.address() as AddressInfo).port;
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const sessions = ssoSession({
      store: redis.store,
      cookieDomain: 'sso.localhost',
      secret: TEST_SECRET,
      loginUrl: `http://auth.sso.localhost:${port}/login`,
      allowInsecureLocalDevelopment: true,
    });
    warn.mockRestore();
    app.use(sessions);
    app.post('/login', async (req, res, next) => {
      try {
        await establishLogin(req, { source: 'directory:local', subject: 'alice', name: 'Alice', roles: [], method: 'password' });
        res.status(204).end();
      } catch (err) {
        next(err);
      }
    });
    app.post('/orders', (req, res) => {
      res.status(req.user ? 201 : 401).json({ by: req.user?.id ?? null });
    });
    app.use(errorHandler({ log: false }));
    return { origin: `http://shop.sso.localhost:${port}`, url: `http://127.0.0.1:${port}` };
  }

  it.each([
    ['Express 4', express4],
    ['Express 5', express],
  ])('%s: a POST from the page of the same host and port passes; another port of the host does not', async (_name, factory) => {
    const { origin, url } = await start(factory);
    const host = new URL(origin).host;
    const login = await request(url).post('/login').set('Host', host).set('Origin', origin);
    const cookie = ((login.headers['set-cookie'] ?? []) as string[]).find((line) => line.startsWith('sso.sid='))?.split(';')[0];
    expect(cookie).toBeDefined();
    const order = () => request(url).post('/orders').set('Host', host).set('Cookie', cookie!);
    const res = await order().set('Origin', origin).set('Sec-Fetch-Site', 'same-origin');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ by: 'directory:local|alice' });
    expectProblem(await order().set('Origin', 'http://shop.sso.localhost:1'), 403, 'csrf_origin');
    expectProblem(await order().set('Origin', 'http://shop.sso.localhost'), 403, 'csrf_origin');
  });

  it('answers a state-changing HTTP/1.0 request without a Host header with a 4xx, never a 500', async () => {
    const { origin, url } = await start(express);
    const login = await request(url).post('/login').set('Host', new URL(origin).host).set('Origin', origin);
    const cookie = ((login.headers['set-cookie'] ?? []) as string[]).find((line) => line.startsWith('sso.sid='))?.split(';')[0];
    const { port } = new URL(url);
    const statusLine = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(`POST /orders HTTP/1.0\r\nCookie: ${cookie!}\r\nOrigin: ${origin}\r\nContent-Length: 0\r\n\r\n`);
      });
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        // The status line is all this test needs; the server may keep the connection open after it.
        if (received.includes('\r\n')) {
          socket.destroy();
          resolve(received.slice(0, received.indexOf('\r\n')));
        }
      });
      socket.on('error', reject);
      socket.setTimeout(5000, () => {
        socket.destroy();
        reject(new Error('no answer within 5 s'));
      });
    });
    expect(statusLine).toMatch(/^HTTP\/1\.[01] 4\d\d /);
  });
});
