import fc from 'fast-check';
import { ProofClient } from '../helpers/dpop-proofs';
import { mutatedJws } from '../helpers/jwt-attacks';
import { startProviderPortal, type ProviderPortal } from '../helpers/openid-provider-harness';
import { clientKey, HandClient, type ClientKey } from '../helpers/provider-level-three';
import { testRedisStore } from '../helpers/redis';

const REDIRECT = 'https://fapi-app.test/callback';
// The error codes RFC 6749 §5.2, RFC 9126 §2.3, RFC 8707 and RFC 9449 §5/§8 give these endpoints.
const TOKEN_ERRORS = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_target',
  'invalid_dpop_proof',
  'use_dpop_nonce',
];
// At the PAR endpoint also the authorization request's errors (RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6, JARM).
const PAR_ERRORS = [
  ...TOKEN_ERRORS,
  'unsupported_response_type',
  'unsupported_response_mode',
  'invalid_redirect_uri',
  'invalid_request_object',
  'invalid_request_uri',
  'request_not_supported',
  'request_uri_not_supported',
];

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let portal: ProviderPortal;
let key: ClientKey;
let client: HandClient;

beforeAll(async () => {
  redis = await testRedisStore('op-level3-fuzz');
  key = await clientKey('ES256');
  portal = await startProviderPortal({
    store: redis.store,
    clients: [{ clientId: 'fapi-app', jwks: { keys: [key.publicJwk] }, redirectUris: [REDIRECT] }],
    provider: { profile: 'fapi2' },
  });
  client = new HandClient(portal, 'fapi-app', key, await ProofClient.create('ES256'));
});
afterAll(async () => {
  await portal?.close();
  await redis?.cleanup();
});

const printable = fc.string({
  unit: fc.constantFrom(...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i))),
  maxLength: 120,
});
const anyJson = fc.oneof(
  printable,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(printable, { maxLength: 3 }),
  fc.dictionary(printable, printable, { maxKeys: 2 }),
);

function mutate(valid: string): fc.Arbitrary<string> {
  return mutatedJws(valid, 'AZaz09-_.!='.split(''));
}

async function expectRfcError(response: Response, codes: readonly string[]): Promise<void> {
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  const body = (await response.json()) as { error?: string };
  expect(codes).toContain(body.error);
}

describe('bad input at the token and PAR endpoints', () => {
  it('answers malformed client assertions and DPoP headers at the token endpoint with 4xx and the RFC error, never 5xx', async () => {
    const validAssertion = await client.assertion();
    const validProof = await client.proof(client.tokenEndpoint);
    const claimSets = fc.record(
      { iss: anyJson, sub: anyJson, aud: anyJson, jti: anyJson, exp: anyJson, iat: anyJson, nbf: anyJson },
      { requiredKeys: [] },
    );
    const assertion = fc.oneof(
      printable,
      mutate(validAssertion),
      claimSets.map((claims) => ({ claims })),
      fc.constant(`${validAssertion}.${validAssertion}`),
    );
    const proof = fc.oneof(
      fc.constant(undefined),
      printable,
      mutate(validProof),
      fc.record({ jti: anyJson, htm: anyJson, htu: anyJson, iat: anyJson }, { requiredKeys: [] }).map((claims) => ({ claims })),
    );
    await fc.assert(
      fc.asyncProperty(assertion, proof, printable, async (assertionCase, proofCase, code) => {
        const signedAssertion = typeof assertionCase === 'string' ? assertionCase : await client.assertion(assertionCase.claims);
        const dpop =
          proofCase === undefined || typeof proofCase === 'string' ? proofCase : await client.proof(client.tokenEndpoint, proofCase.claims);
        const response = await client.post(
          client.tokenEndpoint,
          { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: 'x'.repeat(43) },
          { assertion: signedAssertion, ...(dpop === undefined || dpop === '' ? {} : { dpop }) },
        );
        await expectRfcError(response, TOKEN_ERRORS);
      }),
      { numRuns: 150, seed: 20261129 },
    );
  });

  it('answers malformed pushed authorization requests with 4xx and the RFC error (or 201 for a valid one), never 5xx', async () => {
    const field = fc.constantFrom(
      'response_type',
      'redirect_uri',
      'scope',
      'code_challenge',
      'code_challenge_method',
      'state',
      'request_uri',
      'request',
      'resource',
      'response_mode',
      'prompt',
      'max_age',
      'claims',
      'client_id',
    );
    const body = fc.dictionary(
      field,
      fc.oneof(printable, fc.constantFrom('code', REDIRECT, 'openid', 'S256', 'plain', '{"id_token":{"acr":null}}')),
      {
        maxKeys: 8,
      },
    );
    await fc.assert(
      fc.asyncProperty(body, fc.boolean(), async (form, authenticated) => {
        const response = await client.post(client.parEndpoint, form, authenticated ? {} : { assertion: 'not-a-jwt' });
        if (response.status === 201) return;
        await expectRfcError(response, PAR_ERRORS);
      }),
      { numRuns: 150, seed: 20261129 },
    );
  });
});
