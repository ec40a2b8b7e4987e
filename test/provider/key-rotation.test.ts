import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { KeySet } from '../../lib/tokens';
import { OpenidClientFlows } from '../helpers/openid-client-flows';
import { startProviderPortal, TestBrowser, type ProviderPortal } from '../helpers/openid-provider-harness';
import { testRedisStore } from '../helpers/redis';

const SECRET = `partner-secret-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'https://partner.test/callback';

describe('openidProvider signing key rotation', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let portal: ProviderPortal;

  beforeAll(async () => {
    redis = await testRedisStore('op-rotation');
    const previous = KeySet.generate('ES256', 'op-2026-10').publicJwks().keys[0]!;
    const next = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    // The rotation step of the kit's KeySet: the new key signs, the previous one only verifies until its tokens expire.
    const keys = new KeySet(
      [
        { kid: 'op-2026-11', alg: 'ES256', privateKey: next },
        { kid: 'op-2026-10', alg: 'ES256', publicKey: previous },
      ],
      { activeKid: 'op-2026-11' },
    );
    portal = await startProviderPortal({
      store: redis.store,
      keys,
      clients: [{ clientId: 'partner', clientSecret: SECRET, redirectUris: [REDIRECT] }],
    });
  });

  afterAll(async () => {
    await portal?.close();
    await redis?.cleanup();
  });

  it('signs with the active key and keeps the previous one in the JWKS', async () => {
    const flows = await OpenidClientFlows.load(portal);
    const config = await flows.config('partner', SECRET);
    const browser = new TestBrowser(portal);
    await browser.signIn('alice');
    const { tokens } = await flows.login(config, browser, REDIRECT);
    const header = JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString()) as { kid: string };
    expect(header.kid).toBe('op-2026-11');
    const jwks = (await (await fetch(config.serverMetadata().jwks_uri!)).json()) as { keys: { kid: string; d?: string }[] };
    expect(jwks.keys.map((key) => key.kid)).toEqual(['op-2026-11', 'op-2026-10']);
    expect(jwks.keys.every((key) => key.d === undefined)).toBe(true);
  });
});
