import { enrolOverHttp } from '../helpers/authenticator-app';
import { setCookieLine, setCookieValue } from '../helpers/cookies';
import { startDemoProcesses, type DemoProcesses } from '../helpers/demo';
import { expectProblem } from '../helpers/problem';

// The demo's contract (docs/portal-and-demo.md), which other tests and the docs rely on, against `npm run demo`
// as a user starts it: every site its own process, the login shared through Redis. The domain is not a loopback
// name, so QR login is off.
jest.setTimeout(60_000);

describe('the demo contract', () => {
  let t: DemoProcesses;
  beforeAll(async () => {
    t = await startDemoProcesses({ domain: 'sso.test' });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  const origin = (site: 'auth' | 'shop' | 'admin') => new URL(t.url(site)).origin;
  /** Admin asks two factors: a user's login raised by enrolling an authenticator app at the portal. */
  const twoFactorLogin = async (username: string) =>
    (await enrolOverHttp(t.site('auth'), origin('auth'), await t.login(username, `${username}-password`))).cookie;
  let aliceTwoFactors: Promise<string> | undefined;
  // alice enrols once (a second enrolment would replace her app); her raised login serves every test that needs it.
  const aliceWithTwoFactors = () => (aliceTwoFactors ??= twoFactorLogin('alice'));

  describe('POST auth/login', () => {
    it('answers 302 to return_to with the session cookie for the parent domain', async () => {
      const res = await t
        .site('auth')
        .post('/login')
        .set('Origin', origin('auth'))
        .type('form')
        .send({ username: 'alice', password: 'alice-password', return_to: t.url('admin', '/') });
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(t.url('admin', '/'));
      const line = setCookieLine(res, 'sso.sid')!;
      expect(line).toMatch(/Domain=sso\.test/i);
      expect(line).toMatch(/HttpOnly/i);
      expect(line).toMatch(/SameSite=Lax/i);
      expect(line).toMatch(/Path=\//);
    });

    it('refuses a wrong password with 401 and no cookie', async () => {
      const res = await t
        .site('auth')
        .post('/login')
        .set('Origin', origin('auth'))
        .type('form')
        .send({ username: 'alice', password: 'bob-password', return_to: '' });
      expect(res.status).toBe(401);
      expect(setCookieValue(res, 'sso.sid')).toBeUndefined();
    });

    it('refuses a return_to outside the parent domain by sending the browser to the shop instead', async () => {
      const res = await t
        .site('auth')
        .post('/login')
        .set('Origin', origin('auth'))
        .type('form')
        .send({ username: 'bob', password: 'bob-password', return_to: 'http://evil.test/' });
      expect(res.headers.location).toBe(t.url('shop', '/'));
    });
  });

  describe('GET /me on shop and admin', () => {
    it('returns { id, name, roles, method } on both apps after one login (single sign-on), admin once two factors are done', async () => {
      const cookie = await t.login('alice', 'alice-password');
      const alice = { id: 'directory:demo|alice', name: 'Alice Example', roles: ['admin'], method: 'password' };
      const shop = await t.site('shop').get('/me').set('Cookie', cookie);
      expect(shop.status).toBe(200);
      expect(shop.body).toEqual(alice);
      // The password alone does not open admin, not even its /me.
      expectProblem(await t.site('admin').get('/me').set('Cookie', cookie), 401, 'insufficient_user_authentication');
      const raised = await aliceWithTwoFactors();
      for (const site of ['shop', 'admin'] as const) {
        const res = await t.site(site).get('/me').set('Cookie', raised);
        expect(res.status).toBe(200);
        expect(res.body).toEqual(alice);
      }
    });

    it('answers 401 problem+json without a login', async () => {
      for (const site of ['shop', 'admin'] as const) expectProblem(await t.site(site).get('/me'), 401, 'session_required');
    });

    it('answers 401 for a forged cookie', async () => {
      expectProblem(await t.site('shop').get('/me').set('Cookie', 'sso.sid=s%3Aforged.signature'), 401);
    });
  });

  describe('POST /logout', () => {
    // bob's sessions: signing out everywhere ends every one of the user's, and alice's serve the tests below.
    it("on one app ends every session of the user on every app ('Sign out everywhere'), and no other user's", async () => {
      const cookie = await t.login('bob', 'bob-password');
      const otherBrowser = await t.login('bob', 'bob-password');
      const alice = await t.login('alice', 'alice-password');
      const res = await t.site('admin').post('/logout').set('Origin', origin('admin')).set('Cookie', cookie);
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(t.url('auth', '/login'));
      expect(setCookieLine(res, 'sso.sid')).toMatch(/Domain=sso\.test.*Expires=Thu, 01 Jan 1970/i);
      for (const site of ['shop', 'admin'] as const) {
        for (const session of [cookie, otherBrowser]) expectProblem(await t.site(site).get('/me').set('Cookie', session), 401);
      }
      expect((await t.site('shop').get('/me').set('Cookie', alice)).status).toBe(200);
    });

    it('refuses a logout posted by another site and keeps the login', async () => {
      const cookie = await t.login('bob', 'bob-password');
      expectProblem(await t.site('shop').post('/logout').set('Origin', 'http://evil.test').set('Cookie', cookie), 403, 'csrf_origin');
      expect((await t.site('shop').get('/me').set('Cookie', cookie)).status).toBe(200);
    });
  });

  describe('pages', () => {
    it('shows who is logged in and how on shop and admin, with a POST sign-out button', async () => {
      const cookie = await aliceWithTwoFactors();
      for (const site of ['shop', 'admin'] as const) {
        const res = await t.site(site).get('/').set('Cookie', cookie).set('Accept', 'text/html');
        expect(res.status).toBe(200);
        expect(res.text).toContain('Signed in as <strong>Alice Example</strong>');
        expect(res.text).toContain('data-method="password"');
        expect(res.text).toContain('<form method="post" action="/logout">');
        expect(res.text).not.toMatch(/<script>|\sstyle=|\son[a-z]+=/i);
      }
    });

    it('sends a browser without a login from an app to the portal, with return_to', async () => {
      const res = await t.site('shop').get('/').set('Accept', 'text/html');
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`${t.url('auth', '/login')}?return_to=${encodeURIComponent(t.url('shop', '/'))}`);
    });

    it('sends a browser with a password-only login from admin to the portal’s step-up page, with return_to', async () => {
      const res = await t
        .site('admin')
        .get('/')
        .set('Cookie', await t.login('alice', 'alice-password'))
        .set('Accept', 'text/html');
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`${t.url('auth', '/step-up')}?return_to=${encodeURIComponent(t.url('admin', '/'))}&acr=2fa`);
      expect(res.text).not.toContain('3 orders today');
    });

    it('gives bob, who lacks the admin role, a friendly 403 page on admin once he has two factors', async () => {
      const cookie = await twoFactorLogin('bob');
      const res = await t.site('admin').get('/').set('Cookie', cookie).set('Accept', 'text/html');
      expect(res.status).toBe(403);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('You are signed in as <strong>Bob Example</strong>');
      expect(res.text).not.toContain('3 orders today');
    });

    it('lets the shop page fetch from the api and post its sign-out to the portal under its CSP', async () => {
      const cookie = await t.login('alice', 'alice-password');
      const res = await t.site('shop').get('/').set('Cookie', cookie).set('Accept', 'text/html');
      const csp = res.headers['content-security-policy'] as string;
      expect(csp).toContain(`connect-src 'self' ${new URL(t.url('api')).origin}`);
      expect(csp).toContain(`form-action 'self' ${origin('auth')}`);
      expect(csp).not.toContain('unsafe-inline');
    });

    it('offers the password form and the OpenID Connect link on the portal', async () => {
      const res = await t.site('auth').get('/login');
      expect(res.text).toContain('href="/login/demo-idp">Sign in with the Demo IdP</a>');
    });
  });

  describe('identity provider', () => {
    it('publishes OpenID discovery with the public issuer', async () => {
      const res = await t.site('idp').get('/.well-known/openid-configuration');
      expect(res.status).toBe(200);
      expect(res.body.issuer).toBe(new URL(t.url('idp')).origin);
    });

    it('has no QR login on a domain that is not a loopback name over plain http', async () => {
      const res = await t.site('auth').get('/login');
      expect(res.text).not.toContain('Scan a QR code');
      expectProblem(await t.site('auth').get('/login/qr').set('Accept', 'application/json'), 404);
    });
  });

  describe('partner app', () => {
    it('answers on its own domain, outside the parent domain', () => {
      expect(new URL(t.url('partner')).hostname).toBe('partner.localhost');
      expect(new URL(t.url('partner')).hostname.endsWith('.sso.test')).toBe(false);
    });

    it("says why it cannot sign in when the portal's OpenID Provider is off (plain http on a name that is not a loopback name)", async () => {
      const res = await t.site('partner').get('/');
      expect(res.status).toBe(503);
      expect(res.text).toContain('id="partner-off"');
      expect((await t.site('auth').get('/.well-known/openid-configuration')).status).toBe(404);
    });
  });

  describe('separate processes behind one front door', () => {
    it('runs every site as its own process, which shares the login only through Redis', async () => {
      const pids = Object.values(t.pids);
      expect(Object.keys(t.pids).sort()).toEqual(['admin', 'api', 'auth', 'idp', 'partner', 'shop']);
      expect(new Set(pids).size).toBe(6);
      expect(pids).not.toContain(t.launcher.pid);
    });

    it("answers each site's health check from that site, with the store it uses", async () => {
      for (const site of ['auth', 'shop', 'admin', 'api', 'idp', 'partner'] as const) {
        expect((await t.site(site).get('/healthz')).body).toEqual({ status: 'ok', site, store: 'redis' });
      }
    });

    it('answers 404 for a host that is no demo site', async () => {
      const res = await t.site('shop').get('/me').set('Host', `nowhere.sso.test:${t.port}`);
      expect(res.status).toBe(404);
    });

    it('puts the docs site (python3, not Node) behind the portal: signed out to the login, signed in as who the portal says', async () => {
      const docs = (path: string) => t.site('shop').get(path).set('Host', `docs.sso.test:${t.port}`).set('Accept', 'text/html');
      const forged = { 'Remote-User': 'mallory', 'Remote-Name': 'Mallory', 'Remote-Email': 'mallory@evil.test' };
      const out = await docs('/').set(forged);
      expect(out.status).toBe(302);
      expect(new URL(out.headers.location!).origin + new URL(out.headers.location!).pathname).toBe(t.url('auth', '/login'));
      const page = await docs('/')
        .set(forged)
        .set('Cookie', await t.login('bob', 'bob-password'));
      expect(page.status).toBe(200);
      expect(page.headers.server).toBe('docs-site');
      expect(page.text).toContain('<strong id="remote-name">Bob Example</strong>');
      expect(page.text).toMatch(/id="remote-user"\s*>directory:demo\|bob</);
      // The portal gives no Remote-Email for this session: only the front door's stripping keeps the forged one out.
      expect(page.text).toContain('<code id="remote-email"></code>');
      expect(page.text).not.toMatch(/mallory/i);
      expect(t.output()).toMatch(/^\[demo \] docs \(python3\) runs as process \d+$/m);
    });

    it("prefixes every line of a site's output with its name", () => {
      expect(t.output()).toMatch(/^\[shop \] shop listening on 127\.0\.0\.1:\d+$/m);
      expect(t.output()).toMatch(/^\[idp {2}\] idp listening on/m);
    });
  });
});
