import { startFakeIdp, type FakeIdp } from '../helpers/fake-oidc-provider';
import { heapAfterGc } from '../helpers/fault-probes';
import { TestUserAgent } from '../helpers/http-user-agent';
import { startSsoApps, type SsoApps } from '../helpers/oidc-apps';
import { freePort } from '../helpers/redis';

const CLIENT_SECRET = 'faults-client-secret-0123456789abcdef';
// The provider's timeout for these tests; a hung token endpoint must end the callback shortly after it.
const IDP_TIMEOUT_MS = 1000;

describe('the OIDC callback when the identity provider fails', () => {
  let apps: SsoApps;
  let fake: FakeIdp;
  let providers = 0;

  beforeAll(async () => {
    apps = await startSsoApps('oidc-faults');
    fake = await startFakeIdp({ clientId: 'shop', clientSecret: CLIENT_SECRET });
  });

  afterAll(async () => {
    await fake?.close();
    await apps?.close();
  });

  afterEach(() => {
    fake.tokenMode = 'ok';
    fake.discovery = {};
  });

  /** A provider of its own per case, so each case's discovery (possibly overridden) is fetched fresh. */
  function newProvider(): string {
    providers += 1;
    const name = `faults${providers}`;
    apps.configure({
      name,
      issuer: fake.issuer,
      clientId: 'shop',
      clientSecret: CLIENT_SECRET,
      allowInsecureLocalDevelopment: true,
      timeoutSeconds: IDP_TIMEOUT_MS / 1000,
    });
    return name;
  }

  /** A browser login up to the callback's answer; returns that answer, how long it took, and /me on the shop. */
  async function login(name: string) {
    const ua = new TestUserAgent();
    const chain = await ua.follow(`${apps.auth.origin}/login/${name}`, { stopAt: (url) => url.startsWith(apps.shop.origin) });
    const callback = chain.find((hop) => hop.url.startsWith(`${apps.auth.origin}/callback/${name}`));
    if (!callback) throw new Error(`the login never reached the callback: ${chain.map((hop) => `${hop.status} ${hop.url}`).join(' → ')}`);
    const me = await ua.request(`${apps.shop.origin}/me`);
    return { callback, me };
  }

  async function timedLogin(name: string) {
    const started = Date.now();
    const result = await login(name);
    return { ...result, ms: Date.now() - started };
  }

  it('answers 503 with Retry-After when the token endpoint refuses connections, and logs nobody in', async () => {
    fake.discovery = { token_endpoint: `http://127.0.0.1:${await freePort()}/token` };
    const { callback, me } = await timedLogin(newProvider());
    expect({ status: callback.status, retryAfter: typeof callback.headers['retry-after'] }).toEqual({ status: 503, retryAfter: 'string' });
    expect(me.status).toBe(401);
  });

  it('answers 503 with Retry-After within its timeout when the token endpoint hangs', async () => {
    fake.tokenMode = 'slow';
    const { callback, me, ms } = await timedLogin(newProvider());
    expect({ status: callback.status, retryAfter: typeof callback.headers['retry-after'] }).toEqual({ status: 503, retryAfter: 'string' });
    // The whole browser journey (login redirect, authorize, callback) within the timeout plus a margin.
    expect(ms).toBeLessThan(IDP_TIMEOUT_MS + 1500);
    expect(me.status).toBe(401);
  });

  it.each([
    ['a 500', 'status500'],
    ['an HTML page instead of JSON', 'html'],
  ] as const)('answers 502 with Retry-After when the token endpoint answers %s, and logs nobody in', async (_what, mode) => {
    fake.tokenMode = mode;
    const { callback, me } = await timedLogin(newProvider());
    expect({ status: callback.status, retryAfter: typeof callback.headers['retry-after'] }).toEqual({ status: 502, retryAfter: 'string' });
    expect(me.status).toBe(401);
  });

  it('logs in again as soon as the token endpoint is back, without a restart', async () => {
    const name = newProvider();
    fake.tokenMode = 'status500';
    expect((await login(name)).callback.status).toBe(502);
    fake.tokenMode = 'ok';
    const { callback, me } = await login(name);
    expect(callback.status).toBe(302);
    expect(me.status).toBe(200);
  });

  it('does not grow the heap over repeated provider failures', async () => {
    const name = newProvider();
    const cycle = async () => {
      fake.tokenMode = 'status500';
      for (let index = 0; index < 5; index += 1) expect((await login(name)).callback.status).toBe(502);
      fake.tokenMode = 'ok';
      expect((await login(name)).me.status).toBe(200);
    };
    await cycle();
    const baseline = heapAfterGc();
    for (let round = 0; round < 5; round += 1) await cycle();
    const growth = heapAfterGc() - baseline;
    console.log(`oidc failures: heap after GC grew ${(growth / 1024).toFixed(0)} KiB over 5 cycles of 5 failed logins and one good one`);
    expect(growth).toBeLessThan(8 * 1024 * 1024);
  }, 60_000);
});
