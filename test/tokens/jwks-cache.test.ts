import { randomBytes } from 'node:crypto';
import { JwksCache, KeySourceUnavailableError, TokenError } from '../../lib/tokens';
import { ecPair, rsaPair, startJwksServer, type JwksServer } from '../helpers/jose-tokens';
import { startJwksEndpoint, type JwksEndpoint } from '../helpers/jwks-endpoint';

const jwkOf = (key: ReturnType<typeof rsaPair>['publicKey'], extra: Record<string, unknown>) => ({
  ...key.export({ format: 'jwk' }),
  ...extra,
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('JwksCache', () => {
  const first = rsaPair();
  const second = rsaPair();
  let server: JwksServer;

  beforeEach(async () => {
    server = await startJwksServer([jwkOf(first.publicKey, { kid: 'k1', alg: 'RS256', use: 'sig' })]);
  });
  afterEach(() => server.close());

  it('fetches the key set once and serves keys by kid from memory', async () => {
    const cache = new JwksCache({ uri: server.jwksUri });
    const key = await cache.getKey('k1', 'RS256');
    expect(key.equals(first.publicKey)).toBe(true);
    await cache.getKey('k1', 'RS256');
    await cache.getKey('k1', 'RS256');
    expect([server.hits, cache.fetches]).toEqual([1, 1]);
  });

  it('fetches a rotated-in kid exactly once under 50 concurrent requests', async () => {
    const cache = new JwksCache({ uri: server.jwksUri });
    await cache.getKey('k1', 'RS256');
    server.jwks = { keys: [...server.jwks.keys, jwkOf(second.publicKey, { kid: 'k2', alg: 'RS256' })] };
    const keys = await Promise.all(Array.from({ length: 50 }, () => cache.getKey('k2', 'RS256')));
    expect(keys.every((key) => key.equals(second.publicKey))).toBe(true);
    expect(server.hits).toBe(2);
  });

  it('refetches for unknown kids at most once per cooldown', async () => {
    const cache = new JwksCache({ uri: server.jwksUri, cooldownSeconds: 0.3 });
    await cache.getKey('k1', 'RS256');
    await expect(cache.getKey('nope-1', 'RS256')).rejects.toMatchObject({ reason: 'unknown_kid' });
    await expect(cache.getKey('nope-2', 'RS256')).rejects.toMatchObject({ reason: 'unknown_kid' });
    await expect(cache.getKey('nope-3', 'RS256')).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(server.hits).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 350));
    await expect(cache.getKey('nope-4', 'RS256')).rejects.toBeInstanceOf(TokenError);
    expect(server.hits).toBe(3);
  });

  it('accepts a token without kid only when exactly one key fits the alg', async () => {
    const cache = new JwksCache({ uri: server.jwksUri, cooldownSeconds: 0 });
    expect((await cache.getKey(undefined, 'RS256')).equals(first.publicKey)).toBe(true);
    server.jwks = { keys: [...server.jwks.keys, jwkOf(second.publicKey, { kid: 'k2', alg: 'RS256' })] };
    await cache.refresh();
    await expect(cache.getKey(undefined, 'RS256')).rejects.toMatchObject({ reason: 'unknown_kid' });
  });

  it('binds a published key to its alg, and infers the algs of a key without alg', async () => {
    const ec = ecPair();
    server.jwks = {
      keys: [
        jwkOf(first.publicKey, { kid: 'rs', alg: 'RS256' }),
        jwkOf(second.publicKey, { kid: 'any-rsa' }),
        jwkOf(ec.publicKey, { kid: 'ec' }),
      ],
    };
    const cache = new JwksCache({ uri: server.jwksUri, cooldownSeconds: 60 });
    await expect(cache.getKey('rs', 'PS256')).rejects.toMatchObject({ reason: 'alg_mismatch' });
    await expect(cache.getKey('any-rsa', 'PS256')).resolves.toBeDefined();
    await expect(cache.getKey('ec', 'ES256')).resolves.toBeDefined();
    await expect(cache.getKey('ec', 'RS256')).rejects.toBeInstanceOf(TokenError);
    await expect(cache.getKey('rs', 'HS256')).rejects.toMatchObject({ reason: 'unsupported_alg' });
  });

  it('ignores encryption keys, RSA keys under 2048 bits, symmetric keys, private keys and odd kids', async () => {
    const weak = rsaPair(1024);
    server.jwks = {
      keys: [
        jwkOf(first.publicKey, { kid: 'enc', use: 'enc' }),
        jwkOf(weak.publicKey, { kid: 'weak' }),
        { kty: 'oct', kid: 'oct', k: randomBytes(32).toString('base64url') },
        { ...first.privateKey.export({ format: 'jwk' }), kid: 'private' },
        jwkOf(first.publicKey, { kid: '../../etc/passwd' }),
        jwkOf(second.publicKey, { kid: 'good', key_ops: ['verify'] }),
      ],
    };
    const cache = new JwksCache({ uri: server.jwksUri, cooldownSeconds: 60 });
    for (const kid of ['enc', 'weak', 'oct', 'private']) {
      await expect(cache.getKey(kid, 'RS256')).rejects.toMatchObject({ reason: 'unknown_kid' });
    }
    await expect(cache.getKey('good', 'RS256')).resolves.toBeDefined();
    await expect(cache.getKey('oct', 'HS256')).rejects.toMatchObject({ reason: 'unsupported_alg' });
  });

  it('keeps serving cached keys while the endpoint is down, and answers an unknown kid within the timeout', async () => {
    const cache = new JwksCache({ uri: server.jwksUri, maxAgeSeconds: 0.1, timeoutSeconds: 0.5, cooldownSeconds: 0 });
    await cache.getKey('k1', 'RS256');
    await server.close();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect((await cache.getKey('k1', 'RS256')).equals(first.publicKey)).toBe(true);
    const started = Date.now();
    await expect(cache.getKey('k-new', 'RS256')).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('answers an unknown kid within the timeout while the endpoint hangs, cached keys still working', async () => {
    const cache = new JwksCache({ uri: server.jwksUri, timeoutSeconds: 0.3, cooldownSeconds: 0 });
    await cache.getKey('k1', 'RS256');
    server.delayMs = 1900;
    const started = Date.now();
    await expect(cache.getKey('k-new', 'RS256')).rejects.toMatchObject({ reason: 'unknown_kid' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(cache.getKey('k1', 'RS256')).resolves.toBeDefined();
  });

  it('keeps serving cached keys while the endpoint answers 500', async () => {
    const cache = new JwksCache({ uri: server.jwksUri, maxAgeSeconds: 0.1, cooldownSeconds: 0 });
    await cache.getKey('k1', 'RS256');
    server.status = 500;
    await new Promise((resolve) => setTimeout(resolve, 150));
    await expect(cache.getKey('k1', 'RS256')).resolves.toBeDefined();
    expect(server.hits).toBe(2);
  });

  it('fails with KeySourceUnavailableError when the endpoint is down and nothing is cached', async () => {
    const uri = server.jwksUri;
    await server.close();
    const error = await rejection(new JwksCache({ uri }).getKey('k1', 'RS256'));
    expect(error).toBeInstanceOf(KeySourceUnavailableError);
    expect((error as KeySourceUnavailableError).failure).toBe('unreachable');
  });

  it('aborts a slow endpoint after timeoutSeconds', async () => {
    server.delayMs = 1500;
    const started = Date.now();
    const error = await rejection(new JwksCache({ uri: server.jwksUri, timeoutSeconds: 0.2 }).getKey('k1', 'RS256'));
    expect((error as KeySourceUnavailableError).failure).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it.each([
    ['an HTML page', (s: JwksServer) => (s.jwks = 'oops' as never)],
    ['a 404', (s: JwksServer) => (s.status = 404)],
    ['a set without usable keys', (s: JwksServer) => (s.jwks = { keys: [{ kty: 'oct', k: 'AAAA' }] })],
    ['a document without keys', (s: JwksServer) => (s.jwks = { nokeys: true } as never)],
  ])('reports a bad_response for %s', async (_name, spoil) => {
    spoil(server);
    const error = await rejection(new JwksCache({ uri: server.jwksUri }).getKey('k1', 'RS256'));
    expect((error as KeySourceUnavailableError).failure).toBe('bad_response');
  });

  it('honours Cache-Control max-age within its bounds', async () => {
    server.cacheControl = 'public, max-age=1';
    const cache = new JwksCache({ uri: server.jwksUri, minAgeSeconds: 0.5, maxAgeSeconds: 60 });
    await cache.getKey('k1', 'RS256');
    await new Promise((resolve) => setTimeout(resolve, 600));
    await cache.getKey('k1', 'RS256');
    expect(server.hits).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await cache.getKey('k1', 'RS256');
    expect(server.hits).toBe(2);
  });

  it('caps a long Cache-Control max-age at maxAgeSeconds', async () => {
    server.cacheControl = 'max-age=86400';
    const cache = new JwksCache({ uri: server.jwksUri, minAgeSeconds: 0, maxAgeSeconds: 0.2 });
    await cache.getKey('k1', 'RS256');
    await new Promise((resolve) => setTimeout(resolve, 250));
    await cache.getKey('k1', 'RS256');
    expect(server.hits).toBe(2);
  });

  it('accepts plain http on any host only for local development, and never in production', () => {
    const uri = 'http://idp.sso.localhost:8080/jwks';
    expect(() => new JwksCache({ uri })).toThrow(/https:/);
    expect(() => new JwksCache({ uri, allowInsecureLocalDevelopment: true })).not.toThrow();
    const environment = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      expect(() => new JwksCache({ uri, allowInsecureLocalDevelopment: true })).toThrow(/refused when NODE_ENV=production/);
    } finally {
      process.env.NODE_ENV = environment;
    }
  });

  it.each([
    [{ uri: 'http://auth.example.test/jwks' }, /https:/],
    [{ uri: 'not a url' }, /absolute URL/],
    [{ uri: 'https://user:pw@auth.example.test/jwks' }, /credentials/],
    [{ uri: 'https://auth.example.test/jwks', timeoutSeconds: 0 }, /timeoutSeconds/],
    [{ uri: 'https://auth.example.test/jwks', cooldownSeconds: -1 }, /cooldownSeconds/],
    [{ uri: 'https://auth.example.test/jwks', fetch: 'no' }, /fetch/],
  ])('refuses bad options %#', (options, message) => {
    expect(() => new JwksCache(options as never)).toThrow(message);
  });
});

/** Fails when `promise` has not settled within `ms`: a guard against a missing event, not a wait for one. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

const randomKid = () => `storm-${randomBytes(9).toString('base64url')}`;

describe('JwksCache under a random-kid storm and key rotation', () => {
  const first = rsaPair();
  const second = rsaPair();
  const k1 = jwkOf(first.publicKey, { kid: 'k1', alg: 'RS256', use: 'sig' });
  const k2 = jwkOf(second.publicKey, { kid: 'k2', alg: 'RS256', use: 'sig' });
  let endpoint: JwksEndpoint;

  beforeEach(async () => {
    endpoint = await startJwksEndpoint([k1]);
  });
  afterEach(() => endpoint.close());

  async function storm(cache: JwksCache, count: number): Promise<void> {
    const results = await Promise.allSettled(Array.from({ length: count }, () => cache.getKey(randomKid(), 'RS256')));
    expect(results.every((result) => result.status === 'rejected' && (result.reason as TokenError).reason === 'unknown_kid')).toBe(true);
  }

  it('answers a storm of 1,000 random kids with at most one refetch per cooldown', async () => {
    const cache = new JwksCache({ uri: endpoint.jwksUri, cooldownSeconds: 60 });
    await cache.getKey('k1', 'RS256');
    await storm(cache, 1000);
    for (let round = 0; round < 10; round += 1) await storm(cache, 100);
    // The first fetch, then the one refetch the cooldown allows.
    expect(endpoint.fetches).toBe(2);
    expect(cache.fetches).toBe(2);
  });

  it('refreshes the key set in the background before it expires, so a key published before use is known at its first token', async () => {
    endpoint.cacheControl = 'public, max-age=2';
    const cache = new JwksCache({ uri: endpoint.jwksUri, minAgeSeconds: 0, cooldownSeconds: 60 });
    await cache.getKey('k1', 'RS256');
    endpoint.keys = [k1, k2];
    await within(endpoint.nextFetch(), 5000, 'a background refresh');
    const key = await cache.getKey('k2', 'RS256');
    expect(key.equals(second.publicKey)).toBe(true);
    // The background refresh was the only fetch besides the first: the new kid caused none.
    expect(endpoint.fetches).toBe(2);
  });

  it('accepts a key published during a storm on its first token, without waiting for the cooldown', async () => {
    endpoint.cacheControl = 'max-age=2';
    const cache = new JwksCache({ uri: endpoint.jwksUri, minAgeSeconds: 0, cooldownSeconds: 60 });
    await cache.getKey('k1', 'RS256');
    await storm(cache, 1000);
    expect(endpoint.fetches).toBe(2);
    // The storm goes on while the issuer publishes its next key; the cooldown (60 s) blocks kid-driven refetches.
    let raging = true;
    const ongoing = (async () => {
      while (raging) await storm(cache, 50);
    })();
    try {
      endpoint.keys = [k1, k2];
      await within(endpoint.nextFetch(), 5000, 'a background refresh');
      const started = Date.now();
      await expect(cache.getKey('k2', 'RS256')).resolves.toBeDefined();
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      raging = false;
      await ongoing;
    }
    expect(endpoint.fetches).toBe(3);
  });
});

describe('JwksCache during an outage', () => {
  const pair = rsaPair();
  let endpoint: JwksEndpoint;
  let clock: number;
  beforeEach(async () => {
    endpoint = await startJwksEndpoint([jwkOf(pair.publicKey, { kid: 'k1', alg: 'RS256' })]);
    clock = 1_000_000;
  });
  afterEach(() => endpoint.close());

  it('keeps verifying with the last good keys for staleIfErrorSeconds past their lifetime, then fails closed', async () => {
    const cache = new JwksCache({
      uri: endpoint.jwksUri,
      maxAgeSeconds: 10,
      minAgeSeconds: 10,
      staleIfErrorSeconds: 30,
      cooldownSeconds: 1,
      now: () => clock,
    });
    const start = clock;
    await cache.getKey('k1', 'RS256');
    endpoint.mode = 'down';

    clock = start + 11_000; // expired: one refetch, which fails; the stale keys serve
    await expect(cache.getKey('k1', 'RS256')).resolves.toBeDefined();
    expect(endpoint.fetches).toBe(2);
    clock = start + 11_500; // within the retry delay: no request hammers the endpoint
    await expect(cache.getKey('k1', 'RS256')).resolves.toBeDefined();
    expect(endpoint.fetches).toBe(2);
    clock = start + 39_000; // still within 30 s of stale-if-error
    await expect(cache.getKey('k1', 'RS256')).resolves.toBeDefined();
    expect(endpoint.fetches).toBe(3);

    clock = start + 40_001; // beyond: fail closed
    const beyond = await rejection(cache.getKey('k1', 'RS256'));
    expect(beyond).toBeInstanceOf(KeySourceUnavailableError);
    clock = start + 40_500; // and again without a fetch, within the retry delay
    expect(await rejection(cache.getKey('k1', 'RS256'))).toBeInstanceOf(KeySourceUnavailableError);
    expect(endpoint.fetches).toBe(4);

    endpoint.mode = 'up';
    clock = start + 41_100; // the endpoint is back: the next request after the retry delay recovers
    await expect(cache.getKey('k1', 'RS256')).resolves.toBeDefined();
  });
});
