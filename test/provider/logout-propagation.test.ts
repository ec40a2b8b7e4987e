import { randomBytes } from 'node:crypto';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import { startBackchannelReceiver, type BackchannelReceiver } from '../helpers/backchannel-receiver';
import { loadJose } from '../helpers/jose-tokens';
import { OpenidClientFlows, type TokenResult } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';
const AFTER_LOGOUT = 'https://partner.test/signed-out';
const ALICE = 'directory:local|alice';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;
let receiver: BackchannelReceiver;
let flows: OpenidClientFlows;
let config: OpenidClient.Configuration;

beforeAll(async () => {
  redis = await testRedisStore('op-logout');
  receiver = await startBackchannelReceiver();
  portal = await startProviderPortal({
    store: redis.store,
    clients: [
      {
        clientId: 'partner',
        clientSecret: SECRET,
        redirectUris: [REDIRECT],
        postLogoutRedirectUris: [AFTER_LOGOUT],
        backchannelLogoutUri: receiver.url,
      },
    ],
  });
  flows = await OpenidClientFlows.load(portal);
  config = await flows.config('partner', SECRET);
});

afterAll(async () => {
  await portal?.close();
  await receiver?.close();
  await redis?.cleanup();
});

async function signedInAtPartner(): Promise<{ browser: TestBrowser; tokens: TokenResult }> {
  const browser = new TestBrowser(portal);
  await browser.signIn('alice');
  const { tokens } = await flows.login(config, browser, REDIRECT);
  return { browser, tokens };
}

/** Checks the logout token as the relying party must (OpenID Back-Channel Logout 1.0 §2.6) and returns its claims. */
async function expectLogoutTokenFor(token: string, tokens: TokenResult): Promise<void> {
  const jose = await loadJose();
  const jwks = jose.createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
  const { payload, protectedHeader } = await jose.jwtVerify(token, jwks, { issuer: portal.issuer, audience: 'partner' });
  expect(protectedHeader.typ).toBe('logout+jwt');
  expect(payload.events).toEqual({ 'http://schemas.openid.net/event/backchannel-logout': {} });
  expect(payload.sub).toBe(ALICE);
  expect(payload.sid).toBe(tokens.claims()!.sid);
  expect(payload.nonce).toBeUndefined();
}

async function expectTokensRevoked(tokens: TokenResult): Promise<void> {
  await expect(flows.client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  expect((await flows.client.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
}

describe('ending the portal session logs the user out of the provider clients', () => {
  it('sends a back-channel logout token and revokes the tokens on logout everywhere', async () => {
    const { browser, tokens } = await signedInAtPartner();
    expect(tokens.claims()!.sid).toEqual(expect.any(String));
    const ended = await browser.request(`${portal.issuer}/logout-everywhere`, { method: 'POST' });
    expect(ended.status).toBe(200);
    await expectLogoutTokenFor(await receiver.next(), tokens);
    await expectTokensRevoked(tokens);
  });

  it('does the same when the browser signs out of the portal', async () => {
    const { browser, tokens } = await signedInAtPartner();
    expect((await browser.request(`${portal.issuer}/logout`, { method: 'POST' })).status).toBe(303);
    await expectLogoutTokenFor(await receiver.next(), tokens);
    await expectTokensRevoked(tokens);
  });

  it('does the same when the session is revoked from another browser on the sessions page', async () => {
    const { tokens } = await signedInAtPartner();
    const other = new TestBrowser(portal);
    await other.signIn('alice');
    const page = await (await other.request(`${portal.issuer}/sessions`)).text();
    const handles = [...page.matchAll(/<li( aria-current="true")?>.*?name="session" value="([^"]+)"/g)];
    const revoke = handles.filter((match) => !match[1]).map((match) => match[2]!);
    expect(revoke.length).toBeGreaterThan(0);
    for (const handle of revoke) {
      await other.request(`${portal.issuer}/sessions/revocations`, { method: 'POST', form: { session: handle } });
    }
    await expectLogoutTokenFor(await receiver.next(), tokens);
    await expectTokensRevoked(tokens);
  });

  it('does the same when an administrator ends the user sessions through the session manager', async () => {
    const { tokens } = await signedInAtPartner();
    await portal.sessions.manager.logoutEverywhere(ALICE);
    await expectLogoutTokenFor(await receiver.next(), tokens);
    await expectTokensRevoked(tokens);
  });
});

describe('RP-initiated logout at the provider', () => {
  it('ends the portal session after the user confirms, and notifies the clients', async () => {
    const { browser, tokens } = await signedInAtPartner();
    const endSession = new URL(config.serverMetadata().end_session_endpoint!);
    endSession.searchParams.set('id_token_hint', tokens.id_token!);
    endSession.searchParams.set('post_logout_redirect_uri', AFTER_LOGOUT);
    const confirm = await browser.request(endSession.href);
    expect(confirm.status).toBe(200);
    const page = await confirm.text();
    expect(page).not.toMatch(/<script>|style=/);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)![1]!;
    const done = await browser.follow(`${portal.issuer}/oidc/session/end/confirm`, { method: 'POST', form: { xsrf, logout: 'yes' } });
    expect(done.location.startsWith(AFTER_LOGOUT)).toBe(true);
    await expectLogoutTokenFor(await receiver.next(), tokens);
    // The parent-domain session is gone: the portal asks for a sign-in again.
    const sessions = await browser.request(`${portal.issuer}/sessions`);
    expect(sessions.status).toBe(303);
    expect(sessions.headers.get('location')).toMatch(/\/login/);
    await expectTokensRevoked(tokens);
  });
});
