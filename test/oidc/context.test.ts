import { Router } from 'express';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { TestUserAgent } from '../helpers/http-user-agent';
import { oidcContext, oidcProvider } from '../../lib/oidc';
import type { KeyValueStore } from '../../lib/store';

/** Wraps a store and counts the calls that touch refresh-lock keys, by method. */
function countingLockStore(store: KeyValueStore): { store: KeyValueStore; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (typeof args[0] === 'string' && args[0].startsWith('oidc-refresh:'))
          calls[String(property)] = (calls[String(property)] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: wrapped, calls };
}

const SECRET = 'context-client-secret-0123456789abcdef';

describe('oidcContext options', () => {
  const corp = oidcProvider({
    issuer: 'https://idp.example.test',
    clientId: 'c',
    clientSecret: SECRET,
    redirectUri: 'https://auth.example.test/cb',
  });

  it('refuses a provider without a store for the refresh lock', () => {
    expect(() => oidcContext(corp)).toThrow(/no store for the refresh lock/);
  });

  it('detects app.use(oidcContext) written for app.use(oidcContext(provider))', () => {
    const fakeRequest = { method: 'GET', headers: {} } as never;
    expect(() => oidcContext(fakeRequest)).toThrow(/it is a factory/);
  });
});

describe('req.oidc with a real provider', () => {
  let apps: SsoApps;
  let idp: TestIdp;
  let counted: ReturnType<typeof countingLockStore>;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-context');
    counted = countingLockStore(apps.store);
    idp = await startTestIdp({ clients: [{ clientId: 'shop', clientSecret: SECRET, redirectUris: [apps.redirectUri('corp')] }] });
    // A margin longer than the access token's life: every accessToken() call must refresh first.
    apps.configure(
      { issuer: idp.issuer, clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true },
      { refreshMarginSeconds: 7200, store: counted.store },
    );
  });
  afterAll(async () => {
    await idp.close();
    await apps.close();
  });
  afterEach(() => {
    idp.tokenDelayMs = 0;
  });

  async function loggedInAgent(): Promise<TestUserAgent> {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/corp`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
    return ua;
  }

  const tokenOf = async (ua: TestUserAgent, origin: string): Promise<string> =>
    JSON.parse((await ua.request(`${origin}/token`)).body).accessToken;

  it('refreshes an access token that expires within the margin, with the refresh_token grant', async () => {
    const ua = await loggedInAgent();
    const before = idp.grants.refresh_token ?? 0;
    const first = await tokenOf(ua, apps.shop.origin);
    expect(typeof first).toBe('string');
    expect(idp.grants.refresh_token).toBe(before + 1);
    const second = await tokenOf(ua, apps.auth.origin);
    expect(second).not.toBe(first);
    expect(idp.grants.refresh_token).toBe(before + 2);
  });

  it('shares one grant call between concurrent refreshes in one instance', async () => {
    const ua = await loggedInAgent();
    const before = idp.grants.refresh_token ?? 0;
    idp.tokenDelayMs = 800;
    const tokens = await Promise.all([tokenOf(ua, apps.shop.origin), tokenOf(ua, apps.shop.origin), tokenOf(ua, apps.shop.origin)]);
    expect(idp.grants.refresh_token).toBe(before + 1);
    expect(new Set(tokens).size).toBe(1);
  });

  it('joins concurrent refreshes of one instance in process: one lock taken, nobody polls the store', async () => {
    const ua = await loggedInAgent();
    for (const key of Object.keys(counted.calls)) delete counted.calls[key];
    idp.tokenDelayMs = 800;
    await Promise.all([tokenOf(ua, apps.shop.origin), tokenOf(ua, apps.shop.origin), tokenOf(ua, apps.shop.origin)]);
    expect(counted.calls.setIfAbsent).toBe(1);
    // The leader's release check is the only read; joiners never poll the lock.
    expect(counted.calls.get).toBe(1);
  });

  it('shares one grant call between concurrent refreshes on two instances (Redis lock), the loser re-reading the session', async () => {
    const ua = await loggedInAgent();
    const before = idp.grants.refresh_token ?? 0;
    idp.tokenDelayMs = 800;
    const [onShop, onAuth] = await Promise.all([tokenOf(ua, apps.shop.origin), tokenOf(ua, apps.auth.origin)]);
    expect(idp.grants.refresh_token).toBe(before + 1);
    expect(onAuth).toBe(onShop);
  });
});

describe('req.oidc refresh edge cases (provider under test control)', () => {
  let apps: SsoApps;
  let fake: FakeIdp;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-context-fake');
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    fake.refreshToken = 'rt-only-once-issued';
    apps.configure({ name: 'fake', issuer: fake.issuer, clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true });
  });
  afterAll(async () => {
    await fake.close();
    await apps.close();
  });
  afterEach(() => {
    fake.tokenMode = 'ok';
    fake.refreshIdToken = undefined;
  });

  async function loggedInAgent(): Promise<TestUserAgent> {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/fake`);
    expect((await ua.request(`${apps.shop.origin}/me`)).status).toBe(200);
    return ua;
  }

  it('keeps the old refresh token when the provider returns none', async () => {
    const ua = await loggedInAgent();
    const first = JSON.parse(
      (await ua.request(`${apps.shop.origin}/refresh`, { method: 'POST', headers: { Origin: apps.shop.origin } })).body,
    );
    expect(first.hasRefreshToken).toBe(true);
    // The fake accepts only the refresh token issued at login: a second refresh works only if it was kept.
    const second = await ua.request(`${apps.shop.origin}/refresh`, { method: 'POST', headers: { Origin: apps.shop.origin } });
    expect(second.status).toBe(200);
    expect(JSON.parse(second.body).accessToken).not.toBe(first.accessToken);
  });

  it('validates an ID token returned by a refresh: another subject is refused (502) and the tokens stay', async () => {
    const ua = await loggedInAgent();
    const before = JSON.parse((await ua.request(`${apps.shop.origin}/token`)).body).accessToken;
    fake.refreshIdToken = (ctx) => ctx.sign({ ...ctx.claims, sub: 'someone-else' });
    const refused = await ua.request(`${apps.shop.origin}/refresh`, {
      method: 'POST',
      headers: { Accept: 'application/json', Origin: apps.shop.origin },
    });
    expect(refused.status).toBe(502);
    expect(JSON.parse((await ua.request(`${apps.shop.origin}/token`)).body).accessToken).toBe(before);
    fake.refreshIdToken = (ctx) => ctx.sign(ctx.claims);
    expect((await ua.request(`${apps.shop.origin}/refresh`, { method: 'POST', headers: { Origin: apps.shop.origin } })).status).toBe(200);
  });

  it('keeps refreshed tokens when a request that loaded the session before the refresh ends after it', async () => {
    const ua = await loggedInAgent();
    let entered = (): void => undefined;
    let release = (): void => undefined;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    apps.shop.app.get('/held-touch', async (req, res) => {
      entered();
      await released;
      // What ssoSession's lazy idle-timer touch does (at least 1 ms later, so the session surely changes).
      req.session.meta!.lastSeenAt = Math.max(Date.now(), req.session.meta!.lastSeenAt + 1);
      res.json({ touched: true });
    });
    const held = ua.request(`${apps.shop.origin}/held-touch`);
    await inHandler;
    const refreshed = JSON.parse(
      (await ua.request(`${apps.shop.origin}/refresh`, { method: 'POST', headers: { Origin: apps.shop.origin } })).body,
    ).accessToken;
    release();
    expect((await held).status).toBe(200);
    expect(JSON.parse((await ua.request(`${apps.auth.origin}/token`)).body).accessToken).toBe(refreshed);
  });

  it('answers 401 and ends the OIDC tokens when the provider refuses the refresh (invalid_grant)', async () => {
    const ua = await loggedInAgent();
    fake.tokenMode = 'invalid_grant';
    const refused = await ua.request(`${apps.shop.origin}/refresh`, {
      method: 'POST',
      headers: { Accept: 'application/json', Origin: apps.shop.origin },
    });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body).code).toBe('oidc_refresh_refused');
    fake.tokenMode = 'ok';
    const after = await ua.request(`${apps.shop.origin}/token`);
    expect(JSON.parse(after.body).accessToken).toBeNull();
  });
});

describe('req.oidc is bound to the issuer the tokens came from', () => {
  let apps: SsoApps;
  let loggedInAt: FakeIdp;
  let namesake: FakeIdp;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-context-issuer');
    loggedInAt = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    loggedInAt.refreshToken = 'rt-of-the-first-provider';
    namesake = await startFakeIdp({ clientId: 'shop', clientSecret: SECRET });
    const options = { name: 'corp', clientId: 'shop', clientSecret: SECRET, allowInsecureLocalDevelopment: true };
    // auth logs in through "corp" at one issuer; shop gives the name "corp" to a provider at another issuer.
    apps.configure({ ...options, issuer: loggedInAt.issuer }, { refreshMarginSeconds: 7200 });
    const shopRoutes = Router();
    shopRoutes.use(
      oidcContext(oidcProvider({ ...options, issuer: namesake.issuer, redirectUri: apps.redirectUri('corp'), store: apps.store }), {
        refreshMarginSeconds: 7200,
      }),
    );
    shopRoutes.get('/token', async (req, res, next) => {
      try {
        res.json({ context: req.oidc !== undefined, accessToken: (await req.oidc?.accessToken()) ?? null });
      } catch (error) {
        next(error);
      }
    });
    apps.shop.mount(shopRoutes);
  });
  afterAll(async () => {
    await loggedInAt.close();
    await namesake.close();
    await apps.close();
  });

  it("never sends a session's refresh token to another issuer's provider of the same name", async () => {
    const ua = new TestUserAgent();
    await ua.follow(`${apps.auth.origin}/login/corp`);
    const onShop = JSON.parse((await ua.request(`${apps.shop.origin}/token`)).body);
    expect(onShop).toEqual({ context: false, accessToken: null });
    expect(namesake.hits.token).toBe(0);
    // The provider the tokens came from still refreshes them.
    const refreshesBefore = loggedInAt.hits.refresh;
    const onAuth = JSON.parse((await ua.request(`${apps.auth.origin}/token`)).body);
    expect(typeof onAuth.accessToken).toBe('string');
    expect(loggedInAt.hits.refresh).toBe(refreshesBefore + 1);
  });
});
