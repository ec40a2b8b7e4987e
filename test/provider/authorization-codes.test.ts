import { randomBytes } from 'node:crypto';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import { OpenidClientFlows } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

// How long what the provider hands out lives: authorization codes briefly (ASVS 5.0 10.4.3), with PKCE S256 only
// (10.4.6), and refresh tokens never past the expiry of the first one of their grant, however often they rotate
// (10.4.8).

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;
let flows: OpenidClientFlows;
let config: OpenidClient.Configuration;

beforeAll(async () => {
  redis = await testRedisStore('op-lifetimes');
  portal = await startProviderPortal({
    store: redis.store,
    clients: [{ clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] }],
  });
  flows = await OpenidClientFlows.load(portal);
  config = await flows.config('partner', SECRET);
});

afterAll(async () => {
  await portal?.close();
  await redis?.cleanup();
});

async function signedIn(): Promise<TestBrowser> {
  const browser = new TestBrowser(portal);
  await browser.signIn('alice');
  return browser;
}

async function stored(model: string, id: string): Promise<{ iat: number; exp: number }> {
  const text = await redis.store.get(`op:${model}:{${id}}`);
  if (text === null) throw new Error(`no ${model} ${id} in the store`);
  return JSON.parse(text) as { iat: number; exp: number };
}

describe('authorization codes', () => {
  it('gives an authorization code 60 seconds to live', async () => {
    const started = await flows.start(config, REDIRECT);
    const callback = await flows.authorize(await signedIn(), started, REDIRECT);
    const code = await stored('AuthorizationCode', callback.searchParams.get('code')!);
    expect(code.exp - code.iat).toBe(60);
  });

  it('refuses the plain PKCE method', async () => {
    const verifier = flows.client.randomPKCECodeVerifier();
    const started = await flows.start(config, REDIRECT, { code_challenge: verifier, code_challenge_method: 'plain' });
    const { location } = await (await signedIn()).follow(started.url.href);
    const answer = new URL(location);
    expect(answer.searchParams.get('code')).toBeNull();
    expect(answer.searchParams.get('error')).toBe('invalid_request');
  });
});

describe('refresh tokens', () => {
  it('keeps a rotated refresh token to the expiry of the first one', async () => {
    const { tokens } = await flows.login(config, await signedIn(), REDIRECT);
    const first = await stored('RefreshToken', tokens.refresh_token!);
    // A rotation a couple of seconds later: a sliding lifetime would give the new token a later expiry.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const rotated = await flows.client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
    const second = await stored('RefreshToken', rotated.refresh_token!);
    expect(second.iat).toBeGreaterThan(first.iat);
    expect(second.exp).toBe(first.exp);
  });
});
