import { randomBytes } from 'node:crypto';
import dns from 'node:dns';
import { isIP } from 'node:net';
import type * as OpenidClient from 'openid-client' with { 'resolution-mode': 'import' };
import { backchannelFetch, isSpecialUseAddress } from '../../lib/provider/backchannel-fetch';
import { startBackchannelReceiver, type BackchannelReceiver } from '../helpers/backchannel-receiver';
import { debugLinesUntil } from '../helpers/debug-lines';
import { OpenidClientFlows } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

// Back-channel logout is a call from the provider to a URL a client registration names: by default the provider
// refuses to call loopback and private-network addresses (SSRF), unless the operator opts in.
const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';

describe('isSpecialUseAddress', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
  ])('refuses IPv4 %s', (address) => expect(isSpecialUseAddress(address)).toBe(true));
  it.each(['::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '2001:db8::1', 'not-an-ip'])(
    'refuses %s',
    (address) => expect(isSpecialUseAddress(address)).toBe(true),
  );
  it.each(['93.184.215.14', '172.32.0.1', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])('accepts the public address %s', (address) =>
    expect(isSpecialUseAddress(address)).toBe(false),
  );
});

describe('backchannelFetch: a host name with several addresses', () => {
  // The resolver answers for the test's names only; the module reads dns.lookup at call time, as an app's own
  // resolver would be read. Every call carries an aborted signal, so whatever the check lets through ends inside
  // fetch (AbortError) before any connection: the test never reaches a network.
  const answers: Record<string, string[]> = {
    'public.example.test': ['93.184.215.14', '2606:4700::1111'],
    'rebind.example.test': ['93.184.215.14', '127.0.0.1'],
    'rebind-first.example.test': ['10.0.0.7', '93.184.215.14'],
    'rebind-v6.example.test': ['2606:4700::1111', 'fd00::1'],
  };
  let lookup: jest.SpiedFunction<typeof dns.lookup>;

  beforeEach(() => {
    const real = dns.lookup;
    lookup = jest.spyOn(dns, 'lookup').mockImplementation(((hostname: string, options: unknown, callback: unknown) => {
      const found = answers[hostname];
      if (found === undefined) return (real as (...args: unknown[]) => void)(hostname, options, callback);
      const addresses = found.map((address) => ({ address, family: isIP(address) }));
      process.nextTick(() => (callback as (error: null, addresses: dns.LookupAddress[]) => void)(null, addresses));
    }) as unknown as typeof dns.lookup);
  });
  afterEach(() => lookup.mockRestore());

  const call = (hostname: string) =>
    backchannelFetch(false)(`https://${hostname}/backchannel-logout`, { method: 'POST', signal: AbortSignal.abort() });

  it.each(['rebind.example.test', 'rebind-first.example.test', 'rebind-v6.example.test'])(
    'refuses %s, which resolves to a public and a private address (DNS rebinding)',
    async (hostname) => {
      await expect(call(hostname)).rejects.toThrow(`refused to call ${hostname}: it is a loopback or private-network address`);
      expect(lookup).toHaveBeenCalledWith(hostname, { all: true }, expect.any(Function));
    },
  );

  it('lets a name whose every address is public through to the call', async () => {
    await expect(call('public.example.test')).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('back-channel logout to a loopback address', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let receiver: BackchannelReceiver;

  beforeAll(async () => {
    redis = await testRedisStore('op-bc-fetch');
    receiver = await startBackchannelReceiver();
  });

  afterAll(async () => {
    await receiver?.close();
    await redis?.cleanup();
  });

  async function portalWith(backchannelLogoutUri: string, allowPrivateNetworkBackchannel: boolean | undefined): Promise<ProviderPortal> {
    return startProviderPortal({
      store: redis.store,
      clients: [{ clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT], backchannelLogoutUri }],
      // The harness opts in for its loopback receivers; undefined here is the option left out (the default).
      provider: { allowPrivateNetworkBackchannel },
    });
  }

  /** Signs alice in at the client and ends her portal session, as the sessions page's "sign out everywhere" does. */
  async function signInThenLogoutEverywhere(portal: ProviderPortal): Promise<() => Promise<unknown>> {
    const flows = await OpenidClientFlows.load(portal);
    const config: OpenidClient.Configuration = await flows.config('partner', SECRET);
    const browser = new TestBrowser(portal);
    await browser.signIn('alice');
    const { tokens } = await flows.login(config, browser, REDIRECT);
    const ended = await browser.request(`${portal.issuer}/logout-everywhere`, { method: 'POST' });
    expect(ended.status).toBe(200);
    return () => flows.client.refreshTokenGrant(config, tokens.refresh_token!);
  }

  it.each([
    ['an IP literal', (port: string) => `http://127.0.0.1:${port}/backchannel-logout`],
    ['a name that resolves to loopback', (port: string) => `http://localhost:${port}/backchannel-logout`],
  ])('is refused by default (%s), while the client tokens are still revoked', async (_what, uri) => {
    const portal = await portalWith(uri(new URL(receiver.url).port), undefined);
    try {
      const before = receiver.received.length;
      let refresh: () => Promise<unknown> = async () => undefined;
      const lines = await debugLinesUntil('oidc', /back-channel logout of client partner/, async () => {
        refresh = await signInThenLogoutEverywhere(portal);
      });
      expect(lines.join('\n')).toMatch(/back-channel logout of client partner failed: refused to call (127\.0\.0\.1|localhost)/);
      expect(receiver.received.length).toBe(before);
      await expect(refresh()).rejects.toMatchObject({ error: 'invalid_grant' });
    } finally {
      await portal.close();
    }
  });

  it('is delivered when the operator opts in with allowPrivateNetworkBackchannel', async () => {
    const portal = await portalWith(receiver.url, true);
    try {
      const pending = receiver.next(20_000);
      await signInThenLogoutEverywhere(portal);
      await expect(pending).resolves.toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    } finally {
      await portal.close();
    }
  });
});
