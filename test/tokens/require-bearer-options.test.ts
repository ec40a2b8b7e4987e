import { randomBytes } from 'node:crypto';
import { MemoryStore } from '../../lib/store';
import { createJwtVerifier, jwksHandler, JwksCache, KeySet, RefreshTokens, requireBearer, TokenService, verifyJwt } from '../../lib/tokens';

const issuer = 'https://auth.example.test';
const audience = 'shop-api';
const store = new MemoryStore();
afterAll(() => store.close());

/** Every factory and constructor of lib/tokens, each given a correct option set plus one misspelled key. */
const keys = KeySet.generate('ES256', 'k1');
const service = new TokenService({ keys, issuer, store });
const misspelled: [string, () => unknown, string, string][] = [
  ['requireBearer', () => requireBearer({ keys, algorithms: ['ES256'], issuer, audiance: audience } as never), 'audiance', 'audience'],
  [
    'requireBearer jwks',
    () => requireBearer({ jwksUri: `${issuer}/jwks`, algorithms: ['ES256'], issuer, audience, jwks: { timeoutSecond: 5 } } as never),
    'timeoutSecond',
    'timeoutSeconds',
  ],
  [
    'verifyJwt',
    () => verifyJwt('a.b.c', { keys, algorithms: ['ES256'], issuer, audience, requiredClaim: ['sub'] } as never),
    'requiredClaim',
    'requiredClaims',
  ],
  [
    'createJwtVerifier',
    () => createJwtVerifier({ keys, algorithms: ['ES256'], isuser: issuer, issuer, audience } as never),
    'isuser',
    'issuer',
  ],
  ['KeySet', () => new KeySet([{ kid: 'k', alg: 'HS256', secret: randomBytes(32) }], { activKid: 'k' } as never), 'activKid', 'activeKid'],
  ['KeySet key', () => new KeySet([{ kid: 'k', alg: 'ES256', privatekey: 'pem' } as never]), 'privatekey', 'privateKey'],
  ['jwksHandler', () => jwksHandler(keys, { maxAgeSecond: 60 } as never), 'maxAgeSecond', 'maxAgeSeconds'],
  ['JwksCache', () => new JwksCache({ uri: `${issuer}/jwks`, coolDownSecond: 1 } as never), 'coolDownSecond', 'cooldownSeconds'],
  [
    'TokenService',
    () => new TokenService({ keys, issuer, accesTokenLifetimeSeconds: 60 } as never),
    'accesTokenLifetimeSeconds',
    'accessTokenLifetimeSeconds',
  ],
  ['RefreshTokens', () => new RefreshTokens({ store, lifetimeSecond: 60 } as never), 'lifetimeSecond', 'lifetimeSeconds'],
];

describe('every factory of the tokens area refuses a misspelled option and names the right one', () => {
  it.each(misspelled)('%s', (_factory, build, wrong, right) => {
    expect(build).toThrow(expect.objectContaining({ code: 'invalid_options', name: 'OptionsError' }));
    expect(build).toThrow(`unknown option "${wrong}" (did you mean "${right}"?)`);
  });
});

describe('options renamed before 1.0 are refused with their new name', () => {
  it.each([
    ['JwksCache', () => new JwksCache({ uri: `${issuer}/jwks`, cooldownMs: 1000 } as never), 'cooldownMs', 'cooldownSeconds'],
    [
      'requireBearer jwks',
      () => requireBearer({ jwksUri: `${issuer}/jwks`, algorithms: ['ES256'], issuer, audience, jwks: { maxAgeMs: 1000 } } as never),
      'maxAgeMs',
      'maxAgeSeconds',
    ],
    [
      'TokenService',
      () => new TokenService({ keys, issuer, idTokenTtlSeconds: 60 } as never),
      'idTokenTtlSeconds',
      'idTokenLifetimeSeconds',
    ],
    [
      'TokenService refresh tokens',
      () => new TokenService({ keys, issuer, refreshTokenTtlSeconds: 60 } as never),
      'refreshTokenTtlSeconds',
      'refreshTokenLifetimeSeconds',
    ],
    ['RefreshTokens', () => new RefreshTokens({ store, ttlSeconds: 60 } as never), 'ttlSeconds', 'lifetimeSeconds'],
  ])('%s', (_factory, build, old, current) => {
    expect(build).toThrow(`unknown option "${old}" (did you mean "${current}"?)`);
  });
});

describe('requireBearer with a TokenService', () => {
  it.each([
    ['an issuer', { issuer }, /tokenService and issuer cannot be used together/],
    ['algorithms', { algorithms: ['ES256'] }, /tokenService and algorithms cannot be used together/],
    ['a typ', { typ: 'JWT' }, /tokenService and typ cannot be used together/],
    ['a revocation store', { revocationStore: store }, /tokenService and revocationStore cannot be used together/],
    ['keys', { keys }, /keys and tokenService cannot be used together/],
  ])('refuses %s beside it, which the service already gives', (_name, extra, message) => {
    expect(() => requireBearer({ tokenService: service, audience, ...extra } as never)).toThrow(message);
  });

  it('refuses something that is not a TokenService', () => {
    expect(() => requireBearer({ tokenService: { keys } as never, audience })).toThrow(/tokenService must be a TokenService/);
  });

  it('needs issuer and algorithms without it', () => {
    expect(() => requireBearer({ keys, algorithms: ['ES256'], audience })).toThrow(/issuer is required \(or give tokenService\)/);
    expect(() => requireBearer({ keys, issuer, audience })).toThrow(/algorithms is required/);
  });

  it('names the move of the former requiredScopes option', () => {
    expect(() => requireBearer({ tokenService: service, audience, requiredScopes: ['a'] } as never)).toThrow(
      "requireBearer: requiredScopes is no longer an option; mount requiredScopes('orders:read') after requireBearer() on the routes that need it",
    );
  });

  it('refuses jwks tuning without jwksUri, and jwks options out of range', () => {
    expect(() => requireBearer({ keys, algorithms: ['ES256'], issuer, audience, jwks: { timeoutSeconds: 1 } })).toThrow(/give jwksUri too/);
    expect(() =>
      requireBearer({ jwksUri: `${issuer}/jwks`, algorithms: ['ES256'], issuer, audience, jwks: { timeoutSeconds: 601 } }),
    ).toThrow('requireBearer: jwks: timeoutSeconds must be from 0.001 to 600, got 601');
  });
});
