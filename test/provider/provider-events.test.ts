import { randomBytes } from 'node:crypto';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import { RedisStore } from '../../lib';
import { recordEvents, type EventRecorder } from '../helpers/event-recorder';
import { OpenidClientFlows } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { freePort, startPrivateRedis, testPrefix, type PrivateRedis } from '../helpers/redis';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';
const ALICE = 'directory:local|alice';

describe('OpenID Provider events', () => {
  let redis: PrivateRedis;
  let store: RedisStore;
  let recorder: EventRecorder;
  let portal: ProviderPortal;
  let flows: OpenidClientFlows;
  let partner: OpenidClient.Configuration;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    store = new RedisStore(redis.url, { prefix: testPrefix('op-events') });
    recorder = recordEvents({ app: 'auth' });
    // Nothing listens on this port: every back-channel logout to the "gone" client fails.
    const closedPort = await freePort();
    portal = await startProviderPortal({
      store,
      clients: [
        { clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] },
        { clientId: 'saas', clientSecret: SECRET, redirectUris: [REDIRECT], thirdParty: true, name: 'SaaS Tool' },
        { clientId: 'gone', clientSecret: SECRET, redirectUris: [REDIRECT], backchannelLogoutUri: `http://127.0.0.1:${closedPort}/bcl` },
      ],
      provider: { events: recorder.events },
    });
    flows = await OpenidClientFlows.load(portal);
    partner = await flows.config('partner', SECRET);
  });
  afterEach(() => recorder.clear());
  afterAll(async () => {
    await portal?.close();
    await recorder.events.close();
    await store.close();
    await redis.stop();
  });

  async function signedIn(username = 'alice'): Promise<TestBrowser> {
    const browser = new TestBrowser(portal);
    await browser.signIn(username);
    return browser;
  }

  it('records provider.token.issued for a code exchange, with the client and the user', async () => {
    await flows.login(partner, await signedIn(), REDIRECT);
    expect(await recorder.only('provider.token.issued')).toMatchObject({
      outcome: 'success',
      reason: 'authorization_code',
      clientId: 'partner',
      userId: ALICE,
      requestId: expect.any(String),
      network: '127.0.0.1/32',
    });
  });

  it('records provider.token.refused (invalid_grant) for a code used twice, and the grant revoked', async () => {
    const { callback, started } = await flows.login(partner, await signedIn(), REDIRECT);
    await recorder.clear();
    await expect(flows.exchange(partner, callback, started)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await recorder.only('provider.token.refused')).toMatchObject({
      reason: 'invalid_grant',
      clientId: 'partner',
      grantType: 'authorization_code',
    });
    expect(await recorder.only('provider.grant.revoked')).toMatchObject({ reason: 'token_reuse', clientId: 'partner' });
  });

  it('records a refresh token presented twice as refused, with its grant revoked', async () => {
    const { tokens } = await flows.login(partner, await signedIn(), REDIRECT);
    await flows.client.refreshTokenGrant(partner, tokens.refresh_token!);
    await recorder.clear();
    await expect(flows.client.refreshTokenGrant(partner, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await recorder.only('provider.token.refused')).toMatchObject({ reason: 'invalid_grant', grantType: 'refresh_token' });
    expect(await recorder.only('provider.grant.revoked')).toMatchObject({ reason: 'token_reuse', clientId: 'partner' });
    expect(JSON.stringify(recorder.recorded)).not.toContain(tokens.refresh_token!);
  });

  it('records provider.grant.revoked (token_revocation) at the revocation endpoint', async () => {
    const { tokens } = await flows.login(partner, await signedIn(), REDIRECT);
    await recorder.clear();
    await flows.client.tokenRevocation(partner, tokens.refresh_token!);
    expect(await recorder.only('provider.grant.revoked')).toMatchObject({ reason: 'token_revocation', clientId: 'partner' });
  });

  it('records provider.authorization.refused for a request without PKCE', async () => {
    const started = await flows.start(partner, REDIRECT);
    started.url.searchParams.delete('code_challenge');
    started.url.searchParams.delete('code_challenge_method');
    await (await signedIn()).follow(started.url.href);
    expect(await recorder.only('provider.authorization.refused')).toMatchObject({ reason: 'invalid_request', clientId: 'partner' });
  });

  it('records provider.consent.granted with the scopes, and provider.consent.denied', async () => {
    const saas = await flows.config('saas', SECRET);
    const browser = await signedIn('alice');
    const started = await flows.start(saas, REDIRECT);
    const { location } = await browser.follow(started.url.href);
    await browser.follow(`${location}/consent`, { method: 'POST', form: {} });
    expect(await recorder.only('provider.consent.granted')).toMatchObject({
      reason: 'user',
      clientId: 'saas',
      userId: ALICE,
      scopes: expect.arrayContaining(['openid', 'profile', 'email']),
    });
    const bob = await signedIn('bob');
    const again = await flows.start(saas, REDIRECT);
    const asked = await bob.follow(again.url.href);
    await bob.follow(`${asked.location}/abort`, { method: 'POST', form: {} });
    expect(await recorder.only('provider.consent.denied')).toMatchObject({
      reason: 'user',
      clientId: 'saas',
      userId: 'directory:local|bob',
    });
  });

  it('records provider.backchannel.failed for a client that does not take its logout token, and its grant revoked', async () => {
    const gone = await flows.config('gone', SECRET);
    const browser = await signedIn('alice');
    await flows.login(gone, browser, REDIRECT);
    const failed = recorder.next('provider.backchannel.failed');
    const revoked = recorder.next('provider.grant.revoked');
    expect((await browser.request(`${portal.issuer}/logout`, { method: 'POST' })).status).toBe(303);
    expect(await failed).toMatchObject({ outcome: 'failure', reason: 'delivery_failed', clientId: 'gone', userId: ALICE });
    expect(await revoked).toMatchObject({ reason: 'session_ended', clientId: 'gone', userId: ALICE });
  });

  it('records store.unavailable when the provider answers 503 for its store', async () => {
    const { tokens } = await flows.login(partner, await signedIn(), REDIRECT);
    await recorder.clear();
    await redis.stop();
    try {
      await expect(flows.client.refreshTokenGrant(partner, tokens.refresh_token!)).rejects.toBeDefined();
    } finally {
      await redis.start();
    }
    expect(await recorder.only('store.unavailable')).toMatchObject({ status: 503, httpMethod: 'POST', path: '/oidc/token' });
  });
});
