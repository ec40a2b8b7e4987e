import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { MemoryStore, type KeyValueStore } from '../../../lib/store';
import { DpopError, DpopVerifier, type DpopErrorReason, type DpopVerifierOptions } from '../../../lib/tokens';
import { OptionsError } from '../../../lib/util/options';
import { athOf, loadDpop, ProofClient, proofClaims, unsignedProof } from '../../helpers/dpop-proofs';
import { b64url, nowSeconds, signRaw } from '../../helpers/jose-tokens';
import { readsAsSameJws } from '../../helpers/jwt-attacks';
import { keysByPrefix, testRedisStore } from '../../helpers/redis';

const uri = 'https://api.example.test/orders';
const accessToken = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';

let redis: Awaited<ReturnType<typeof testRedisStore>>;
let client: ProofClient;

beforeAll(async () => {
  redis = await testRedisStore('dpop-verifier');
  client = await ProofClient.create('ES256');
});
afterAll(() => redis.cleanup());

function verifier(options: Partial<DpopVerifierOptions> = {}): DpopVerifier {
  return new DpopVerifier({ replayStore: redis.store, ...options });
}

async function refusal(promise: Promise<unknown>): Promise<DpopError> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(DpopError);
  return error as DpopError;
}

async function expectRefused(promise: Promise<unknown>, reason: DpopErrorReason, code?: string): Promise<DpopError> {
  const error = await refusal(promise);
  expect(error.reason).toBe(reason);
  if (code !== undefined) expect(error.code).toBe(code);
  return error;
}

describe('DpopVerifier accepts good proofs', () => {
  it.each(['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'] as const)(
    'accepts a %s proof made with jose and returns the RFC 7638 thumbprint jose computes',
    async (alg) => {
      const signer = await ProofClient.create(alg);
      const proof = await signer.proof({ htm: 'GET', htu: uri, accessToken });
      const verified = await verifier().verify(proof, { method: 'GET', uri, accessToken, boundJkt: signer.jkt });
      expect(verified).toMatchObject({ jkt: signer.jkt, alg });
    },
  );

  it('accepts proofs made by the dpop package (ES256 and Ed25519), with and without an access token', async () => {
    const dpop = await loadDpop();
    for (const alg of ['ES256', 'Ed25519'] as const) {
      const pair = await dpop.generateKeyPair(alg);
      const tokenProof = await dpop.generateProof(pair, uri, 'POST', undefined, accessToken);
      const verified = await verifier().verify(tokenProof, { method: 'POST', uri, accessToken });
      const jose = await import('jose');
      expect(verified.jkt).toBe(await jose.calculateJwkThumbprint(await jose.exportJWK(pair.publicKey)));
      const plain = await dpop.generateProof(pair, uri, 'POST');
      await expect(verifier().verify(plain, { method: 'POST', uri })).resolves.toMatchObject({ alg });
    }
  });

  it('compares htu after RFC 3986 normalisation: scheme and host case, default port, percent-encoding; the query of the request is ignored', async () => {
    const check = verifier();
    const proofFor = (htu: string) => client.proof({ htm: 'GET', htu });
    await expect(check.verify(await proofFor('HTTPS://API.Example.TEST/orders'), { method: 'GET', uri })).resolves.toBeDefined();
    await expect(check.verify(await proofFor('https://api.example.test:443/orders'), { method: 'GET', uri })).resolves.toBeDefined();
    await expect(check.verify(await proofFor('https://api.example.test/%6Frders'), { method: 'GET', uri })).resolves.toBeDefined();
    await expect(
      check.verify(await proofFor('https://api.example.test/a/%2f'), { method: 'GET', uri: 'https://api.example.test/a/%2F' }),
    ).resolves.toBeDefined();
    await expect(check.verify(await proofFor(uri), { method: 'GET', uri: `${uri}?page=2` })).resolves.toBeDefined();
  });

  it('accepts iat up to proofMaxAgeSeconds old and clockSkewSeconds ahead', async () => {
    const check = verifier({ proofMaxAgeSeconds: 60, clockSkewSeconds: 5 });
    const at = async (iat: number) => check.verify(await client.proof({ htm: 'GET', htu: uri, claims: { iat } }), { method: 'GET', uri });
    await expect(at(nowSeconds() - 58)).resolves.toBeDefined();
    await expect(at(nowSeconds() + 4)).resolves.toBeDefined();
  });
});

describe('DpopVerifier refuses bad proofs (RFC 9449 §4.3)', () => {
  const get = { method: 'GET', uri };

  it('refuses a missing, empty, oversize or malformed proof', async () => {
    await expectRefused(verifier().verify(undefined, get), 'proof_missing', 'invalid_dpop_proof');
    await expectRefused(verifier().verify('', get), 'proof_missing');
    await expectRefused(verifier().verify('a.b', get), 'proof_malformed');
    await expectRefused(verifier().verify('a.b.c.d', get), 'proof_malformed');
    await expectRefused(verifier().verify('a!.b.c', get), 'proof_malformed');
    await expectRefused(verifier().verify(`${b64url('{"typ":')}.${b64url('{}')}.x`, get), 'proof_malformed');
    await expectRefused(verifier().verify(`${'a'.repeat(9000)}.b.c`, get), 'proof_too_large');
  });

  it('refuses a proof not typed dpop+jwt', async () => {
    await expectRefused(verifier().verify(await client.proof({ htm: 'GET', htu: uri, header: { typ: 'JWT' } }), get), 'wrong_typ');
    await expectRefused(verifier().verify(await client.proof({ htm: 'GET', htu: uri, header: { typ: undefined } }), get), 'wrong_typ');
    // RFC 7515 §4.1.9: the media type compares case-insensitively, "application/" optional.
    await expect(
      verifier().verify(await client.proof({ htm: 'GET', htu: uri, header: { typ: 'application/DPoP+JWT' } }), get),
    ).resolves.toBeDefined();
  });

  it('refuses alg none and HS256 proofs, and an algorithm outside the allowlist', async () => {
    const claims = proofClaims('GET', uri);
    // Without a signature the proof is not even a JWS; with junk in its place the alg is what fails.
    await expectRefused(verifier().verify(unsignedProof(client.publicJwk, claims), get), 'proof_malformed');
    await expectRefused(verifier().verify(`${unsignedProof(client.publicJwk, claims)}AAAA`, get), 'unsupported_alg');
    const secret = randomBytes(32);
    const hs256 = signRaw(
      JSON.stringify({ typ: 'dpop+jwt', alg: 'HS256', jwk: { kty: 'oct', k: b64url(secret) } }),
      JSON.stringify(claims),
      'HS256',
      secret,
    );
    await expectRefused(verifier().verify(hs256, get), 'unsupported_alg');
    const rsa = await ProofClient.create('RS256');
    await expectRefused(verifier({ algorithms: ['ES256'] }).verify(await rsa.proof({ htm: 'GET', htu: uri }), get), 'unsupported_alg');
  });

  it('refuses a private key in jwk, whatever else the proof gets right', async () => {
    const proof = await client.proof({ htm: 'GET', htu: uri, header: { jwk: client.privateJwk } });
    await expectRefused(verifier().verify(proof, get), 'private_jwk', 'invalid_dpop_proof');
    const rsa = await ProofClient.create('RS256');
    await expectRefused(verifier().verify(await rsa.proof({ htm: 'GET', htu: uri, header: { jwk: rsa.privateJwk } }), get), 'private_jwk');
  });

  it('refuses a jwk that is missing, of another type or curve than the alg, an RSA key under 2048 bits, or one that says another alg', async () => {
    await expectRefused(verifier().verify(await client.proof({ htm: 'GET', htu: uri, header: { jwk: undefined } }), get), 'bad_jwk');
    const p384 = await ProofClient.create('ES384');
    await expectRefused(
      verifier().verify(await p384.proof({ htm: 'GET', htu: uri, header: { alg: 'ES384', jwk: client.publicJwk } }), get),
      'bad_jwk',
    );
    await expectRefused(
      verifier().verify(await client.proof({ htm: 'GET', htu: uri, header: { jwk: { ...client.publicJwk, alg: 'ES384' } } }), get),
      'bad_jwk',
    );
    await expectRefused(
      verifier().verify(await client.proof({ htm: 'GET', htu: uri, header: { jwk: { ...client.publicJwk, x: 'AAAA' } } }), get),
      'bad_jwk',
    );
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const header = JSON.stringify({ typ: 'dpop+jwt', alg: 'RS256', jwk: small.publicKey.export({ format: 'jwk' }) });
    await expectRefused(
      verifier().verify(signRaw(header, JSON.stringify(proofClaims('GET', uri)), 'RS256', small.privateKey), get),
      'bad_jwk',
    );
  });

  it('refuses a proof signed by another key than its jwk, and any crit', async () => {
    const other = await ProofClient.create('ES256');
    await expectRefused(
      verifier().verify(await other.proof({ htm: 'GET', htu: uri, header: { jwk: client.publicJwk } }), get),
      'bad_signature',
    );
    await expectRefused(
      verifier().verify(await client.proof({ htm: 'GET', htu: uri, header: { crit: ['b64'], b64: true } }), get),
      'unsupported_crit',
    );
  });

  it('refuses a proof missing jti, htm, htu or iat, or with one of the wrong type', async () => {
    for (const claim of ['jti', 'htm', 'htu', 'iat']) {
      const error = await expectRefused(
        verifier().verify(await client.proof({ htm: 'GET', htu: uri, claims: { [claim]: undefined } }), get),
        'missing_claim',
      );
      expect(error.claim).toBe(claim);
    }
    await expectRefused(
      verifier().verify(await client.proof({ htm: 'GET', htu: uri, claims: { iat: String(nowSeconds()) } }), get),
      'invalid_claim',
    );
    await expectRefused(
      verifier().verify(await client.proof({ htm: 'GET', htu: uri, claims: { jti: 'x'.repeat(300) } }), get),
      'invalid_claim',
    );
    await expectRefused(verifier().verify(await client.proof({ htm: 'GET', htu: uri, claims: { htu: 42 } }), get), 'invalid_claim');
  });

  it('refuses another method, and the method in another case', async () => {
    await expectRefused(verifier().verify(await client.proof({ htm: 'POST', htu: uri }), get), 'wrong_htm');
    await expectRefused(verifier().verify(await client.proof({ htm: 'get', htu: uri }), get), 'wrong_htm');
  });

  it.each([
    ['a path in another case', 'https://api.example.test/ORDERS'],
    ['another port', 'https://api.example.test:8443/orders'],
    ['a query', 'https://api.example.test/orders?page=2'],
    ['a fragment', 'https://api.example.test/orders#x'],
    ['a trailing slash', 'https://api.example.test/orders/'],
    ['another host', 'https://shop.example.test/orders'],
    ['plain http', 'http://api.example.test/orders'],
    ['credentials', 'https://user@api.example.test/orders'],
    ['a relative URI', '/orders'],
    ['a backslash', 'https://api.example.test\\orders'],
  ])('refuses an htu with %s', async (_what, htu) => {
    await expectRefused(verifier().verify(await client.proof({ htm: 'GET', htu }), get), 'wrong_htu');
  });

  it('refuses a stale proof and one issued in the future', async () => {
    const check = verifier({ proofMaxAgeSeconds: 60, clockSkewSeconds: 5 });
    await expectRefused(check.verify(await client.proof({ htm: 'GET', htu: uri, claims: { iat: nowSeconds() - 62 } }), get), 'stale');
    await expectRefused(
      check.verify(await client.proof({ htm: 'GET', htu: uri, claims: { iat: nowSeconds() + 30 } }), get),
      'issued_in_future',
    );
  });

  it('refuses the ath of another token, and a proof without ath for a token', async () => {
    const withToken = { ...get, accessToken };
    await expectRefused(
      verifier().verify(await client.proof({ htm: 'GET', htu: uri, accessToken: `${accessToken}x` }), withToken),
      'wrong_ath',
    );
    const error = await expectRefused(verifier().verify(await client.proof({ htm: 'GET', htu: uri }), withToken), 'missing_claim');
    expect(error.claim).toBe('ath');
  });

  it('answers a proof of another key than the token is bound to with invalid_token', async () => {
    const other = await ProofClient.create('ES256');
    const proof = await other.proof({ htm: 'GET', htu: uri, accessToken });
    await expectRefused(verifier().verify(proof, { ...get, accessToken, boundJkt: client.jkt }), 'key_mismatch', 'invalid_token');
  });

  it('refuses repeated JSON members and a non-canonical signature encoding', async () => {
    const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = JSON.stringify(key.publicKey.export({ format: 'jwk' }));
    const claims = proofClaims('GET', uri);
    const repeated = `{"typ":"dpop+jwt","alg":"RS256","alg":"RS256","jwk":${jwk}}`;
    await expectRefused(verifier().verify(signRaw(repeated, JSON.stringify(claims), 'RS256', key.privateKey), get), 'duplicate_member');
    const proof = await client.proof({ htm: 'GET', htu: uri });
    // 64 bytes end in a character carrying 4 bits; flipping an unused low bit keeps the bytes, not the text.
    const last = proof.at(-1) as string;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sibling = alphabet[alphabet.indexOf(last) ^ 1] as string;
    await expectRefused(verifier().verify(`${proof.slice(0, -1)}${sibling}`, get), 'proof_malformed');
  });
});

const stores: Array<[string, () => Promise<{ store: KeyValueStore; close(): Promise<void> }>]> = [
  ['Redis', async () => ({ store: redis.store, close: async () => undefined })],
  [
    'a MemoryStore',
    async () => {
      const store = new MemoryStore();
      return { store, close: () => store.close() };
    },
  ],
];

describe.each(stores)('DpopVerifier accepts a proof once, on %s', (_name, open) => {
  it('refuses the same proof the second time', async () => {
    const { store, close } = await open();
    try {
      const check = new DpopVerifier({ replayStore: store });
      const proof = await client.proof({ htm: 'GET', htu: uri });
      await expect(check.verify(proof, { method: 'GET', uri })).resolves.toBeDefined();
      await expectRefused(check.verify(proof, { method: 'GET', uri }), 'replayed', 'invalid_dpop_proof');
      // Another verifier on the same store (another process) refuses it too.
      await expectRefused(new DpopVerifier({ replayStore: store }).verify(proof, { method: 'GET', uri }), 'replayed');
    } finally {
      await close();
    }
  });

  it('accepts exactly one of 25 parallel presentations of one proof', async () => {
    const { store, close } = await open();
    try {
      const checks = Array.from({ length: 5 }, () => new DpopVerifier({ replayStore: store }));
      const proof = await client.proof({ htm: 'GET', htu: uri });
      const outcomes = await Promise.allSettled(
        Array.from({ length: 25 }, (_, index) => checks[index % 5]!.verify(proof, { method: 'GET', uri })),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
      for (const outcome of outcomes.filter((entry): entry is PromiseRejectedResult => entry.status === 'rejected')) {
        expect((outcome.reason as DpopError).reason).toBe('replayed');
      }
    } finally {
      await close();
    }
  });
});

describe('the replay store on Redis', () => {
  it('keeps one key per accepted proof, hashed, expiring once the proof could no longer be accepted', async () => {
    const { store, client: redisClient, prefix, cleanup } = await testRedisStore('dpop-replay-ttl');
    try {
      const check = new DpopVerifier({ replayStore: store, proofMaxAgeSeconds: 30, clockSkewSeconds: 5 });
      const jti = `jti-${randomBytes(4).toString('hex')}`;
      await check.verify(await client.proof({ htm: 'GET', htu: uri, claims: { jti } }), { method: 'GET', uri });
      const keys = await keysByPrefix(redisClient, prefix);
      expect(keys).toHaveLength(1);
      const key = keys[0] as string;
      // One hash tag per key, so the SET NX never spans Cluster slots; the client's jti is never stored as such.
      expect(key).toMatch(/dpop:jti:\{[A-Za-z0-9_-]{43}\}$/);
      expect(key).not.toContain(jti);
      const ttl = await redisClient.pttl(key);
      expect(ttl).toBeGreaterThan(39_000);
      expect(ttl).toBeLessThanOrEqual(40_000);
    } finally {
      await cleanup();
    }
  });
});

describe('DpopVerifier with server nonces (RFC 9449 §8, §9)', () => {
  const secret = randomBytes(32);

  it('asks for the nonce with use_dpop_nonce and a fresh nonce, accepts the current one, and hands out the next when one ages', async () => {
    let clock = Date.now();
    const check = verifier({ nonce: { secret, rotationSeconds: 60 }, now: () => clock });
    const shape = { htm: 'GET', htu: uri };
    const asked = await expectRefused(
      check.verify(await client.proof({ ...shape, claims: { iat: Math.floor(clock / 1000) } }), get()),
      'nonce_required',
      'use_dpop_nonce',
    );
    const nonce = asked.nonce as string;
    expect(nonce).toBe(check.currentNonce());
    const fresh = await check.verify(await client.proof({ ...shape, nonce, claims: { iat: Math.floor(clock / 1000) } }), get());
    expect(fresh.nextNonce).toBeUndefined();
    clock += 60_000;
    const ageing = await check.verify(await client.proof({ ...shape, nonce, claims: { iat: Math.floor(clock / 1000) } }), get());
    expect(ageing.nextNonce).toBe(check.currentNonce());
    expect(ageing.nextNonce).not.toBe(nonce);
    clock += 60_000;
    const expired = await expectRefused(
      check.verify(await client.proof({ ...shape, nonce, claims: { iat: Math.floor(clock / 1000) } }), get()),
      'wrong_nonce',
      'use_dpop_nonce',
    );
    expect(expired.nonce).toBe(check.currentNonce());
  });

  it('refuses a forged nonce and one made with another secret', async () => {
    const check = verifier({ nonce: { secret } });
    const forged = (check.currentNonce() as string).replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    await expectRefused(check.verify(await client.proof({ htm: 'GET', htu: uri, nonce: forged }), get()), 'wrong_nonce');
    const elsewhere = verifier({ nonce: { secret: randomBytes(32) } }).currentNonce() as string;
    await expectRefused(check.verify(await client.proof({ htm: 'GET', htu: uri, nonce: elsewhere }), get()), 'wrong_nonce');
  });

  it('shares nonces between verifiers with one secret (several processes)', async () => {
    const one = verifier({ nonce: { secret } });
    const two = verifier({ nonce: { secret } });
    await expect(
      two.verify(await client.proof({ htm: 'GET', htu: uri, nonce: one.currentNonce() as string }), get()),
    ).resolves.toBeDefined();
  });

  function get() {
    return { method: 'GET', uri };
  }
});

describe('DpopVerifier options', () => {
  it.each([
    ['HS256 among algorithms', { algorithms: ['ES256', 'HS256'] }],
    ['none among algorithms', { algorithms: ['none'] }],
    ['no algorithms', { algorithms: [] }],
    ['a nonce secret under 32 bytes', { nonce: { secret: 'short' } }],
    ['a proof age of 0', { proofMaxAgeSeconds: 0 }],
    ['a proof age of an hour', { proofMaxAgeSeconds: 3600 }],
    ['a misspelled option', { proofMaxAge: 60 }],
    ['no replay store', { replayStore: undefined }],
  ])('refuses %s with an OptionsError naming the option', (_what, options) => {
    expect(() => new DpopVerifier({ replayStore: redis.store, ...(options as object) } as DpopVerifierOptions)).toThrow(OptionsError);
  });
});

describe('DpopVerifier on arbitrary input', () => {
  const b64json = (value: unknown) => b64url(JSON.stringify(value));

  it('refuses every malformed or mutated proof with a DpopError, never another error', async () => {
    const check = verifier();
    const valid = await client.proof({ htm: 'GET', htu: uri, accessToken });
    const member = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.string()), fc.object());
    const header = fc.record(
      {
        typ: fc.oneof(fc.constant('dpop+jwt'), member),
        alg: fc.oneof(fc.constantFrom('ES256', 'RS256', 'EdDSA', 'none', 'HS256'), member),
        jwk: fc.oneof(
          fc.constant(client.publicJwk),
          fc.dictionary(fc.constantFrom('kty', 'crv', 'x', 'y', 'n', 'e', 'd', 'k', 'alg'), member),
        ),
        crit: member,
      },
      { requiredKeys: [] },
    );
    const claims = fc.record(
      {
        jti: member,
        htm: fc.oneof(fc.constant('GET'), member),
        htu: fc.oneof(fc.constant(uri), member),
        iat: fc.oneof(fc.constant(nowSeconds()), member),
        ath: fc.oneof(fc.constant(athOf(accessToken)), member),
        nonce: member,
      },
      { requiredKeys: [] },
    );
    const proofs = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc
        .tuple(header, claims, fc.base64String())
        .map(([h, c, signature]) => `${b64json(h)}.${b64json(c)}.${signature.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')}`),
      fc
        .tuple(fc.nat(valid.length - 1), fc.string({ minLength: 1, maxLength: 1 }))
        .map(([index, character]) => `${valid.slice(0, index)}${character}${valid.slice(index + 1)}`),
      fc.tuple(fc.nat(valid.length - 1), fc.nat(valid.length - 1)).map(([from, to]) => valid.slice(Math.min(from, to), Math.max(from, to))),
    );
    await fc.assert(
      fc.asyncProperty(proofs, async (proof) => {
        if (readsAsSameJws(proof, valid)) return;
        const error = await refusal(check.verify(proof, { method: 'GET', uri, accessToken, boundJkt: client.jkt }));
        expect(['invalid_dpop_proof', 'use_dpop_nonce', 'invalid_token']).toContain(error.code);
      }),
      { numRuns: 400, seed: 20261129 },
    );
  });

  it('never throws anything but a DpopError for arbitrary request facts', async () => {
    const check = verifier();
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.string(), async (method, target) => {
        const proof = await client.proof({ htm: 'GET', htu: uri });
        await refusal(check.verify(proof, { method: method === 'GET' ? 'PUT' : method, uri: target }));
      }),
      { numRuns: 100, seed: 20261129 },
    );
  });
});
