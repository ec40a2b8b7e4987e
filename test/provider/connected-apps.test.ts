import { randomBytes } from 'node:crypto';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import { accountAdmin, memoryUserDirectory } from '../../lib/accounts';
import { endProviderAccess } from '../../lib/provider/provider-access';
import { startBackchannelReceiver, type BackchannelReceiver } from '../helpers/backchannel-receiver';
import { recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { OpenidClientFlows, type TokenResult } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

const SECRET = `saas-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://saas.test/callback';
const ALICE = 'directory:local|alice';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;
let receiver: BackchannelReceiver;
let recorder: EventRecorder;
let flows: OpenidClientFlows;
let saas: OpenidClient.Configuration;

beforeAll(async () => {
  redis = await testRedisStore('op-connected-apps');
  receiver = await startBackchannelReceiver();
  recorder = recordEvents({ app: 'auth' });
  portal = await startProviderPortal({
    store: redis.store,
    clients: [
      {
        clientId: 'saas',
        clientSecret: SECRET,
        redirectUris: [REDIRECT],
        thirdParty: true,
        name: 'SaaS Tool',
        backchannelLogoutUri: receiver.url,
      },
      {
        clientId: 'viewer',
        clientSecret: SECRET,
        redirectUris: [REDIRECT],
        thirdParty: true,
        name: 'Viewer',
        grantTypes: ['authorization_code'],
      },
    ],
    provider: { events: recorder.events },
  });
  flows = await OpenidClientFlows.load(portal);
  saas = await flows.config('saas', SECRET);
});
afterEach(() => recorder.clear());
afterAll(async () => {
  await portal?.close();
  await receiver?.close();
  await recorder?.events.close();
  await redis?.cleanup();
});

/** Signs alice in at the third-party client through the consent page; answers the consent page and the tokens. */
async function consentedAt(config: OpenidClient.Configuration, browser: TestBrowser): Promise<{ page: string; tokens: TokenResult }> {
  const started = await flows.start(config, REDIRECT, { scope: 'openid profile email offline_access' });
  const { location, response } = await browser.follow(started.url.href);
  const page = await response.text();
  // A consent remembered from an earlier test goes straight back to the client.
  const callback = location.startsWith(REDIRECT)
    ? location
    : (await browser.follow(`${location}/consent`, { method: 'POST', form: {} })).location;
  const tokens = await flows.exchange(config, new URL(callback), started);
  return { page, tokens };
}

async function signedIn(): Promise<TestBrowser> {
  const browser = new TestBrowser(portal);
  await browser.signIn('alice');
  return browser;
}

describe('the consent page', () => {
  it('says what the client gets, for how long, that it keeps access while the user is away, and where to withdraw it', async () => {
    const { page } = await consentedAt(saas, await signedIn());
    expect(page).toContain('<h1>Allow SaaS Tool?</h1>');
    expect(page).toContain('See your email address');
    expect(page).toContain('Each access it gets works for 10 minutes.');
    expect(page).toMatch(/keeps this access while you are away: it can renew it without you for up to 14 days/);
    expect(page).toContain('Your answer is remembered for 365 days.');
    expect(page).toContain('<a href="/connected-apps">Connected apps</a>');
  });

  it('tells a client without refresh tokens that it gets no access while the user is away', async () => {
    const viewer = await flows.config('viewer', SECRET);
    const { page } = await consentedAt(viewer, await signedIn());
    expect(page).toContain('Viewer gets no access while you are away');
  });
});

describe('Connected apps', () => {
  it('lists every client the user allowed, with its scopes and last use', async () => {
    const browser = await signedIn();
    await consentedAt(saas, browser);
    const listed = await browser.request(`${portal.issuer}/connected-apps`);
    expect(listed.status).toBe(200);
    const page = await listed.text();
    expect(page).toContain('SaaS Tool');
    expect(page).toContain('See your email address');
    expect(page).toMatch(/last used <time datetime="\d{4}-/);
    expect(page).toContain('keeps access while you are away');
    expect(page).toContain('name="client" value="saas"');
  });

  it('withdraws a grant: the refresh token stops working at once, a back-channel logout is sent, consent is asked again', async () => {
    const browser = await signedIn();
    const { tokens } = await consentedAt(saas, browser);
    const refreshed = await flows.client.refreshTokenGrant(saas, tokens.refresh_token!);
    expect(refreshed.access_token).toEqual(expect.any(String));
    const withdrawn = await browser.request(`${portal.issuer}/connected-apps/withdraw`, { method: 'POST', form: { client: 'saas' } });
    expect(withdrawn.status).toBe(303);
    expect(withdrawn.headers.get('location')).toBe('/connected-apps?withdrawn=1');
    await expect(flows.client.refreshTokenGrant(saas, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await flows.client.tokenIntrospection(saas, refreshed.access_token)).active).toBe(false);
    expect(await receiver.next()).toEqual(expect.any(String));
    expect(recorder.recorded.find((event) => event.type === 'provider.consent.withdrawn')).toMatchObject({
      reason: 'user',
      clientId: 'saas',
      userId: ALICE,
    });
    expect(recorder.recorded.find((event) => event.type === 'provider.grant.revoked')).toMatchObject({
      reason: 'consent_withdrawn',
      clientId: 'saas',
    });
    const page = await (await browser.request(`${portal.issuer}/connected-apps?withdrawn=1`)).text();
    expect(page).not.toContain('value="saas"');
    // The remembered consent is gone: the next sign-in at the client shows the consent page again.
    const again = await flows.start(saas, REDIRECT);
    const { location } = await browser.follow(again.url.href);
    expect(location).toContain('/interaction/');
  });

  it('lists and withdraws a remembered consent whose grants already ended with their session', async () => {
    const first = await signedIn();
    await consentedAt(saas, first);
    // Signing out everywhere revokes the grants, but the consent is still remembered for the next sign-in.
    await portal.sessions.manager.logoutEverywhere(ALICE);
    await receiver.next();
    const browser = await signedIn();
    const page = await (await browser.request(`${portal.issuer}/connected-apps`)).text();
    expect(page).toContain('name="client" value="saas"');
    const withdrawn = await browser.request(`${portal.issuer}/connected-apps/withdraw`, { method: 'POST', form: { client: 'saas' } });
    expect(withdrawn.status).toBe(303);
    const again = await flows.start(saas, REDIRECT);
    expect((await browser.follow(again.url.href)).location).toContain('/interaction/');
  });

  it('refuses a withdrawal from another origin, without a session, or of a client it does not have', async () => {
    const browser = await signedIn();
    const { tokens } = await consentedAt(saas, browser);
    const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const forged = await fetch(`${portal.issuer}/connected-apps/withdraw`, {
      method: 'POST',
      headers: { cookie, origin: 'https://evil.test', 'x-forwarded-proto': 'https', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'client=saas',
      redirect: 'manual',
    });
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { code: string }).code).toBe('csrf_origin');
    const anonymous = await new TestBrowser(portal).request(`${portal.issuer}/connected-apps/withdraw`, {
      method: 'POST',
      form: { client: 'saas' },
    });
    expect(anonymous.status).toBe(401);
    const unknown = await browser.request(`${portal.issuer}/connected-apps/withdraw`, { method: 'POST', form: { client: 'nobody' } });
    expect(unknown.status).toBe(404);
    const empty = await browser.request(`${portal.issuer}/connected-apps/withdraw`, { method: 'POST', form: {} });
    expect(empty.status).toBe(400);
    // Nothing was withdrawn by the refused requests.
    expect((await flows.client.refreshTokenGrant(saas, tokens.refresh_token!)).access_token).toEqual(expect.any(String));
  });

  it('ends every grant of an account whose access is ended from another process sharing the store', async () => {
    const browser = await signedIn();
    const { tokens } = await consentedAt(saas, browser);
    await endProviderAccess(redis.store, ALICE);
    await expect(flows.client.refreshTokenGrant(saas, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await receiver.next();
    const deadline = Date.now() + 5000;
    while ((await flows.client.tokenIntrospection(saas, tokens.access_token)).active && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await flows.client.tokenIntrospection(saas, tokens.access_token)).active).toBe(false);
  });

  it('accountAdmin.disable ends the user’s sessions and every provider grant: refresh token refused, back-channel logout sent', async () => {
    const browser = await signedIn();
    const { tokens } = await consentedAt(saas, browser);
    const users = memoryUserDirectory({ source: 'directory:local' });
    await users.createUser({ id: 'alice', username: 'alice', name: 'Alice' });
    const admin = accountAdmin({ users, sessions: portal.sessions, store: redis.store, events: recorder.events });
    await admin.disable('alice');
    await expect(flows.client.refreshTokenGrant(saas, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await receiver.next()).toEqual(expect.any(String));
    // The portal session is gone too.
    expect((await browser.request(`${portal.issuer}/connected-apps`)).status).toBe(401);
    expect(recorder.recorded.map((event) => event.type)).toEqual(expect.arrayContaining(['account.disabled', 'session.ended']));
  });
});
