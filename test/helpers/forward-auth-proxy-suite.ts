import request from 'supertest';
import { freePort } from './redis';
import { FA_DOMAIN, startEchoUpstream, startPortal, type Started } from './forward-auth-stack';

const DOCS = `docs.${FA_DOMAIN}`;

/** Starts the proxy on `proxyPort` in front of the portal and the upstream. */
export type StartProxy = (ports: { proxy: number; portal: number; upstream: number }) => Promise<Started>;

/**
 * The same journeys and attacks through any proxy: its docs config must keep every one of them.
 *
 * @example
 * describeProxy('Caddy forward_auth', (ports) => startCaddy(docsConfig('proxyProcessfile Caddyfile', ports), ports.proxy));
 */
export function describeProxy(name: string, startProxy: StartProxy, { passesProblems = true } = {}): void {
  describe(`forwardAuth behind ${name} (the config of docs/forward-auth.md)`, () => {
    let portal: Awaited<ReturnType<typeof startPortal>>;
    let upstream: Started;
    let proxyProcess: Started;
    let proxy: string;
    let cookie: string;

    beforeAll(async () => {
      const proxyPort = await freePort();
      portal = await startPortal(proxyPort);
      upstream = await startEchoUpstream();
      proxyProcess = await startProxy({ proxy: proxyPort, portal: portal.port, upstream: upstream.port });
      proxy = `http://127.0.0.1:${proxyPort}`;
      const login = await request(proxy)
        .post('/login')
        .set('Host', `auth.${FA_DOMAIN}:${proxyPort}`)
        .set('Origin', `http://auth.${FA_DOMAIN}:${proxyPort}`)
        .type('form')
        .send({ return_to: '' });
      expect(login.status).toBe(303);
      cookie = String(login.headers['set-cookie']).split(';')[0]!;
    }, 60_000);

    afterAll(async () => {
      await proxyProcess?.stop();
      await upstream?.stop();
      await portal?.cleanup();
    });

    const docs = (method: 'get' | 'post' | 'head' | 'options', path: string) =>
      request(proxy)[method](path).set('Host', `${DOCS}:${proxyProcess.port}`);

    it('sends a signed-out browser navigation to the portal login with the original URL as return_to', async () => {
      const res = await docs('get', '/guide?page=2').set('Accept', 'text/html');
      expect(res.status).toBe(302);
      const location = new URL(res.headers.location!);
      expect(location.origin).toBe(`http://auth.${FA_DOMAIN}:${proxyProcess.port}`);
      expect(location.pathname).toBe('/login');
      expect(location.searchParams.get('return_to')).toBe(`http://${DOCS}:${proxyProcess.port}/guide?page=2`);
    });

    it('answers a signed-out API request 401 problem+json, and nothing reaches the upstream', async () => {
      const res = await docs('get', '/guide').set('Accept', 'application/json');
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.body.code).toBe('session_required');
      expect(res.body.headers).toBeUndefined();
    });

    it('lets a signed-in request through with the identity headers, and the upstream never sees client-sent ones', async () => {
      const res = await docs('get', '/guide')
        .set('Cookie', cookie)
        .set('Remote-User', 'mallory')
        .set('Remote_User', 'mallory')
        .set('Remote-Groups', 'admin')
        .set('X-Forwarded-User', 'mallory');
      expect(res.status).toBe(200);
      const headers = (res.body.headers as [string, string][]).map(([name, value]) => [name.toLowerCase(), value]);
      const named = (name: string) => headers.filter(([key]) => key === name || key === name.replace('-', '_')).map(([, value]) => value);
      expect(named('remote-user')).toEqual(['directory:staff|alice']);
      expect(named('remote-name')).toEqual(['Alice Zo%C3%AB']);
      expect(named('remote-groups')).toEqual(['staff']);
      expect(named('x-forwarded-user')).toEqual([]);
    });

    it('never lets a forged Remote-User in without a session', async () => {
      const res = await docs('get', '/guide').set('Remote-User', 'directory:staff|alice').set('X-Forwarded-User', 'directory:staff|alice');
      expect(res.status).toBe(401);
    });

    it('answers a denied path with a readable 403 page', async () => {
      const res = await docs('get', '/closed').set('Cookie', cookie).set('Accept', 'text/html');
      expect(res.status).toBe(403);
      expect(res.headers['content-type']).toMatch(/text\/html/);
      expect(res.text).toContain('Forbidden');
    });

    it('sends a one-factor session to step-up for a two_factor path', async () => {
      const res = await docs('get', '/admin/report').set('Cookie', cookie).set('Accept', 'text/html');
      expect(res.status).toBe(302);
      const location = new URL(res.headers.location!);
      expect(location.pathname).toBe('/step-up');
      expect(location.searchParams.get('acr')).toBe('2fa');
      expect(location.searchParams.get('return_to')).toBe(`http://${DOCS}:${proxyProcess.port}/admin/report`);
    });

    it('reads path tricks as the upstream does: case, encoding, dot segments, ; and //', async () => {
      for (const path of [
        '/ADMIN/report',
        '/%61dmin/report',
        '/public/../admin/report',
        '/public/%2e%2e/admin',
        '//admin/report',
        '/admin;x=1/report',
      ]) {
        const res = await docs('get', path).set('Cookie', cookie).set('Accept', 'application/json');
        // nginx passes only 401 and 403 on, so its config answers 403 where Caddy shows the 400.
        expect([400, 401, 403]).toContain(res.status);
        expect(res.body.headers).toBeUndefined();
      }
    });

    it('lets HEAD through as GET and keeps OPTIONS behind the login', async () => {
      expect((await docs('head', '/guide').set('Cookie', cookie)).status).toBe(200);
      expect((await docs('head', '/guide')).status).toBe(401);
      expect((await docs('options', '/guide')).status).toBe(401);
    });

    it('refuses a cross-site POST that the cookie would authenticate, and lets a same-origin one through', async () => {
      const cross = await docs('post', '/guide').set('Cookie', cookie).set('Origin', 'http://evil.localhost').send('x=1');
      expect(cross.status).toBe(403);
      // nginx shows the portal's generic 403 page; Caddy passes the problem on as it is.
      if (passesProblems) expect(cross.body.code).toBe('csrf_origin');
      expect(cross.body.method).toBeUndefined();
      const same = await docs('post', '/guide').set('Cookie', cookie).set('Origin', `http://${DOCS}:${proxyProcess.port}`).send('x=1');
      expect(same.status).toBe(200);
      expect(same.body.method).toBe('POST');
    });

    it('refuses a revoked session at the next request', async () => {
      const login = await request(proxy)
        .post('/login')
        .set('Host', `auth.${FA_DOMAIN}:${proxyProcess.port}`)
        .set('Origin', `http://auth.${FA_DOMAIN}:${proxyProcess.port}`)
        .type('form')
        .send({});
      const second = String(login.headers['set-cookie']).split(';')[0]!;
      expect((await docs('get', '/guide').set('Cookie', second)).status).toBe(200);
      const out = await request(proxy)
        .post('/logout')
        .set('Host', `auth.${FA_DOMAIN}:${proxyProcess.port}`)
        .set('Origin', `http://auth.${FA_DOMAIN}:${proxyProcess.port}`)
        .set('Cookie', second);
      expect(out.status).toBe(303);
      expect((await docs('get', '/guide').set('Cookie', second)).status).toBe(401);
    });
  });
}
