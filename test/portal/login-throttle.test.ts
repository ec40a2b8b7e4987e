import { LoginThrottle } from '../../lib/portal/login-throttle';
import { MemoryStore } from '../../lib/store';
import { keysByPrefix, testRedisStore } from '../helpers/redis';

describe('LoginThrottle (on Redis)', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  beforeAll(async () => {
    redis = await testRedisStore('portal-throttle');
  });
  afterAll(async () => {
    await redis.cleanup();
  });

  async function fail(throttle: LoginThrottle, username: string, ip: string) {
    const decision = await throttle.attempt(username, ip);
    if (decision.allowed) await throttle.recordFailure(ip);
    return decision;
  }

  it('refuses an account after its limit of failures, with the remaining window as retry time', async () => {
    const throttle = new LoginThrottle(redis.store, {
      perAccount: { failures: 3, windowSeconds: 600 },
      perIp: { failures: 100, windowSeconds: 600 },
      namespace: 'account',
    });
    for (let i = 0; i < 3; i += 1) expect(await fail(throttle, 'alice', '10.0.0.1')).toEqual({ allowed: true });
    const decision = await throttle.attempt('alice', '10.0.0.2');
    expect(decision).toMatchObject({ allowed: false, scope: 'account' });
    expect(decision.allowed === false && decision.retryAfterSeconds).toBeGreaterThan(590);
    expect(decision.allowed === false && decision.retryAfterSeconds).toBeLessThanOrEqual(600);
  });

  it('lets no more than the limit through when guesses arrive in parallel', async () => {
    const throttle = new LoginThrottle(redis.store, { perAccount: { failures: 5, windowSeconds: 600 }, namespace: 'parallel' });
    const decisions = await Promise.all(Array.from({ length: 40 }, () => throttle.attempt('carol', '10.9.9.9')));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
  });

  it('counts usernames case-insensitively, so Alice and alice share one budget', async () => {
    const throttle = new LoginThrottle(redis.store, { perAccount: { failures: 2, windowSeconds: 600 }, namespace: 'case' });
    await fail(throttle, 'Alice', '10.0.0.1');
    await fail(throttle, ' ALICE', '10.0.0.1');
    expect(await throttle.attempt('alice', '10.0.0.1')).toMatchObject({ allowed: false, scope: 'account' });
  });

  it('refuses an IP after its limit of failures across many accounts', async () => {
    const throttle = new LoginThrottle(redis.store, {
      perAccount: { failures: 5, windowSeconds: 600 },
      perIp: { failures: 4, windowSeconds: 600 },
      namespace: 'ip',
    });
    for (const name of ['a', 'b', 'c', 'd']) await fail(throttle, name, '192.0.2.7');
    expect(await throttle.attempt('e', '192.0.2.7')).toMatchObject({ allowed: false, scope: 'ip' });
    expect(await throttle.attempt('e', '192.0.2.8')).toEqual({ allowed: true });
  });

  it('clears the account count after a success but keeps the IP failures', async () => {
    const throttle = new LoginThrottle(redis.store, {
      perAccount: { failures: 2, windowSeconds: 600 },
      perIp: { failures: 3, windowSeconds: 600 },
      namespace: 'success',
    });
    await fail(throttle, 'bob', '10.1.1.1');
    await fail(throttle, 'bob', '10.1.1.1');
    await throttle.recordSuccess('bob');
    expect(await throttle.attempt('bob', '10.1.1.2')).toEqual({ allowed: true });
    await fail(throttle, 'carol', '10.1.1.1');
    expect(await throttle.attempt('dave', '10.1.1.1')).toMatchObject({ allowed: false, scope: 'ip' });
  });

  it('allows again once the window has passed', async () => {
    const throttle = new LoginThrottle(redis.store, { perAccount: { failures: 1, windowSeconds: 1 }, namespace: 'window' });
    await fail(throttle, 'erin', '10.2.2.2');
    expect((await throttle.attempt('erin', '10.2.2.2')).allowed).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await throttle.attempt('erin', '10.2.2.2')).toEqual({ allowed: true });
  });

  it('never stores the typed username in a key', async () => {
    const throttle = new LoginThrottle(redis.store, { namespace: 'privacy' });
    await fail(throttle, 'my-secret-password-typed-as-username', '10.3.3.3');
    const keys = await keysByPrefix(redis.client, `${redis.prefix}privacy:`);
    expect(keys.length).toBe(2);
    expect(keys.join(' ')).not.toContain('my-secret-password');
  });
});

describe('LoginThrottle options', () => {
  it.each([
    [{ perAccount: { failures: 0, windowSeconds: 60 } }],
    [{ perIp: { failures: 5 } }],
    [{ perAccount: { failures: 1.5, windowSeconds: 60 } }],
  ])('rejects the invalid limit %j when constructed', (options) => {
    expect(() => new LoginThrottle(new MemoryStore(), options as never)).toThrow(/LoginThrottle: per(Account|Ip) must be/);
  });

  it('rejects a missing store and a namespace with hash-tag braces', () => {
    expect(() => new LoginThrottle(undefined as never)).toThrow(/pass the kit store/);
    expect(() => new LoginThrottle(new MemoryStore(), { namespace: 'a{b}' })).toThrow(/namespace must match/);
  });
});
