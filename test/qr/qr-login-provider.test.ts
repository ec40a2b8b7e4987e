import request from 'supertest';
import express, { type Router } from 'express';
import { generateAppSecret, hashAppSecret, qrTokenIssuer } from '../../lib/qr';
import { providerArea, providerAreas, type QrProviderAreas } from '../../lib/qr/provider-areas';
import { providerOrigin, providerOwnOrigin, type QrProviderContext } from '../../lib/qr/provider-context';
import { providerContext, qrLoginProvider } from '../../lib/qr/qr-login-provider';
import { createRateLimiters } from '../../lib/qr/rate-limits';
import { errorHandler } from '../../lib/http';
import { expectProblem } from '../helpers/problem';
import {
  confirmAndCollect,
  cookiePair,
  createLogin,
  patchStatus,
  PHONE_ISSUER,
  phoneAppBearer,
  phoneToken,
  QR_DIRECTORY_SOURCE,
  qrconnectQuery,
  qrTokenService,
  SHOP_REDIRECT,
  startProvider,
  type ProviderHarness,
} from '../helpers/qr-harness';
import { RedisStore } from '../../lib/store';
import { keysByPrefix, testRedisClient, testRedisStore } from '../helpers/redis';
import { burst } from '../helpers/parallel-http';
import { startSsoWiredProvider } from '../helpers/qr-sso-provider';
import { openEventStream, statusIs } from '../helpers/sse-client';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let idp: ProviderHarness;

beforeAll(async () => {
  redis = await testRedisStore('qr-provider');
  idp = await startProvider(redis.store, { rateLimits: false });
});

afterAll(async () => {
  await idp.close();
  await redis.cleanup();
});

describe('qrLoginProvider options', () => {
  const base = () => ({
    store: redis.store,
    apps: [{ appid: 'shop', secretHash: 'sha256:' + 'A'.repeat(43), name: 'Shop', redirectUris: [SHOP_REDIRECT] }],
    users: { findById: async () => null },
    tokens: {
      issueAccessToken: jest.fn(),
      verifyAccessToken: jest.fn(),
      issueRefreshToken: jest.fn(),
      rotateRefreshToken: jest.fn(),
      revokeGrant: jest.fn(),
      isRevoked: jest.fn(),
    },
  });

  it('detects app.use(qrLoginProvider) written for app.use(qrLoginProvider(options))', () => {
    const call = qrLoginProvider as unknown as (a: unknown, b: unknown, c: unknown) => unknown;
    expect(() => call({}, {}, () => undefined)).toThrow(/it is a factory/);
  });

  it('refuses a QR validity outside 120-300 seconds', () => {
    expect(() => qrLoginProvider({ ...base(), qrLifetimeSeconds: 60 })).toThrow(TypeError);
    expect(() => qrLoginProvider({ ...base(), qrLifetimeSeconds: 301 })).toThrow(
      /qrLifetimeSeconds must be a whole number of seconds from 120 to 300/,
    );
    expect(() => qrLoginProvider({ ...base(), qrLifetimeSeconds: 300 })).not.toThrow();
  });

  it('refuses the test-only validity when NODE_ENV is production', () => {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      expect(() => qrLoginProvider({ ...base(), testOnlyQrLifetimeSeconds: 2 })).toThrow(/refused when NODE_ENV=production/);
    } finally {
      process.env.NODE_ENV = previous;
    }
  });

  it('refuses unknown options, a token service without revocation, and a publicUrl with a path', () => {
    expect(() => qrLoginProvider({ ...base(), validity: 3 } as never)).toThrow(/unknown option "validity"/);
    expect(() => qrLoginProvider({ ...base(), tokens: { issueAccessToken: jest.fn() } } as never)).toThrow(
      /tokens must implement verifyAccessToken/,
    );
    expect(() => qrLoginProvider({ ...base(), publicUrl: 'https://idp.example.test/qr' })).toThrow(/origin only/);
  });

  it('refuses a users directory whose source is not "<kind>:<name>"', () => {
    expect(() => qrLoginProvider({ ...base(), users: { source: 'staff', findById: async () => null } })).toThrow(
      /users\.source must be "<kind>:<name>"/,
    );
  });

  it('does not mutate the options it is given', () => {
    const options = { ...base(), rateLimits: { qrconnectPerMinute: 5 } };
    // The store is compared by identity: its connection object (a Cluster client especially) is circular and
    // changes state by itself, so it cannot be part of a JSON snapshot.
    const { store } = options;
    const snapshotOf = () => JSON.stringify(options, (_key, value: unknown) => (value === store ? '<the given store>' : value));
    const snapshot = snapshotOf();
    qrLoginProvider(options);
    expect(options.store).toBe(store);
    expect(snapshotOf()).toBe(snapshot);
  });
});

describe('GET /sns/oauth2/qrconnect', () => {
  it.each([
    ['an unknown appid', { appid: 'nope' }],
    ['an unregistered redirect_uri', { redirect_uri: 'https://evil.example/callback' }],
    ['a redirect_uri differing by a trailing slash', { redirect_uri: `${SHOP_REDIRECT}/` }],
    ['another app’s redirect_uri', { redirect_uri: 'https://admin.example.test/callback/qr' }],
    ['response_type token', { response_type: 'token' }],
    ['another scope', { scope: 'snsapi_userinfo' }],
    ['a missing state', { state: '' }],
    ['a state with markup', { state: '<script>' }],
  ])('answers 400 with an HTML page and never redirects, for %s', async (_name, overrides) => {
    const res = await request(idp.url).get(`/sns/oauth2/qrconnect?${qrconnectQuery({ format: 'html', ...overrides })}`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.text).not.toContain('evil.example');
  });

  it('answers the QR page with an inline SVG, a static script and a strict CSP', async () => {
    const res = await request(idp.url)
      .get(`/sns/oauth2/qrconnect?${qrconnectQuery({ format: 'html' })}`)
      .set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.text).toContain('<svg');
    expect(res.text).toMatch(/<script src="\/sns\/qr-login\/qr-login\.js" defer><\/script>/);
    expect(res.text).not.toMatch(/<script>|<script [^s]/);
    const csp = res.headers['content-security-policy'] as string;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers['cache-control']).toBe('no-store');
    const script = await request(idp.url).get('/sns/qr-login/qr-login.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    expect(script.text).toContain('EventSource');
  });

  it('binds the request to the browser with an HttpOnly, Secure, SameSite=Lax cookie scoped to the request path', async () => {
    const login = await createLogin(idp.url);
    expect(login.setCookie).toMatch(new RegExp(`Path=/sns/qr-logins/${login.authCode};`));
    expect(login.setCookie).toMatch(/HttpOnly/);
    expect(login.setCookie).toMatch(/Secure/);
    expect(login.setCookie).toMatch(/SameSite=Lax/);
  });

  it('serves apps that render their own QR a JSON description, without the auth_code as a field', async () => {
    const res = await request(idp.url)
      .get(`/sns/oauth2/qrconnect?${qrconnectQuery({ format: 'html' })}`)
      .set('Accept', 'application/json');
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['events_url', 'expires_in', 'qr_url', 'redirection_url', 'status_url']);
    expect(res.body.expires_in).toBe(180);
    expect(res.body.qr_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/sns\/qr-logins\/[A-Za-z0-9_-]{32}\/confirmation$/);
  });

  it('answers HEAD as GET would, but creates no login request, no cookie and no rate-limit count', async () => {
    const fresh = await testRedisStore('qr-head');
    // Rate limits on, so a counted HEAD would leave a counter in the store too.
    const provider = await startProvider(fresh.store);
    try {
      const html = await request(provider.url)
        .head(`/sns/oauth2/qrconnect?${qrconnectQuery({ format: 'html' })}`)
        .set('Accept', 'text/html');
      expect(html.status).toBe(200);
      expect(html.headers['content-type']).toMatch(/^text\/html/);
      expect(html.headers['cache-control']).toBe('no-store');
      const json = await request(provider.url).head(`/sns/oauth2/qrconnect?${qrconnectQuery()}`);
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toMatch(/^application\/json/);
      const bad = await request(provider.url).head(`/sns/oauth2/qrconnect?${qrconnectQuery({ redirect_uri: 'https://evil.example/cb' })}`);
      expect(bad.status).toBe(400);
      for (const res of [html, json, bad]) {
        expect(res.headers['set-cookie']).toBeUndefined();
        expect(res.headers.location).toBeUndefined();
      }
      expect(await keysByPrefix(fresh.client, fresh.prefix)).toEqual([]);
      // The same request as GET does create the login request (and counts against the limit).
      expect((await request(provider.url).get(`/sns/oauth2/qrconnect?${qrconnectQuery()}`)).status).toBe(201);
      expect((await keysByPrefix(fresh.client, fresh.prefix)).length).toBeGreaterThan(0);
    } finally {
      await provider.close();
      await fresh.cleanup();
    }
  });

  it('puts the request origin in the QR URL without publicUrl, honouring X-Forwarded-Host only from a trusted proxy', async () => {
    // No `trust proxy` on the harness: a forged X-Forwarded-Host must not move the QR code to another site.
    const direct = await request(idp.url)
      .get(`/sns/oauth2/qrconnect?${qrconnectQuery()}`)
      .set('X-Forwarded-Host', 'evil.example')
      .set('X-Forwarded-Proto', 'https');
    expect(direct.body.qr_url).toMatch(new RegExp(`^${idp.url}/sns/qr-logins/`));
    const behindProxy = await startSsoWiredProvider(redis.store, { publicUrl: undefined });
    try {
      const viaProxy = await behindProxy
        .call('get', `/sns/oauth2/qrconnect?${qrconnectQuery()}`)
        .set('X-Forwarded-Host', 'login.example.test');
      expect(viaProxy.body.qr_url).toMatch(/^https:\/\/login\.example\.test\/sns\/qr-logins\//);
      const hostOnly = await behindProxy.call('get', `/sns/oauth2/qrconnect?${qrconnectQuery()}`);
      expect(hostOnly.body.qr_url).toMatch(/^https:\/\/idp\.example\.test\/sns\/qr-logins\//);
    } finally {
      await behindProxy.close();
    }
  });

  it('checks its confirmation form against the Host it was routed by, while URLs follow a trusted X-Forwarded-Host', async () => {
    // Without publicUrl: the QR URL may follow the proxy's X-Forwarded-Host, the same-origin check of the form never.
    const context = { settings: { publicOrigin: undefined } } as unknown as QrProviderContext;
    const app = express();
    app.set('trust proxy', 'loopback');
    app.get('/origins', (req, res) => res.json({ url: providerOrigin(context, req), own: providerOwnOrigin(context, req) }));
    const res = await request(app)
      .get('/origins')
      .set('Host', 'idp.example.test')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'evil.example');
    expect(res.body).toEqual({ url: 'https://evil.example', own: 'https://idp.example.test' });
  });

  it('mints auth_codes of at least 128 random bits, different every time', async () => {
    const codes = new Set<string>();
    for (let i = 0; i < 5; i += 1) codes.add((await createLogin(idp.url)).authCode);
    expect(codes.size).toBe(5);
    for (const code of codes) expect(Buffer.from(code, 'base64url').length).toBeGreaterThanOrEqual(16);
  });
});

describe('the /sns/qr-logins/{auth_code} resource', () => {
  it('requires the phone app user to be authenticated', async () => {
    const login = await createLogin(idp.url);
    const res = await request(idp.url).get(`/sns/qr-logins/${login.authCode}`);
    expectProblem(res, 401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    const patched = await request(idp.url)
      .patch(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', 'Bearer not.a.jwt')
      .send({ status: 'scanned' });
    expect(patched.status).toBe(401);
  });

  it('shows where the request came from (QRLjacking mitigation)', async () => {
    const login = await createLogin(idp.url);
    const res = await request(idp.url)
      .get(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${await phoneToken('alice')}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      auth_code: login.authCode,
      status: 'pending',
      app: { appid: 'shop', name: 'Shop' },
      requester: { ip: expect.stringMatching(/127\.0\.0\.1/), user_agent: 'HarnessBrowser/1.0' },
    });
  });

  it('walks pending → scanned → confirmed and answers the complete resource each time', async () => {
    const login = await createLogin(idp.url);
    const scanned = await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    expect(scanned.status).toBe(200);
    expect(await scanned.json()).toMatchObject({ status: 'scanned', app: { name: 'Shop' }, scanned_at: expect.any(String) });
    const confirmed = await patchStatus(idp.url, login.authCode, 'confirmed', 'alice');
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toMatchObject({ status: 'confirmed', decided_at: expect.any(String) });
  });

  it('answers 409 for an illegal transition and changes nothing', async () => {
    const login = await createLogin(idp.url);
    const res = await patchStatus(idp.url, login.authCode, 'confirmed', 'alice');
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ code: 'illegal_transition', status: 409, current_status: 'pending' });
    const after = await request(idp.url)
      .get(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${await phoneToken('alice')}`);
    expect(after.body.status).toBe('pending');
  });

  it('lets only the user who scanned confirm or deny (403 for another user)', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    const res = await patchStatus(idp.url, login.authCode, 'confirmed', 'bob');
    expect(res.status).toBe(403);
    expect((await patchStatus(idp.url, login.authCode, 'denied', 'bob')).status).toBe(403);
  });

  it('refuses a second confirmation and any use after confirmation (409)', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    expect((await patchStatus(idp.url, login.authCode, 'confirmed', 'alice')).status).toBe(200);
    expect((await patchStatus(idp.url, login.authCode, 'confirmed', 'alice')).status).toBe(409);
    expect((await patchStatus(idp.url, login.authCode, 'denied', 'alice')).status).toBe(409);
    expect((await patchStatus(idp.url, login.authCode, 'scanned', 'bob')).status).toBe(409);
  });

  it('answers 422 with field errors for a bad body, 400 for a body that is not JSON, 404 for an unknown code', async () => {
    const login = await createLogin(idp.url);
    const token = await phoneToken('alice');
    const bad = await request(idp.url)
      .patch(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${token}`)
      .send({ status: 'approved', extra: 1 });
    expectProblem(bad, 422, 'validation_failed');
    expect(bad.body.errors).toEqual([
      { field: 'status', message: 'must be one of scanned, confirmed, denied' },
      { field: 'extra', message: 'is not a field of a QR login request' },
    ]);
    const text = await request(idp.url)
      .patch(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${token}`)
      .type('text/plain')
      .send('status=scanned');
    expectProblem(text, 400, 'body_not_json');
    const broken = await request(idp.url)
      .patch(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${token}`)
      .type('application/json')
      .send('{"status":');
    expectProblem(broken, 400);
    const unknown = await patchStatus(idp.url, 'A'.repeat(32), 'scanned', 'alice');
    expect(unknown.status).toBe(404);
    const after = await request(idp.url).get(`/sns/qr-logins/${login.authCode}`).set('Authorization', `Bearer ${token}`);
    expect(after.body.status).toBe('pending');
  });

  it('answers 405 with Allow for other methods', async () => {
    const login = await createLogin(idp.url);
    const res = await request(idp.url)
      .delete(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${await phoneToken('alice')}`);
    expectProblem(res, 405);
    expect(res.headers.allow).toContain('PATCH');
  });

  it('has exactly one winner among 100 parallel confirmations', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    // Over 100 open connections at once, so the handlers really interleave (each reads "scanned" before any write).
    const answers = await burst(100, `${idp.url}/sns/qr-login/qr-login.js`, {
      url: `${idp.url}/sns/qr-logins/${login.authCode}`,
      method: 'PATCH',
      headers: { authorization: `Bearer ${await phoneToken('alice')}`, 'content-type': 'application/json' },
      body: '{"status":"confirmed"}',
    });
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status === 409)).toHaveLength(99);
  });
});

describe('the browser side: status, events and redirection', () => {
  it('gives status only to the browser holding the binding cookie', async () => {
    const login = await createLogin(idp.url);
    expectProblem(await request(idp.url).get(`/sns/qr-logins/${login.authCode}/status`), 403, 'qr_binding_mismatch');
    const other = await createLogin(idp.url);
    expectProblem(await request(idp.url).get(`/sns/qr-logins/${login.authCode}/status`).set('Cookie', other.binding), 403);
    const res = await request(idp.url).get(`/sns/qr-logins/${login.authCode}/status`).set('Cookie', login.binding);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
  });

  it('redirects the binding browser once to redirect_uri with code and state', async () => {
    const login = await createLogin(idp.url);
    const { code, state } = await confirmAndCollect(idp.url, login);
    expect(state).toBe('st-123');
    expect(Buffer.from(code, 'base64url').length).toBeGreaterThanOrEqual(16);
    const again = await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' });
    expect(again.status).toBe(410);
    expect(again.headers.get('location')).toBeNull();
  });

  it('hands the code over in the Location header alone: not stored, no referrer, no body repeating the address', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    await patchStatus(idp.url, login.authCode, 'confirmed', 'alice');
    const res = await fetch(login.redirectionUrl, { headers: { cookie: login.binding, accept: 'text/html' }, redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe('https://shop.example.test/callback/qr');
    expect(location.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('content-length')).toBe('0');
    expect(await res.text()).toBe('');
  });

  it('answers JSON that no cache may keep, with no ETag to revalidate it by', async () => {
    const login = await createLogin(idp.url);
    const status = await request(idp.url).get(`/sns/qr-logins/${login.authCode}/status`).set('Cookie', login.binding);
    const created = await request(idp.url).get(`/sns/oauth2/qrconnect?${qrconnectQuery()}`).set('Accept', 'application/json');
    const scanned = await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    for (const res of [status, created]) {
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.etag).toBeUndefined();
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
    }
    expect(scanned.headers.get('cache-control')).toBe('no-store');
    expect(scanned.headers.get('etag')).toBeNull();
    expect(status.body.status).toBe('pending');
  });

  it('answers HEAD on the redirection with 405 and leaves the redirect to be collected', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    await patchStatus(idp.url, login.authCode, 'confirmed', 'alice');
    const head = await request(idp.url).head(`/sns/qr-logins/${login.authCode}/redirection`).set('Cookie', login.binding);
    expect(head.status).toBe(405);
    expect(head.headers.allow).toBe('GET, OPTIONS');
    expect(head.headers.location).toBeUndefined();
    expect((await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' })).status).toBe(302);
  });

  it('answers HEAD on the events with the stream headers and ends at once, without subscribing', async () => {
    const login = await createLogin(idp.url);
    const head = await request(idp.url).head(`/sns/qr-logins/${login.authCode}/events`).set('Cookie', login.binding);
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toMatch(/^text\/event-stream/);
    expect((await request(idp.url).head(`/sns/qr-logins/${login.authCode}/events`)).status).toBe(403);
  });

  it('does not let another browser (without the binding cookie) collect the redirect', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    await patchStatus(idp.url, login.authCode, 'confirmed', 'alice');
    const stranger = await fetch(login.redirectionUrl, { redirect: 'manual' });
    expect(stranger.status).toBe(403);
    expect(stranger.headers.get('location')).toBeNull();
    const otherBrowser = await createLogin(idp.url);
    const wrongCookie = await fetch(login.redirectionUrl, { headers: { cookie: otherBrowser.binding }, redirect: 'manual' });
    expect(wrongCookie.status).toBe(403);
    // The rightful browser still can.
    const own = await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' });
    expect(own.status).toBe(302);
  });

  it('does not redirect before confirmation, nor after a denial', async () => {
    const login = await createLogin(idp.url);
    expect((await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' })).status).toBe(409);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    const denied = await patchStatus(idp.url, login.authCode, 'denied', 'alice');
    expect(denied.status).toBe(200);
    const res = await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('Get a new code');
  });

  it('streams status changes over SSE to the binding browser, ending on a final status', async () => {
    const login = await createLogin(idp.url);
    expect((await openEventStream(login.eventsUrl)).status).toBe(403);
    const stream = await openEventStream(login.eventsUrl, { cookie: login.binding });
    expect(stream.status).toBe(200);
    await stream.next(statusIs('pending'));
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    await stream.next(statusIs('scanned'));
    await patchStatus(idp.url, login.authCode, 'denied', 'alice');
    await stream.next(statusIs('denied'));
    await stream.ended;
    stream.close();
  });

  it('delivers a transition over SSE within 200 ms (10 samples, each measured from PATCH sent to event received)', async () => {
    const token = await phoneToken('alice');
    const latencies: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      const login = await createLogin(idp.url);
      const stream = await openEventStream(login.eventsUrl, { cookie: login.binding });
      await stream.next(statusIs('pending'));
      const sentAt = performance.now();
      const patch = fetch(`${idp.url}/sns/qr-logins/${login.authCode}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"status":"scanned"}',
      });
      const event = await stream.next(statusIs('scanned'));
      latencies.push(event.receivedAt - sentAt);
      expect((await patch).status).toBe(200);
      stream.close();
    }
    latencies.sort((a, b) => a - b);
    console.log(`SSE transition latency over 10 samples: median ${latencies[4]!.toFixed(1)} ms, max ${latencies[9]!.toFixed(1)} ms`);
    expect(latencies[9]).toBeLessThan(200);
  });
});

describe('expiry', () => {
  let shortIdp: ProviderHarness;
  beforeAll(async () => {
    shortIdp = await startProvider(redis.store, { rateLimits: false, testOnlyQrLifetimeSeconds: 2 });
  });
  afterAll(() => shortIdp.close());

  it('expires an unconfirmed code after its validity: SSE says expired, PATCH 410, redirection 410 with a new-code link', async () => {
    const login = await createLogin(shortIdp.url);
    await patchStatus(shortIdp.url, login.authCode, 'scanned', 'alice');
    const stream = await openEventStream(login.eventsUrl, { cookie: login.binding });
    await stream.next(statusIs('expired'), 4000);
    stream.close();
    const res = await patchStatus(shortIdp.url, login.authCode, 'confirmed', 'alice');
    expect(res.status).toBe(410);
    const read = await request(shortIdp.url)
      .get(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${await phoneToken('alice')}`);
    expectProblem(read, 410, 'qr_login_expired');
    const status = await request(shortIdp.url).get(`/sns/qr-logins/${login.authCode}/status`).set('Cookie', login.binding);
    expect(status.body.status).toBe('expired');
    const page = await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' });
    expect(page.status).toBe(410);
    const html = await page.text();
    expect(html).toContain('Get a new code');
    expect(html).toContain('/sns/oauth2/qrconnect?appid=shop');
  });
});

describe('two provider instances sharing Redis', () => {
  it('see the same requests: created on one, PATCHed on the other, streamed by the first', async () => {
    // Its own Redis connections (commands and subscriber), the same prefix: like a second process.
    const secondStore = new RedisStore(testRedisClient(), { prefix: redis.prefix });
    const second = await startProvider(secondStore, { rateLimits: false });
    try {
      const login = await createLogin(idp.url);
      const stream = await openEventStream(login.eventsUrl, { cookie: login.binding });
      await stream.next(statusIs('pending'));
      expect((await patchStatus(second.url, login.authCode, 'scanned', 'alice')).status).toBe(200);
      await stream.next(statusIs('scanned'));
      expect((await patchStatus(second.url, login.authCode, 'confirmed', 'alice')).status).toBe(200);
      await stream.next(statusIs('confirmed'));
      stream.close();
      const collected = await fetch(login.redirectionUrl, { headers: { cookie: login.binding }, redirect: 'manual' });
      expect(collected.status).toBe(302);
    } finally {
      await second.close();
      await secondStore.close();
      await secondStore.client.quit();
    }
  });
});

describe('the web confirmation page (demo phone)', () => {
  async function loggedInCookie(userId: string, source = QR_DIRECTORY_SOURCE, provider = idp): Promise<string> {
    const res = await request(provider.url).post(`/test/login/${userId}`).query({ source });
    return cookiePair(res.headers['set-cookie'], 'idp.sid')!;
  }

  it('requires a provider session', async () => {
    const login = await createLogin(idp.url);
    expectProblem(await request(idp.url).get(`/sns/qr-logins/${login.authCode}/confirmation`), 401);
  });

  it('sends a visitor without a session to loginUrl with the page itself, in full, as return_to', async () => {
    // The login page resolves a bare path against its redirect policy's home, another site of the domain: a phone
    // that signed in there would land on that site's 404 instead of back on this page.
    for (const [loginUrl, publicUrl] of [
      ['/login', undefined],
      ['/login?lang=en', 'https://idp.example.test'],
    ] as const) {
      const provider = await startProvider(redis.store, { rateLimits: false, loginUrl, ...(publicUrl ? { publicUrl } : {}) });
      try {
        const login = await createLogin(provider.url);
        const path = `/sns/qr-logins/${login.authCode}/confirmation`;
        const res = await request(provider.url).get(path);
        expect(res.status).toBe(303);
        const location = new URL(res.headers.location!, provider.url);
        expect(location.searchParams.get('return_to')).toBe(`${publicUrl ?? provider.origin}${path}`);
        expect(location.pathname).toBe('/login');
        if (publicUrl) expect(location.searchParams.get('lang')).toBe('en');
      } finally {
        await provider.close();
      }
    }
  });

  it('shows the request origin and confirms with one same-origin POST (scan recorded first)', async () => {
    const login = await createLogin(idp.url);
    const stream = await openEventStream(login.eventsUrl, { cookie: login.binding });
    // The stream reports the status it reads at the start, then each published change. Waiting for that first
    // status means the quick scan-then-confirm below can only arrive as published; otherwise the first read could
    // already see "confirmed" and skip "scanned".
    await stream.next(statusIs('pending'));
    const cookie = await loggedInCookie('alice');
    const path = `/sns/qr-logins/${login.authCode}/confirmation`;
    const page = await request(idp.url).get(path).set('Cookie', cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('HarnessBrowser/1.0');
    expect(page.text).toContain('id="qr-confirmed"');
    expect(page.text).toContain('id="qr-denied"');
    expect(page.headers['content-security-policy']).toContain("form-action 'self'");
    const confirm = await request(idp.url)
      .post(path)
      .set('Cookie', cookie)
      .set('Origin', idp.origin)
      .type('form')
      .send({ status: 'confirmed' });
    expect(confirm.status).toBe(303);
    await stream.next(statusIs('confirmed'));
    await stream.ended;
    const statuses = stream.events
      .filter((event) => event.event === 'status')
      .map((event) => (JSON.parse(event.data) as { status: string }).status);
    // Also on a Redis Cluster: the store publishes through the channel's slot owner, so the order holds.
    expect(statuses).toEqual(['pending', 'scanned', 'confirmed']);
    stream.close();
    const read = await request(idp.url)
      .get(`/sns/qr-logins/${login.authCode}`)
      .set('Authorization', `Bearer ${await phoneToken('alice')}`);
    expect(read.body).toMatchObject({ status: 'confirmed', scanned_at: expect.any(String) });
    const after = await request(idp.url).get(path).set('Cookie', cookie);
    expect(after.text).toContain('You confirmed this sign-in.');
  });

  it('does not let a second user confirm from the page a request someone else scanned', async () => {
    const login = await createLogin(idp.url);
    await patchStatus(idp.url, login.authCode, 'scanned', 'alice');
    const cookie = await loggedInCookie('bob');
    const path = `/sns/qr-logins/${login.authCode}/confirmation`;
    expect((await request(idp.url).get(path).set('Cookie', cookie)).text).toContain('Someone else already scanned this code.');
    const res = await request(idp.url)
      .post(path)
      .set('Cookie', cookie)
      .set('Origin', idp.origin)
      .type('form')
      .send({ status: 'confirmed' });
    expectProblem(res, 403, 'not_scanner');
  });

  it('refuses a cross-site form post (CSRF) and changes nothing', async () => {
    const login = await createLogin(idp.url);
    const cookie = await loggedInCookie('alice');
    const path = `/sns/qr-logins/${login.authCode}/confirmation`;
    const crossSite = await request(idp.url)
      .post(path)
      .set('Cookie', cookie)
      .set('Origin', 'https://evil.example')
      .type('form')
      .send({ status: 'confirmed' });
    expectProblem(crossSite, 403, 'cross_origin_request');
    const noOrigin = await request(idp.url).post(path).set('Cookie', cookie).type('form').send({ status: 'confirmed' });
    expectProblem(noOrigin, 403, 'cross_origin_request');
    const status = await request(idp.url).get(`/sns/qr-logins/${login.authCode}/status`).set('Cookie', login.binding);
    expect(status.body.status).toBe('pending');
  });

  it('refuses a user who signed in through another source, whatever their subject (403 foreign_identity)', async () => {
    const login = await createLogin(idp.url);
    // "alice" of a partner IdP is not the directory's alice.
    const cookie = await loggedInCookie('alice', 'oidc:https://partner.idp.test');
    const path = `/sns/qr-logins/${login.authCode}/confirmation`;
    expectProblem(await request(idp.url).get(path).set('Cookie', cookie), 403, 'foreign_identity');
    const confirm = await request(idp.url)
      .post(path)
      .set('Cookie', cookie)
      .set('Origin', idp.origin)
      .type('form')
      .send({ status: 'confirmed' });
    expectProblem(confirm, 403, 'foreign_identity');
    // The phone app's resource refuses the same session.
    const patched = await request(idp.url).patch(`/sns/qr-logins/${login.authCode}`).set('Cookie', cookie).send({ status: 'scanned' });
    expectProblem(patched, 403, 'foreign_identity');
    const status = await request(idp.url).get(`/sns/qr-logins/${login.authCode}/status`).set('Cookie', login.binding);
    expect(status.body.status).toBe('pending');
  });

  it('accepts the users of the source its directory declares, and only them', async () => {
    const staffStore = await testRedisStore('qr-provider-staff');
    const staff = await startProvider(staffStore.store, {
      rateLimits: false,
      users: { source: 'directory:staff', findById: async (id) => (id === 'alice' ? { id: 'alice', name: 'Alice' } : null) },
    });
    try {
      const login = await createLogin(staff.url);
      const path = `/sns/qr-logins/${login.authCode}/confirmation`;
      const local = await loggedInCookie('alice', QR_DIRECTORY_SOURCE, staff);
      expectProblem(await request(staff.url).get(path).set('Cookie', local), 403, 'foreign_identity');
      const member = await loggedInCookie('alice', 'directory:staff', staff);
      const page = await request(staff.url).get(path).set('Cookie', member);
      expect(page.status).toBe(200);
      expect(page.text).toContain('id="qr-confirmed"');
    } finally {
      await staff.close();
      await staffStore.cleanup();
    }
  });
});

function providerOptions() {
  return {
    store: redis.store,
    apps: [{ appid: 'shop', secretHash: hashAppSecret(generateAppSecret()), name: 'Shop', redirectUris: [SHOP_REDIRECT] }],
    users: { findById: async () => null },
    tokens: qrTokenIssuer(qrTokenService(redis.store)),
    authenticateApp: phoneAppBearer(),
    appTokenIssuer: PHONE_ISSUER,
    rateLimits: false as const,
  };
}

/** The paths of a router's routes, as Express 4 and 5 both keep them on its stack. */
function routePaths(router: Router): string[] {
  const stack = (router as unknown as { stack: Array<{ route?: { path: string | string[] } }> }).stack;
  return stack.flatMap((layer) => (layer.route === undefined ? [] : [layer.route.path].flat()));
}

describe('the provider routes each request to the one router its path can belong to', () => {
  it('sends every route of each router, in any case and with a trailing slash, to that router and no other', () => {
    const context = providerContext(providerOptions());
    const areas = providerAreas(context, createRateLimiters(redis.store, context.apps, context.settings.rateLimits));
    const names = Object.keys(areas) as Array<keyof QrProviderAreas>;
    expect(names.sort()).toEqual(['api', 'entry', 'logins']);
    let checked = 0;
    for (const name of names) {
      const paths = routePaths(areas[name]);
      expect(paths.length).toBeGreaterThan(0);
      for (const path of paths) {
        const concrete = path.replace(/:\w+/g, 'Ab0_-');
        expect([path, providerArea(concrete)]).toEqual([path, name]);
        expect([path, providerArea(concrete.toUpperCase())]).toEqual([path, name]);
        expect([path, providerArea(`${concrete}/`)]).toEqual([path, name]);
        checked += 1;
      }
    }
    // The QR page's script and stylesheet, qrconnect, a login's five resources, the three API endpoints.
    expect(checked).toBeGreaterThanOrEqual(11);
  });

  it('claims no path outside its own', () => {
    for (const path of ['/', '/probe', '/sns', '/sns/', '/sns/oauth2', '/sns/qr-logins', '/snsx/userinfo', '/api/sns/userinfo', '/login']) {
      expect([path, providerArea(path)]).toEqual([path, undefined]);
    }
  });

  it('answers its paths in any case, as the routers would, and leaves the rest of the app its requests', async () => {
    const upper = await request(idp.url).get(`/SNS/OAUTH2/QRCONNECT?${qrconnectQuery()}`).set('Accept', 'application/json');
    expect(upper.status).toBe(201);
    expect(upper.body.status_url).toMatch(/\/sns\/qr-logins\/[A-Za-z0-9_-]+\/status$/);

    const app = express();
    app.use(qrLoginProvider(providerOptions()));
    app.get('/sns/elsewhere', (_req, res) => res.send('the app'));
    app.get('/sns/qr-logins/abc/extra', (_req, res) => res.send('the app, under the provider’s prefix'));
    app.use(errorHandler({ log: false }));
    expect((await request(app).get('/sns/elsewhere')).text).toBe('the app');
    expect((await request(app).get('/sns/qr-logins/abc/extra')).text).toBe('the app, under the provider’s prefix');
    expect((await request(app).get('/sns/qr-logins/abc/status')).status).toBe(404);
  });

  it('enters its paths straight from the app, mounted under a prefix too, and still runs routes added to its router', async () => {
    const provider = qrLoginProvider(providerOptions());
    provider.get('/added-by-the-app', (_req, res) => res.send('a route on the provider’s router'));
    const app = express();
    app.use('/idp', provider);
    app.use(errorHandler({ log: false }));

    const created = await request(app).get(`/idp/sns/oauth2/qrconnect?${qrconnectQuery()}`).set('Accept', 'application/json');
    expect(created.status).toBe(201);
    // Links are built from the mount path, so the area's router saw the prefix the app stripped.
    expect(created.body.status_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/idp\/sns\/qr-logins\/[A-Za-z0-9_-]+\/status$/);
    expect((await request(app).get('/idp/added-by-the-app')).text).toBe('a route on the provider’s router');
    expectProblem(await request(app).get('/idp/sns/qr-logins/abc/status'), 404, 'qr_login_not_found');
    expect((await request(app).get('/sns/oauth2/qrconnect')).status).toBe(404);
  });
});
