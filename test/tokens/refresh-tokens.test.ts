import { createHash } from 'node:crypto';
import { RefreshTokenError, RefreshTokens } from '../../lib/tokens';
import { MemoryStore, type KeyValueStore } from '../../lib/store';
import { keysByPrefix, startPrivateRedis, testRedisStore, type PrivateRedis } from '../helpers/redis';
import { RedisStore } from '../../lib/store';

async function refusal(promise: Promise<unknown>): Promise<RefreshTokenError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(RefreshTokenError);
    return error as RefreshTokenError;
  }
  throw new Error('the refresh token was accepted');
}

describe('RefreshTokens on Redis', () => {
  let store: KeyValueStore;
  let prefix: string;
  let client: Awaited<ReturnType<typeof testRedisStore>>['client'];
  let cleanup: () => Promise<void>;
  let tokens: RefreshTokens;

  beforeAll(async () => {
    ({ store, prefix, client, cleanup } = await testRedisStore('refresh'));
    tokens = new RefreshTokens({ store, accessTokenLifetimeSeconds: 60 });
  });
  afterAll(() => cleanup());

  it('issues an opaque 256-bit base64url token and stores only its SHA-256 hash', async () => {
    const { token, record, expiresIn } = await tokens.issue({ clientId: 'shop', subject: 'alice', scope: 'openid', grantId: 'g-1' });
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(expiresIn).toBe(14 * 24 * 3600);
    expect(record).toMatchObject({ clientId: 'shop', subject: 'alice', scope: 'openid', grantId: 'g-1' });
    const keys = await keysByPrefix(client, prefix);
    const hash = createHash('sha256').update(token).digest('base64url');
    expect(keys.some((key) => key.includes(hash))).toBe(true);
    for (const key of keys) {
      expect(key).not.toContain(token);
      const type = await client.type(key);
      const values = type === 'set' ? await client.smembers(key) : [await client.get(key)];
      for (const value of values) expect(value ?? '').not.toContain(token);
    }
    expect(await client.pttl(`${prefix}rt:{${hash}}`)).toBeGreaterThan(13 * 24 * 3600 * 1000);
  });

  it('rotates a token into a new one of the same family', async () => {
    const first = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    const second = await tokens.rotate(first.token, 'shop');
    expect(second.token).not.toBe(first.token);
    expect(second.record).toMatchObject({ familyId: first.record.familyId, subject: 'alice', clientId: 'shop' });
    const third = await tokens.rotate(second.token, 'shop');
    expect(third.record.familyId).toBe(first.record.familyId);
  });

  it('treats a rotated token presented again as reuse and revokes its grant, the whole family included', async () => {
    const first = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    const second = await tokens.rotate(first.token, 'shop');
    expect((await refusal(tokens.rotate(first.token, 'shop'))).reason).toBe('reused');
    // The legitimate-looking descendant dies with the family.
    const error = await refusal(tokens.rotate(second.token, 'shop'));
    expect(['revoked', 'reused']).toContain(error.reason);
  });

  it('lets exactly one of concurrent rotations consume a token; the others count as reuse and nothing minted survives', async () => {
    const { token } = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => tokens.rotate(token, 'shop')));
    const winners = results.filter((result) => result.status === 'fulfilled');
    const reasons = results
      .filter((result): result is PromiseRejectedResult => result.status === 'rejected')
      .map((loser) => (loser.reason as RefreshTokenError).reason);
    // GETDEL hands the record to one caller; the nine others find only the marker: reuse, which revokes the grant.
    expect(reasons.filter((reason) => reason === 'reused')).toHaveLength(9);
    // The one that consumed it gets a successor only if its checks ran before that revocation (on a Redis Cluster the
    // revocation often lands first: then it is refused as revoked); a successor it got is dead all the same.
    expect(winners.length + reasons.filter((reason) => reason === 'revoked').length).toBe(1);
    for (const winner of winners) await refusal(tokens.rotate(winner.value.token, 'shop'));
  });

  it('refuses a token presented by another client and revokes its grant', async () => {
    const first = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    const second = await tokens.rotate(first.token, 'shop');
    expect((await refusal(tokens.rotate(second.token, 'admin'))).reason).toBe('client_mismatch');
    await refusal(tokens.rotate(second.token, 'shop'));
  });

  it('refuses unknown, malformed and expired tokens as invalid', async () => {
    expect((await refusal(tokens.rotate('A'.repeat(43), 'shop'))).reason).toBe('invalid');
    expect((await refusal(tokens.rotate('not a token', 'shop'))).reason).toBe('invalid');
    const shortLived = new RefreshTokens({ store, lifetimeSeconds: 1 });
    const { token } = await shortLived.issue({ clientId: 'shop', subject: 'alice' });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await refusal(shortLived.rotate(token, 'shop'))).reason).toBe('invalid');
  });

  it('refuses a token whose record says it expired, even while Redis still holds the record', async () => {
    // Redis's TTL and the record's expiresAt are set together; a clock ahead of Redis (or a TTL kept by a replica
    // promoted late) must not make an expired token redeemable.
    let clock = Date.now();
    const clocked = new RefreshTokens({ store, lifetimeSeconds: 60, now: () => clock });
    const { token } = await clocked.issue({ clientId: 'shop', subject: 'alice' });
    clock += 61_000;
    expect(await client.exists(`${prefix}rt:{${createHash('sha256').update(token).digest('base64url')}}`)).toBe(1);
    expect((await refusal(clocked.rotate(token, 'shop'))).reason).toBe('invalid');
  });

  it('never extends a family past its absolute lifetime, however often it rotates', async () => {
    const capped = new RefreshTokens({ store, lifetimeSeconds: 60, absoluteLifetimeSeconds: 2 });
    const first = await capped.issue({ clientId: 'shop', subject: 'alice' });
    expect(first.expiresIn).toBeLessThanOrEqual(2);
    const second = await capped.rotate(first.token, 'shop');
    expect(second.expiresIn).toBeLessThanOrEqual(2);
    expect(second.record.expiresAt).toBeLessThanOrEqual(first.record.familyCreatedAt + 2000);
    await new Promise((resolve) => setTimeout(resolve, second.record.expiresAt - Date.now() + 50));
    expect((await refusal(capped.rotate(second.token, 'shop'))).reason).toBe('invalid');
  });

  it('revokeGrant revokes every refresh token of the grant and marks its access tokens revoked', async () => {
    const a = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'grant-7' });
    const b = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'grant-7' });
    const other = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'grant-8' });
    const bNext = await tokens.rotate(b.token, 'shop');
    expect(await tokens.isRevoked({ gid: 'grant-7' })).toBe(false);
    await tokens.revokeGrant('grant-7');
    expect((await refusal(tokens.rotate(a.token, 'shop'))).reason).toMatch(/invalid|reused|revoked/);
    await refusal(tokens.rotate(bNext.token, 'shop'));
    await expect(tokens.rotate(other.token, 'shop')).resolves.toBeDefined();
    expect(await tokens.isRevoked({ gid: 'grant-7', jti: 'x' })).toBe(true);
    expect(await tokens.isRevoked({ gid: 'grant-8' })).toBe(false);
    const ttl = await client.pttl(`${prefix}grant:{grant-7}:revoked`);
    expect(ttl).toBeGreaterThan(13 * 24 * 3600 * 1000);
  });

  it('keeps tokens issued under a grant after its revocation dead', async () => {
    await tokens.revokeGrant('grant-late');
    const late = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'grant-late' });
    expect((await refusal(tokens.rotate(late.token, 'shop'))).reason).toBe('revoked');
    expect(await tokens.isRevoked({ gid: 'grant-late' })).toBe(true);
  });

  it('revokeAccessToken marks one jti revoked until its exp', async () => {
    const exp = Math.floor(Date.now() / 1000) + 30;
    await tokens.revokeAccessToken({ jti: 'at-1', exp });
    expect(await tokens.isRevoked({ jti: 'at-1' })).toBe(true);
    expect(await tokens.isRevoked({ jti: 'at-2' })).toBe(false);
  });

  it('keeps the keys of one token or family in one Redis Cluster hash slot', async () => {
    const { token, record } = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'g-slot' });
    const hash = createHash('sha256').update(token).digest('base64url');
    const keys = await keysByPrefix(client, prefix);
    // Redis Cluster hashes only the part between the first "{" and the next "}", so equal tags mean one slot.
    const hashTag = (key: string) => /\{([^}]+)\}/.exec(key)?.[1];
    const slots = (part: string) => new Set(keys.filter((key) => key.includes(part)).map(hashTag));
    expect(keys.filter((key) => key.includes(hash))).toHaveLength(2);
    expect([...slots(hash)]).toEqual([hash]);
    expect(keys.filter((key) => key.includes(record.familyId)).length).toBeGreaterThanOrEqual(2);
    expect([...slots(record.familyId)]).toEqual([record.familyId]);
  });

  it('refuses bad input to issue', async () => {
    await expect(tokens.issue({ clientId: 'bad client', subject: 'alice' })).rejects.toThrow(/clientId/);
    await expect(tokens.issue({ clientId: 'shop', subject: '' })).rejects.toThrow(/subject/);
    expect(() => new RefreshTokens({} as never)).toThrow(/store is required/);
    expect(() => new RefreshTokens({ store, lifetimeSeconds: 0 })).toThrow(/lifetimeSeconds/);
  });
});

describe('RefreshTokens rules checked at rotation', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let clock: number;
  const now = () => clock;
  beforeAll(async () => {
    redis = await testRedisStore('refresh-rules');
  });
  beforeEach(() => {
    clock = Date.now();
  });
  afterAll(() => redis.cleanup());

  it('refuses a record whose lifetime has passed while the store still holds it (clock skew, a slow expiry)', async () => {
    const tokens = new RefreshTokens({ store: redis.store, lifetimeSeconds: 60, now });
    const early = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    const late = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    clock += 59_000;
    await expect(tokens.rotate(early.token, 'shop')).resolves.toBeDefined();
    clock += 1_000;
    // Redis keeps the record a little longer (its TTL runs on the server's clock); the record's own expiry decides.
    expect(await redis.store.get(`rt:{${createHash('sha256').update(late.token).digest('base64url')}}`)).not.toBeNull();
    expect((await refusal(tokens.rotate(late.token, 'shop'))).reason).toBe('invalid');
  });

  it('refuses a family past the absolute lifetime in force today, however long its token would still live', async () => {
    const before = new RefreshTokens({ store: redis.store, lifetimeSeconds: 3600, absoluteLifetimeSeconds: 90 * 24 * 3600, now });
    const { token } = await before.issue({ clientId: 'shop', subject: 'alice' });
    const other = await before.issue({ clientId: 'shop', subject: 'alice' });
    // The operator shortens the absolute lifetime to 100 s; a family 101 s old must end now.
    const after = new RefreshTokens({ store: redis.store, lifetimeSeconds: 3600, absoluteLifetimeSeconds: 100, now });
    clock += 50_000;
    const young = await after.rotate(other.token, 'shop');
    expect(young.expiresIn).toBeLessThanOrEqual(50);
    clock += 51_000;
    expect((await refusal(after.rotate(token, 'shop'))).reason).toBe('invalid');
  });

  it('refuses a token whose family was revoked while its record still exists (a rotation racing a revocation)', async () => {
    const tokens = new RefreshTokens({ store: redis.store, now });
    const { token, record } = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    // revokeFamily marks the family first, then deletes its records; this is the moment in between.
    await redis.store.set(`rtf:{${record.familyId}}`, 'revoked', 60);
    expect((await refusal(tokens.rotate(token, 'shop'))).reason).toBe('revoked');
  });

  it('revokes the grant on reuse, so every family of it and its access tokens end', async () => {
    const tokens = new RefreshTokens({ store: redis.store, now });
    const first = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'consent-1' });
    const sibling = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'consent-1' });
    await tokens.rotate(first.token, 'shop');
    expect((await refusal(tokens.rotate(first.token, 'shop'))).reason).toBe('reused');
    expect(await tokens.isRevoked({ gid: 'consent-1' })).toBe(true);
    await refusal(tokens.rotate(sibling.token, 'shop'));
  });

  it('makes a family without a named grant its own grant', async () => {
    const tokens = new RefreshTokens({ store: redis.store, now });
    const { record } = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    expect(record.grantId).toBe(record.familyId);
  });
});

describe('RefreshTokens during a Redis outage', () => {
  let redis: PrivateRedis;
  let store: RedisStore;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    store = new RedisStore(redis.url, { prefix: 'rt-outage:' });
  });
  afterAll(async () => {
    await store.close();
    await redis.stop();
  });

  it('rejects (so callers answer 503) instead of treating tokens as invalid or not revoked', async () => {
    const tokens = new RefreshTokens({ store });
    const { token } = await tokens.issue({ clientId: 'shop', subject: 'alice', grantId: 'g' });
    await redis.stop();
    await expect(tokens.rotate(token, 'shop')).rejects.toMatchObject({ name: 'StoreUnavailableError' });
    await expect(tokens.isRevoked({ gid: 'g' })).rejects.toMatchObject({ name: 'StoreUnavailableError' });
    await redis.start();
  });
});

describe('RefreshTokens on the MemoryStore', () => {
  it('follows the same rotation and reuse rules', async () => {
    const store = new MemoryStore();
    const tokens = new RefreshTokens({ store });
    const first = await tokens.issue({ clientId: 'shop', subject: 'alice' });
    const second = await tokens.rotate(first.token, 'shop');
    expect((await refusal(tokens.rotate(first.token, 'shop'))).reason).toBe('reused');
    await refusal(tokens.rotate(second.token, 'shop'));
    await store.close();
  });
});
