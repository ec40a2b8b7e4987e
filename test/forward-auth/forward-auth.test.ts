import request from 'supertest';
import { forwardAuth, KeySet, TokenService, type ForwardAuthOptions } from '../../lib';
import { DOCS_RULES, FA_DOMAIN, startPortal } from '../helpers/forward-auth-stack';
import { recordEvents } from '../helpers/event-recorder';
import { loadJose } from '../helpers/jose-tokens';

const PORT = 8443;
const DOCS = `docs.${FA_DOMAIN}`;
const AUTH = `http://auth.${FA_DOMAIN}:${PORT}`;

describe('forwardAuth: the sub-request dialects, trust and answers', () => {
  let portal: Awaited<ReturnType<typeof startPortal>>;
  let cookie: string;
  const keys = KeySet.generate('ES256');
  const tokens = new TokenService({ keys, issuer: AUTH });
  const recorder = recordEvents();

  beforeAll(async () => {
    portal = await startPortal(PORT, {
      events: recorder.events,
      // Any other host needs a login too: the redirect to it is what an attacker would aim at.
      rules: [...DOCS_RULES, { policy: 'one_factor' }],
      bearer: { tokenService: tokens, audience: 'docs-api' },
      assertion: { tokens, audience: (original) => `${original.origin}/` },
    });
    const login = await request(portal.server)
      .post('/login')
      .set('Host', `auth.${FA_DOMAIN}:${PORT}`)
      .set('Origin', AUTH)
      .type('form')
      .send({});
    cookie = String(login.headers['set-cookie']).split(';')[0]!;
  });
  afterAll(() => portal?.cleanup());

  /** Caddy's and Traefik's shape: GET with X-Forwarded-Method/-Proto/-Host/-Uri and the browser's headers. */
  const traefik = (uri: string, method = 'GET', host = DOCS) =>
    request(portal.server)
      .get('/authz/forward-auth')
      .set('X-Forwarded-Method', method)
      .set('X-Forwarded-Proto', 'http')
      .set('X-Forwarded-Host', host)
      .set('X-Forwarded-Uri', uri)
      .set('X-Forwarded-For', '192.0.2.7');

  it('answers the Traefik ForwardAuth shape with the identity headers and a signed assertion for the upstream', async () => {
    const res = await traefik('/guide').set('Cookie', cookie);
    expect(res.status).toBe(200);
    expect(res.headers['remote-user']).toBe('directory:staff|alice');
    expect(res.headers['remote-groups']).toBe('staff');
    const { payload } = await (
      await loadJose()
    ).jwtVerify(res.headers['remote-assertion']!, (await loadJose()).createLocalJWKSet(keys.publicJwks() as never), {
      issuer: AUTH,
      audience: `http://${DOCS}/`,
      algorithms: ['ES256'],
    });
    expect(payload.sub).toBe('directory:staff|alice');
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(60);
  });

  it('answers the Envoy ext_authz shape: original method, Host and path after the prefix', async () => {
    const allowed = await request(portal.server)
      .get('/authz/ext-authz/guide?x=1')
      .set('Host', DOCS)
      .set('X-Forwarded-Proto', 'http')
      .set('Cookie', cookie);
    expect(allowed.status).toBe(200);
    expect(allowed.headers['remote-user']).toBe('directory:staff|alice');
    const login = await request(portal.server)
      .get('/authz/ext-authz/guide')
      .set('Host', DOCS)
      .set('X-Forwarded-Proto', 'http')
      .set('Accept', 'text/html');
    expect(login.status).toBe(302);
    expect(new URL(login.headers.location!).searchParams.get('return_to')).toBe(`http://${DOCS}/guide`);
    const denied = await request(portal.server)
      .get('/authz/ext-authz/closed')
      .set('Host', DOCS)
      .set('X-Forwarded-Proto', 'http')
      .set('Cookie', cookie);
    expect(denied.status).toBe(403);
  });

  it('answers nginx browsers 401 with the login Location, since auth_request passes on only 401 and 403', async () => {
    const res = await request(portal.server)
      .get('/authz/auth-request')
      .set('X-Original-Method', 'GET')
      .set('X-Original-URL', `http://${DOCS}/guide`)
      .set('Accept', 'text/html');
    expect(res.status).toBe(401);
    expect(res.headers.location).toBe(`${AUTH}/login?return_to=${encodeURIComponent(`http://${DOCS}/guide`)}`);
    const malformed = await request(portal.server)
      .get('/authz/auth-request')
      .set('X-Original-Method', 'GET')
      .set('X-Original-URL', 'not a url');
    expect(malformed.status).toBe(403);
  });

  it('never sends the browser off the parent domain through the original URL', async () => {
    let redirected = 0;
    for (const [host, uri] of [
      ['evil.example', '/x'],
      [`evil.example:${PORT}`, '/x'],
      [`${DOCS}`, '//evil.example/x'],
      [`${DOCS}@evil.example`, '/x'],
    ] as const) {
      const res = await traefik(uri, 'GET', host).set('Accept', 'text/html');
      if (res.status === 302) {
        const returnTo = new URL(new URL(res.headers.location!).searchParams.get('return_to')!);
        expect(returnTo.hostname.endsWith(`.${FA_DOMAIN}`)).toBe(true);
        redirected += 1;
      } else {
        expect([400, 403]).toContain(res.status);
      }
    }
    expect(redirected).toBeGreaterThan(0);
  });

  it('refuses a header list, a missing header and a URI with a fragment or a space', async () => {
    expect((await traefik('/guide', 'GET', `${DOCS}, evil.example`).set('Cookie', cookie)).status).toBe(400);
    expect((await request(portal.server).get('/authz/forward-auth').set('X-Forwarded-Method', 'GET').set('Cookie', cookie)).status).toBe(
      400,
    );
    expect((await traefik('/guide#x').set('Cookie', cookie)).status).toBe(400);
  });

  it('checks a Bearer token as requireBearer does, with its roles for the rules', async () => {
    const { token } = tokens.issueAccessToken({ subject: 'robot', audience: 'docs-api', clientId: 'ci', roles: ['staff'] });
    const ok = await traefik('/staff/list').set('Authorization', `Bearer ${token}`).set('Accept', 'application/json');
    expect(ok.status).toBe(200);
    expect(ok.headers['remote-user']).toBe('robot');
    const other = tokens.issueAccessToken({ subject: 'robot', audience: 'other-api', clientId: 'ci', roles: ['staff'] }).token;
    const refused = await traefik('/staff/list').set('Authorization', `Bearer ${other}`);
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toMatch(/invalid_token/);
    const noRole = tokens.issueAccessToken({ subject: 'robot', audience: 'docs-api', clientId: 'ci' }).token;
    expect((await traefik('/staff/list').set('Authorization', `Bearer ${noRole}`)).status).toBe(403);
  });

  it('records refusals as access.denied events', async () => {
    await recorder.clear();
    await traefik('/closed').set('Cookie', cookie);
    const denied = await recorder.only('access.denied');
    expect(denied.reason).toBe('rule_denied');
    expect(denied.userId).toBe('directory:staff|alice');
  });
});

describe('forwardAuth: only the proxy may ask', () => {
  it('refuses a sub-request from an address outside trustedProxies, whatever it claims', async () => {
    const portal = await startPortal(PORT, { trustedProxies: ['10.0.0.1'] });
    try {
      const login = await request(portal.server)
        .post('/login')
        .set('Host', `auth.${FA_DOMAIN}:${PORT}`)
        .set('Origin', AUTH)
        .type('form')
        .send({});
      const cookie = String(login.headers['set-cookie']).split(';')[0]!;
      const res = await request(portal.server)
        .get('/authz/forward-auth')
        .set('X-Forwarded-Method', 'GET')
        .set('X-Forwarded-Proto', 'https')
        .set('X-Forwarded-Host', DOCS)
        .set('X-Forwarded-Uri', '/guide')
        .set('Cookie', cookie);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('untrusted_proxy');
      expect(res.headers['remote-user']).toBeUndefined();
    } finally {
      await portal.cleanup();
    }
  });

  it('checks its options when it is called', () => {
    const base = { session: (() => undefined) as never, trustedProxies: ['127.0.0.1'], rules: DOCS_RULES } as ForwardAuthOptions;
    expect(() => forwardAuth(base)).toThrow(/session must be the middleware ssoSession/);
    expect(() => forwardAuth({ ...base, trustedProxies: ['*'] })).toThrow(/trustedProxies/);
  });
});
