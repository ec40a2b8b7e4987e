import { startJwksServer, type JwksServer } from '../helpers/jose-tokens';
import { startProviderPortal, type ProviderPortal } from '../helpers/openid-provider-harness';
import { clientKey, HandClient, type ClientKey } from '../helpers/provider-level-three';
import { testRedisStore } from '../helpers/redis';

const REDIRECT = 'https://keyed.test/callback';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let jwks: JwksServer;
let key: ClientKey;
let privateAllowed: ProviderPortal;
let guarded: ProviderPortal;

beforeAll(async () => {
  redis = await testRedisStore('op-jwks-uri');
  key = await clientKey('ES256');
  jwks = await startJwksServer([key.publicJwk]);
  const clients = [{ clientId: 'keyed', jwksUri: jwks.jwksUri, redirectUris: [REDIRECT] }];
  privateAllowed = await startProviderPortal({ store: redis.store, clients });
  guarded = await startProviderPortal({ store: redis.store, clients, provider: { allowPrivateNetworkBackchannel: false } });
});
afterAll(async () => {
  await privateAllowed?.close();
  await guarded?.close();
  await jwks?.close();
  await redis?.cleanup();
});

describe('private_key_jwt with the client keys at jwksUri', () => {
  it("authenticates a client with the keys fetched from its jwksUri, and refuses another key's assertion", async () => {
    expect((await new HandClient(privateAllowed, 'keyed', key).push(REDIRECT)).response.status).toBe(201);
    const forged = await new HandClient(privateAllowed, 'keyed', await clientKey('ES256')).push(REDIRECT);
    expect(forged.response.status).toBe(401);
    expect(forged.body.error).toBe('invalid_client');
  });

  it('does not fetch keys from a loopback jwksUri unless allowPrivateNetworkBackchannel: the client is refused, 401 not 5xx', async () => {
    const fetchesBefore = jwks.hits;
    const refused = await new HandClient(guarded, 'keyed', key).push(REDIRECT);
    expect(refused.response.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');
    expect(jwks.hits).toBe(fetchesBefore);
  });
});
