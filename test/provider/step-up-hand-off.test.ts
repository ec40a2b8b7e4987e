import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { KeyValueCredentialStore } from '../../lib/credentials';
import { OpenidClientFlows } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';

// The portal's OpenID Provider hands a client's acr_values the session does not meet to the portal's own step-up
// page: the user presents only the missing factor and the client gets an ID token saying so (acr 2fa, amr otp).
describe('the provider’s acr_values through the portal’s step-up page', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let portal: ProviderPortal;
  let flows: OpenidClientFlows;

  beforeAll(async () => {
    redis = await testRedisStore('op-step-up');
    portal = await startProviderPortal({
      store: redis.store,
      clients: [{ clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] }],
      portal: { twoFactor: { credentials: new KeyValueCredentialStore(redis.store), sealingKey: randomBytes(32), issuer: 'Example' } },
      stepUpAtPortal: true,
    });
    flows = await OpenidClientFlows.load(portal);
  });
  afterAll(async () => {
    await portal?.close();
    await redis?.cleanup();
  });

  /** The hidden fields of the form for `method` (or the first form). */
  function fields(html: string, method?: string): Record<string, string> {
    const forms = html.split('<form').slice(1);
    const form = (method === undefined ? forms[0] : forms.find((text) => text.includes(`data-method="${method}"`))) ?? '';
    return Object.fromEntries(
      [...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]!.replace(/&amp;/g, '&')]),
    );
  }

  it('asks only the second factor, then issues an ID token with acr 2fa and amr otp', async () => {
    const config = await flows.config('partner', SECRET);
    // Alice sets up her authenticator app in one browser.
    const setup = new TestBrowser(portal);
    await setup.signIn('alice');
    const page = await (await setup.request(`${portal.issuer}/two-factor/totp`)).text();
    const secret = /data-totp-secret>([A-Z2-7 ]+)</.exec(page)![1]!.replace(/ /g, '');
    const code = (offset: number) => new TOTP({ secret: Secret.fromBase32(secret) }).generate({ timestamp: Date.now() + offset * 30_000 });
    expect(
      (await setup.request(`${portal.issuer}/two-factor/totp`, { method: 'POST', form: { ...fields(page), code: code(0) } })).status,
    ).toBe(200);

    // Later, a password-only session in another browser meets a client that asks for 2fa.
    const browser = new TestBrowser(portal);
    await browser.signIn('alice');
    const started = await flows.start(config, REDIRECT, { acr_values: '2fa' });
    const { location } = await browser.follow(started.url.href);
    const stepUp = new URL(location.replace('https:', 'http:'));
    expect(stepUp.pathname).toBe('/step-up');
    expect(stepUp.searchParams.get('acr')).toBe('2fa');
    const stepUpPage = await (await browser.request(stepUp.href)).text();
    expect(stepUpPage).not.toContain('name="password"');
    const answer = await browser.request(`${portal.issuer}/step-up`, {
      method: 'POST',
      form: { ...fields(stepUpPage, 'totp'), code: code(1) },
    });
    expect(answer.status).toBe(303);
    const done = await browser.follow(stepUp.searchParams.get('return_to')!);
    const callback = new URL(done.location);
    expect(callback.searchParams.get('code')).toEqual(expect.any(String));
    const claims = (await flows.exchange(config, callback, started)).claims()!;
    expect(claims.sub).toBe('directory:local|alice');
    expect(claims.acr).toBe('2fa');
    expect(claims.amr).toEqual(['pwd', 'otp']);
    expect(claims.auth_time).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 10);
  });
});
