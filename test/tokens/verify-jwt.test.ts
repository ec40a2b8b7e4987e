import { createSecretKey, randomBytes } from 'node:crypto';
import { createJwtVerifier, KeySet, TokenError, verifyJwt, type SupportedAlgorithm, type VerifyJwtOptions } from '../../lib/tokens';
import { buildAttackCorpus, createAttackTarget, mintValid, type Attack, type AttackTarget } from '../helpers/jwt-attacks';
import { ecPair, loadJose, nowSeconds, rsaPair, signRaw, startHttpServer, type TestHttpServer } from '../helpers/jose-tokens';

const issuer = 'https://auth.example.test';
const audience = 'shop-api';

async function refusal(promise: Promise<unknown>): Promise<TokenError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TokenError);
    return error as TokenError;
  }
  throw new Error('the token was accepted');
}

describe('verifyJwt accepts tokens minted by jose', () => {
  const cases: { alg: SupportedAlgorithm; key: () => { sign: object; keys: KeySet } }[] = [];
  for (const alg of ['HS256', 'HS384', 'HS512'] as const) {
    cases.push({
      alg,
      key: () => {
        const secret = randomBytes(64);
        return { sign: createSecretKey(secret), keys: new KeySet([{ kid: 'k1', alg, secret }]) };
      },
    });
  }
  for (const alg of ['RS256', 'PS256'] as const) {
    cases.push({
      alg,
      key: () => {
        const pair = rsaPair();
        return { sign: pair.privateKey, keys: new KeySet([{ kid: 'k1', alg, publicKey: pair.publicKey }]) };
      },
    });
  }
  cases.push({
    alg: 'ES256',
    key: () => {
      const pair = ecPair();
      return {
        sign: pair.privateKey,
        keys: new KeySet([{ kid: 'k1', alg: 'ES256', publicKey: pair.publicKey.export({ format: 'jwk' }) }]),
      };
    },
  });

  it.each(cases)('accepts a valid $alg token and returns its header and claims', async ({ alg, key }) => {
    const jose = await loadJose();
    const { sign, keys } = key();
    const now = nowSeconds();
    const token = await new jose.SignJWT({ sub: 'alice', scope: 'a b' })
      .setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt' })
      .setIssuer(issuer)
      .setAudience([audience, 'other'])
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(sign as never);
    const verified = await verifyJwt(token, { keys, algorithms: [alg], issuer, audience, typ: 'application/at+jwt' });
    expect(verified.header).toEqual({ alg, kid: 'k1', typ: 'at+jwt' });
    expect(verified.claims).toMatchObject({ sub: 'alice', iss: issuer, aud: [audience, 'other'], scope: 'a b' });
  });
});

describe('verifyJwt refuses the attack corpus', () => {
  let attacker: TestHttpServer;
  let target: AttackTarget;
  let corpus: Attack[];
  let verify: (token: string) => Promise<unknown>;

  beforeAll(async () => {
    attacker = await startHttpServer((_req, res) => res.end('{"keys":[]}'));
    target = createAttackTarget(attacker.url);
    corpus = await buildAttackCorpus(target);
    const keys = new KeySet([{ kid: target.kid, alg: 'RS256', publicKey: target.publicKey }]);
    verify = createJwtVerifier({ keys, algorithms: ['RS256'], issuer: target.issuer, audience: target.audience, typ: 'at+jwt' });
  });
  afterAll(() => attacker.close());

  it('accepts the valid token the corpus is derived from', async () => {
    await expect(verify(await mintValid(target))).resolves.toMatchObject({ claims: { sub: 'alice' } });
  });

  it('refuses every hostile token with the expected reason, and never contacts jku/x5u', async () => {
    const outcomes: Record<string, string> = {};
    for (const attack of corpus) {
      const error = await refusal(verify(attack.token));
      outcomes[attack.name] = attack.reasons.includes(error.reason) ? 'ok' : `got ${error.reason}, expected ${attack.reasons.join('|')}`;
      expect(error.message).not.toContain(attack.token.slice(0, 20));
    }
    expect(outcomes).toEqual(Object.fromEntries(corpus.map((attack) => [attack.name, 'ok'])));
    expect(attacker.hits).toBe(0);
  });
});

describe('verifyJwt checks', () => {
  const pair = rsaPair();
  const keys = new KeySet([{ kid: 'k1', alg: 'RS256', privateKey: pair.privateKey }]);
  const base: VerifyJwtOptions = { keys, algorithms: ['RS256'], issuer, audience };
  const mint = async (claims: Record<string, unknown>, header: Record<string, unknown> = {}) => {
    const jose = await loadJose();
    const now = nowSeconds();
    return new jose.SignJWT({ iss: issuer, aud: audience, sub: 'alice', iat: now, exp: now + 60, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1', ...header } as never)
      .sign(pair.privateKey);
  };

  it('allows exp within the clock tolerance and refuses beyond it', async () => {
    const now = nowSeconds();
    const token = await mint({ iat: now - 100, exp: now - 3 });
    await expect(verifyJwt(token, { ...base, clockToleranceSeconds: 10 })).resolves.toBeDefined();
    expect((await refusal(verifyJwt(token, { ...base, clockToleranceSeconds: 0 }))).reason).toBe('expired');
  });

  it('refuses a token older than maxTokenAgeSeconds, and one without iat when a max age is set', async () => {
    const now = nowSeconds();
    expect((await refusal(verifyJwt(await mint({ iat: now - 120 }), { ...base, maxTokenAgeSeconds: 60 }))).reason).toBe('too_old');
    await expect(verifyJwt(await mint({ iat: now - 30 }), { ...base, maxTokenAgeSeconds: 60 })).resolves.toBeDefined();
    expect((await refusal(verifyJwt(await mint({ iat: undefined }), { ...base, maxTokenAgeSeconds: 60 }))).reason).toBe('missing_claim');
  });

  it('refuses a token whose nonce differs, and accepts the right one', async () => {
    expect((await refusal(verifyJwt(await mint({ nonce: 'n-1' }), { ...base, nonce: 'n-2' }))).reason).toBe('wrong_nonce');
    expect((await refusal(verifyJwt(await mint({}), { ...base, nonce: 'n-2' }))).reason).toBe('wrong_nonce');
    await expect(verifyJwt(await mint({ nonce: 'n-1' }), { ...base, nonce: 'n-1' })).resolves.toBeDefined();
  });

  it('refuses a token lacking a required claim', async () => {
    const error = await refusal(verifyJwt(await mint({ sub: undefined }), { ...base, requiredClaims: ['sub'] }));
    expect([error.reason, error.claim]).toEqual(['missing_claim', 'sub']);
  });

  it('accepts any of several issuers and audiences', async () => {
    const token = await mint({ iss: 'https://b.example.test', aud: ['x', 'y'] });
    await expect(
      verifyJwt(token, { ...base, issuer: ['https://a.example.test', 'https://b.example.test'], audience: ['y'] }),
    ).resolves.toBeDefined();
  });

  it('refuses a typ header only when a typ is required', async () => {
    const token = await mint({}, { typ: 'JWT' });
    await expect(verifyJwt(token, base)).resolves.toBeDefined();
    expect((await refusal(verifyJwt(token, { ...base, typ: 'at+jwt' }))).reason).toBe('wrong_typ');
  });

  it('refuses tokens longer than maxTokenLength before any other work', async () => {
    const token = await mint({});
    expect((await refusal(verifyJwt(token, { ...base, maxTokenLength: token.length - 1 }))).reason).toBe('too_large');
  });

  it('refuses HS256 over the RSA key even when HS256 is allowed (alg confusion)', async () => {
    const pem = pair.publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const now = nowSeconds();
    const token = signRaw(
      '{"alg":"HS256","kid":"k1"}',
      JSON.stringify({ iss: issuer, aud: audience, exp: now + 60 }),
      'HS256',
      Buffer.from(pem),
    );
    const error = await refusal(verifyJwt(token, { ...base, algorithms: ['HS256'] }));
    expect(error.reason).toBe('alg_mismatch');
  });

  it('refuses a key from a custom resolver that does not fit the header alg', async () => {
    const resolver = { getKey: () => createSecretKey(randomBytes(32)) };
    const error = await refusal(verifyJwt(await mint({}), { ...base, keys: resolver }));
    expect(error.reason).toBe('alg_mismatch');
  });

  it('never hands a path- or SQL-looking kid to the key resolver', async () => {
    const asked: unknown[] = [];
    const naive = { getKey: (kid: string | undefined) => (asked.push(kid), pair.publicKey) };
    for (const kid of ['../../etc/passwd', "' OR 1=1 --", 'a\u0000b']) {
      expect((await refusal(verifyJwt(await mint({}, { kid }), { ...base, keys: naive }))).reason).toBe('unknown_kid');
    }
    expect(asked).toEqual([]);
  });

  it('refuses a segment in non-canonical base64url even when the signature covers it', async () => {
    const now = nowSeconds();
    // 26 bytes of JSON encode to 35 characters: the last character carries 2 unused bits we can flip.
    const header = '{"alg":"RS256","kid":"k1"}';
    let encoded = Buffer.from(header).toString('base64url');
    expect(encoded.length % 4).toBe(3);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    encoded = encoded.slice(0, -1) + alphabet[alphabet.indexOf(encoded.slice(-1)) + 1];
    expect(Buffer.from(encoded, 'base64url').toString()).toBe(header);
    const input = `${encoded}.${Buffer.from(JSON.stringify({ iss: issuer, aud: audience, exp: now + 60 })).toString('base64url')}`;
    const { createSign } = await import('node:crypto');
    const token = `${input}.${createSign('RSA-SHA256').update(input).sign(pair.privateKey).toString('base64url')}`;
    expect((await refusal(verifyJwt(token, base))).reason).toBe('malformed');
  });

  it('uses the injected clock', async () => {
    const token = await mint({});
    const later = () => Date.now() + 3600_000;
    expect((await refusal(verifyJwt(token, { ...base, now: later }))).reason).toBe('expired');
  });
});

describe('verifyJwt option validation', () => {
  const keys = KeySet.generate('RS256', 'k1');
  const base = { keys, algorithms: ['RS256'], issuer, audience } as VerifyJwtOptions;

  it.each([
    ['algorithms missing', { ...base, algorithms: undefined }, /algorithms is required/],
    ['algorithms empty', { ...base, algorithms: [] }, /algorithms is required/],
    ['algorithms with none', { ...base, algorithms: ['none'] }, /may only contain/],
    ['algorithms mixing HS and RS', { ...base, algorithms: ['HS256', 'RS256'] }, /must not mix/],
    ['issuer missing', { ...base, issuer: undefined }, /issuer is required/],
    ['audience empty', { ...base, audience: [] }, /audience is required/],
    ['keys missing', { ...base, keys: undefined }, /keys is required/],
    ['negative tolerance', { ...base, clockToleranceSeconds: -1 }, /clockToleranceSeconds/],
    ['huge tolerance', { ...base, clockToleranceSeconds: 3600 }, /clockToleranceSeconds/],
    ['empty typ', { ...base, typ: '' }, /typ/],
  ])('throws a TypeError for %s', (_name, options, message) => {
    expect(() => createJwtVerifier(options as VerifyJwtOptions)).toThrow(message);
  });
});
