import { randomBytes } from 'node:crypto';
import { BACKCHANNEL_LOGOUT_EVENT } from '../../lib/oidc';
import { RedisStore } from '../../lib/store';
import { pinoSink, redisStreamSink, securityEvents, type SecurityEvent, type SecurityEvents } from '../../lib/events';
import { TestUserAgent, type UserAgentResponse } from '../helpers/http-user-agent';
import { loadJose } from '../helpers/jose-tokens';
import { startKitApp, type KitApp } from '../helpers/kit-app';
import { captureLogs, type LogCapture } from '../helpers/log-capture';
import { keysByPrefix, startPrivateRedis, testPrefix, testRedisStore, type PrivateRedis } from '../helpers/redis';

/**
 * Every log line of a whole journey through the wired kit — password, OIDC and QR logins, Bearer and Basic calls,
 * refreshes, logouts, failures of each, and a Redis outage — captured from console, stdout/stderr and every
 * `DEBUG=express-sso-kit:*` channel, and searched for every secret the journey used or was handed: passwords,
 * client and app secrets, cookies and session ids, states, codes, auth_codes and tokens. The kit records its
 * security events meanwhile, as JSON lines on stderr, in a Redis stream and through a hook: every event of the
 * journey is searched too.
 */
describe('no log line contains a code, token, state, cookie, password or secret', () => {
  let redis: PrivateRedis;
  let store: RedisStore;
  let kit: KitApp;
  let logs: LogCapture;
  let prefix: string;
  let events: SecurityEvents;
  let streams: Awaited<ReturnType<typeof testRedisStore>>;
  const recorded: SecurityEvent[] = [];
  const secrets = new Map<string, string>();
  const browser = new TestUserAgent();

  /** Remembers a secret to search for (with its percent-encoded form); short values would match by chance. */
  function remember(label: string, value: string | null | undefined): void {
    if (typeof value !== 'string' || value.length < 8) return;
    secrets.set(value, label);
    secrets.set(encodeURIComponent(value), `${label} (percent-encoded)`);
  }

  /** Remembers the cookie values the browser holds, and the session id inside a signed session cookie. */
  function rememberCookies(): void {
    for (const cookie of browser.cookies) {
      remember(`cookie ${cookie.name}`, cookie.value);
      const signed = /^s(?::|%3A)([^.]+)\.(.+)$/.exec(cookie.value);
      if (signed) {
        remember(`session id in ${cookie.name}`, signed[1]);
        remember(`signature of ${cookie.name}`, signed[2]);
      }
    }
  }

  /** Remembers every token kept in server-side session records (OIDC and QR provider tokens). */
  async function rememberSessionTokens(): Promise<void> {
    for (const key of await keysByPrefix(store.client, `${prefix}sess:`)) {
      const record = await store.client.get(key);
      JSON.parse(record ?? '{}', (name: string, value: unknown) => {
        if (typeof value === 'string' && /token/i.test(name)) remember(`session ${name}`, value);
        return value as unknown;
      });
    }
  }

  function rememberQuery(label: string, url: string | undefined, names: string[]): void {
    if (!url) return;
    const params = new URL(url).searchParams;
    for (const name of names) remember(`${label} ${name}`, params.get(name));
  }

  const withOrigin = (extra: Record<string, string> = {}) => ({ headers: { Origin: kit.auth.origin, ...extra } });

  beforeAll(async () => {
    redis = await startPrivateRedis();
    prefix = testPrefix('log-secrets');
    store = new RedisStore(redis.url, { prefix });
    // Capture from before start-up: warnings at start-up count too.
    logs = captureLogs();
    // The streams live on another Redis than the kit's, which the outage below stops.
    streams = await testRedisStore('log-secrets-events');
    events = securityEvents({
      app: 'kit',
      sinks: [pinoSink({ destination: process.stderr }), redisStreamSink({ store: streams.store }), (event) => void recorded.push(event)],
    });
    kit = await startKitApp(store, events);
    const { passwords, ...configured } = kit.secrets;
    for (const [name, value] of Object.entries(configured)) remember(name, value);
    for (const [user, password] of Object.entries(passwords)) remember(`password of ${user}`, password);
  });

  afterAll(async () => {
    logs?.stop();
    await events?.close();
    await streams?.cleanup();
    await kit?.close();
    await store?.close();
    await redis?.stop();
  });

  it('password login: a wrong password, then the right one', async () => {
    const wrong = `wrong-${randomBytes(9).toString('base64url')}`;
    remember('wrong password', wrong);
    const refused = await browser.request(`${kit.auth.origin}/login`, {
      form: { username: 'alice', password: wrong, return_to: '' },
      ...withOrigin(),
    });
    expect(refused.status).toBe(401);
    const login = await browser.request(`${kit.auth.origin}/login`, {
      form: { username: 'alice', password: kit.secrets.passwords.alice!, return_to: `${kit.auth.origin}/me` },
      ...withOrigin(),
    });
    expect(login.status).toBe(302);
    rememberCookies();
    expect((await browser.request(`${kit.auth.origin}/me`)).status).toBe(200);
  });

  it('OIDC login, a forged callback, a refresh and a back-channel logout', async () => {
    const chain = await browser.follow(`${kit.auth.origin}/login/corp?return_to=${encodeURIComponent(`${kit.auth.origin}/me`)}`);
    const authorization = chain.find((answer) => answer.location?.includes('/auth?'))?.location;
    rememberQuery('OIDC authorization', authorization, ['state', 'nonce', 'code_challenge']);
    const callback = chain.find((answer) => answer.url.startsWith(`${kit.auth.origin}/callback/corp`))?.url;
    rememberQuery('OIDC callback', callback, ['code', 'state']);
    expect(chain[chain.length - 1]?.status).toBeLessThan(400);
    rememberCookies();
    await rememberSessionTokens();

    // A replayed callback and a forged state are refused.
    expect((await browser.request(callback!)).status).toBeGreaterThanOrEqual(400);
    expect(
      (await browser.request(`${kit.auth.origin}/callback/corp?code=forged-code-${randomBytes(8).toString('hex')}&state=forged`)).status,
    ).toBe(400);

    const refreshed = await browser.request(`${kit.auth.origin}/oidc/refresh`, { method: 'POST', ...withOrigin() });
    expect(refreshed.status).toBe(204);
    await rememberSessionTokens();

    // A forged logout token, then the provider's own logout, which reaches the app through the back channel.
    const jose = await loadJose();
    const forged = await new jose.SignJWT({ sub: 'alice', events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, jti: randomBytes(8).toString('hex') })
      .setProtectedHeader({ alg: 'HS256', typ: 'logout+jwt' })
      .setIssuer(kit.oidcIdp.issuer)
      .setAudience('portal')
      .setIssuedAt()
      .sign(randomBytes(32));
    remember('forged logout token', forged);
    const refusedLogout = await new TestUserAgent().request(`http://127.0.0.1:${kit.auth.port}/backchannel-logout/corp`, {
      form: { logout_token: forged },
    });
    expect(refusedLogout.status).toBe(400);
    const confirm = await browser.request(`${kit.oidcIdp.issuer}/session/end`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
    remember('provider xsrf', xsrf);
    await browser.request(`${kit.oidcIdp.issuer}/session/end/confirm`, { form: { xsrf: xsrf!, logout: 'yes' } });
    rememberCookies();
    expect((await browser.request(`${kit.auth.origin}/me`, { headers: { Accept: 'application/json' } })).status).toBe(401);
  });

  it('QR login through the provider, a replayed code, and a refresh of the provider token', async () => {
    const start = await browser.request(`${kit.auth.origin}/login/qr?return_to=${encodeURIComponent(`${kit.auth.origin}/me`)}`);
    expect(start.status).toBe(302);
    rememberQuery('QR login', start.location, ['state']);
    const page = await browser.request(start.location!);
    expect(page.status).toBe(200);
    const redirection = /data-redirection-url="([^"]+)"/.exec(page.body)?.[1]?.replace(/&amp;/g, '&');
    const authCode = /\/sns\/qr-logins\/([^/]+)\/redirection/.exec(redirection ?? '')?.[1];
    remember('QR auth_code', authCode);
    rememberCookies();
    const phone = await kit.phoneToken('alice');
    remember('phone app token', phone);
    for (const status of ['scanned', 'confirmed']) {
      const patched = await fetch(`${kit.qrIdp.url}/sns/qr-logins/${authCode}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${phone}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status }),
      });
      expect(patched.status).toBe(200);
    }
    const collected = await browser.request(redirection!);
    expect(collected.status).toBe(302);
    rememberQuery('QR callback', collected.location, ['code', 'state']);
    const done = await browser.follow(collected.location!);
    expect(done[done.length - 1]?.status).toBe(200);
    rememberCookies();
    await rememberSessionTokens();
    // The same code again is refused.
    expect((await browser.request(collected.location!)).status).toBeGreaterThanOrEqual(400);
    const refreshed = await browser.request(`${kit.auth.origin}/qr/refresh`, { method: 'POST', ...withOrigin() });
    expect(refreshed.status).toBe(204);
    await rememberSessionTokens();
  });

  it('Bearer calls, a refresh-token rotation and its replay, Basic calls, each with a failure', async () => {
    const api = new TestUserAgent();
    const token = await kit.apiToken('alice', ['editor']);
    remember('API access token', token);
    const json = { Accept: 'application/json' };
    expect(
      (await api.request(`${kit.auth.origin}/api/reports/42`, { headers: { ...json, Authorization: `Bearer ${token}` } })).status,
    ).toBe(200);
    const tampered = `${token.slice(0, -4)}AAAA`;
    remember('tampered token', tampered);
    expect(
      (await api.request(`${kit.auth.origin}/api/reports`, { headers: { ...json, Authorization: `Bearer ${tampered}` } })).status,
    ).toBe(401);
    const viewer = await kit.apiToken('bob', []);
    remember('token without roles', viewer);
    expect(
      (await api.request(`${kit.auth.origin}/api/reports/7`, { headers: { ...json, Authorization: `Bearer ${viewer}` } })).status,
    ).toBe(403);

    const refreshToken = await kit.issueRefreshToken('alice');
    remember('refresh token', refreshToken);
    const rotated: UserAgentResponse = await api.request(`${kit.auth.origin}/oauth/token`, {
      form: { grant_type: 'refresh_token', refresh_token: refreshToken },
      headers: json,
    });
    expect(rotated.status).toBe(200);
    const issued = JSON.parse(rotated.body) as { access_token: string; refresh_token: string };
    remember('rotated access token', issued.access_token);
    remember('rotated refresh token', issued.refresh_token);
    const replay = await api.request(`${kit.auth.origin}/oauth/token`, {
      form: { grant_type: 'refresh_token', refresh_token: refreshToken },
      headers: json,
    });
    expect(replay.status).toBe(400);

    // A browser's preflight from an allowed sibling and from a foreign site.
    const preflight = (origin: string) =>
      api.request(`${kit.auth.origin}/api/reports`, {
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
      });
    expect((await preflight(`https://shop.example.test:${kit.auth.port}`)).status).toBe(204);
    expect((await preflight('https://evil.test')).status).toBe(403);

    const basic = (password: string) => ({ ...json, Authorization: `Basic ${Buffer.from(`deploy:${password}`).toString('base64')}` });
    expect((await api.request(`${kit.auth.origin}/ops/status`, { headers: basic(kit.secrets.basicPassword) })).status).toBe(200);
    const wrongBasic = `wrong-basic-${randomBytes(6).toString('hex')}`;
    remember('wrong Basic password', wrongBasic);
    remember('Basic header', Buffer.from(`deploy:${kit.secrets.basicPassword}`).toString('base64'));
    expect((await api.request(`${kit.auth.origin}/ops/status`, { headers: basic(wrongBasic) })).status).toBe(401);
  });

  it('a Redis outage answers 503 and is logged without the auth_code, cookie or token of the request', async () => {
    const outageCode = randomBytes(24).toString('base64url');
    remember('auth_code during the outage', outageCode);
    const refresh = await kit.issueRefreshToken('alice');
    remember('refresh token used during the outage', refresh);
    await redis.stop();
    try {
      const json = { Accept: 'application/json' };
      expect((await browser.request(`${kit.auth.origin}/me`, { headers: json })).status).toBe(503);
      expect(
        (await browser.request(`${kit.qrIdp.url}/sns/qr-logins/${outageCode}/events?state=st-${outageCode}`, { headers: json })).status,
      ).toBe(503);
      const token = await new TestUserAgent().request(`${kit.auth.origin}/oauth/token`, {
        form: { grant_type: 'refresh_token', refresh_token: refresh },
        headers: json,
      });
      expect(token.status).toBe(503);
    } finally {
      await redis.start();
    }
    // The 503 is the error handler's line, now a security event (the kit's events are on): time, request id, path.
    await events.flush();
    const outages = recorded.filter((event) => event.type === 'store.unavailable' && event.path === '/sns/qr-logins/[redacted]/events');
    expect(outages).toHaveLength(1);
    expect(outages[0]).toMatchObject({ requestId: expect.any(String), time: expect.any(String), status: 503 });
    expect(logs.containing('"type":"store.unavailable"').length).toBeGreaterThanOrEqual(1);
  });

  it('logout and logout everywhere', async () => {
    const login = await browser.request(`${kit.auth.origin}/login`, {
      form: { username: 'bob', password: kit.secrets.passwords.bob!, return_to: '' },
      ...withOrigin(),
    });
    expect(login.status).toBe(302);
    rememberCookies();
    expect((await browser.request(`${kit.auth.origin}/logout/everywhere`, { method: 'POST', ...withOrigin() })).status).toBe(204);
    expect((await browser.request(`${kit.auth.origin}/logout`, { method: 'POST', ...withOrigin() })).status).toBeLessThan(400);
  });

  it('no captured line and no security event contains any of them', async () => {
    // The capture saw the journey: debug lines of several areas and the outage's error lines.
    const areas = new Set(logs.debugLines().map((line) => /express-sso-kit:(\w+)/.exec(line)?.[1]));
    expect(areas.size).toBeGreaterThanOrEqual(3);
    expect(logs.containing('"status":503').length).toBeGreaterThan(0);
    expect(secrets.size).toBeGreaterThan(40);

    // The events saw the journey too: every kind of decision it went through (Basic checks among the sign-ins,
    // the token without roles as a denied permission), each written to all three sinks.
    await events.flush();
    const types = new Set(recorded.map((event) => event.type));
    expect(recorded.filter((event) => event.method === 'basic').map((event) => event.type)).toEqual(['signin.succeeded', 'signin.failed']);
    for (const type of [
      'signin.failed',
      'signin.succeeded',
      'session.created',
      'session.ended',
      'token.refused',
      'refresh_token.reused',
      'qr.scanned',
      'qr.confirmed',
      'store.unavailable',
      'access.denied',
    ]) {
      expect(types).toContain(type);
    }
    const streamed = await streams.client.xrange(`${streams.prefix}events:all`, '-', '+');
    expect(streamed).toHaveLength(recorded.length);
    const eventTexts = [
      ...recorded.map((event) => ({ source: 'event hook', text: JSON.stringify(event) })),
      ...streamed.map(([, fields]) => ({ source: 'event stream', text: fields.join(' ') })),
    ];
    for (const { source, text } of eventTexts) {
      for (const [secret, label] of secrets) {
        if (text.includes(secret)) throw new Error(`${label} in ${source}: ${text.split(secret).join(`<${label}>`).slice(0, 300)}`);
      }
    }

    const leaks: string[] = [];
    for (const line of logs.lines) {
      for (const [secret, label] of secrets) {
        if (line.text.includes(secret))
          leaks.push(`${label} in ${line.source}: ${line.text.split(secret).join(`<${label}>`).slice(0, 300)}`);
      }
    }
    expect(leaks).toEqual([]);
  });
});
