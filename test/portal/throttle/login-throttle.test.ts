import { randomBytes } from 'node:crypto';
import { issueDeviceToken, deviceTokenKey, readDeviceToken } from '../../../lib/portal/throttle/device-token';
import { LoginThrottle, MAX_DEVICE_TOKENS, type ThrottleDecision } from '../../../lib/portal/throttle/login-throttle';
import type { LoginThrottleOptions } from '../../../lib/portal/throttle/login-throttle-options';
import { MemoryStore } from '../../../lib/store';
import { OptionsError } from '../../../lib/util/options';
import { keysByPrefix, testRedisStore } from '../../helpers/redis';

const SECRET = 'login-throttle-test-secret-0123456789-abcdef';
// A whole hour, so the windows of every limit start here and a test can reason about them.
const START = Date.UTC(2031, 0, 1, 12);

/** A clock the test moves; the throttle reads it instead of the real time. */
function testClock() {
  const clock = { now: START, advance: (seconds: number) => (clock.now += seconds * 1000), read: () => clock.now };
  return clock;
}

describe('LoginThrottle (on Redis)', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let clock: ReturnType<typeof testClock>;
  let run = 0;
  beforeAll(async () => {
    redis = await testRedisStore('portal-throttle');
  });
  afterAll(async () => {
    await redis.cleanup();
  });
  beforeEach(() => {
    clock = testClock();
  });

  function throttle(options: LoginThrottleOptions = {}): LoginThrottle {
    run += 1;
    return new LoginThrottle(redis.store, { namespace: `t${run}`, deviceTokenSecret: SECRET, clock: clock.read, ...options });
  }

  /** An attempt whose password turns out wrong (nothing to record: the attempt was counted before the check). */
  function guess(t: LoginThrottle, username: string, address: string, deviceTokens?: string[]): Promise<ThrottleDecision> {
    return t.attempt({ username, address, ...(deviceTokens ? { deviceTokens } : {}) });
  }

  /** A browser that signs in as the user and keeps the device tokens it is given. */
  async function signIn(t: LoginThrottle, username: string, address: string, deviceTokens?: string[]): Promise<string[]> {
    const decision = await guess(t, username, address, deviceTokens);
    if (!decision.allowed) throw new Error(`sign-in refused: ${decision.scope}`);
    return (await t.recordSuccess(decision)).tokens;
  }

  describe('new browsers', () => {
    it('refuses an account from one network after perAccountAndNetwork failures, until the window ends', async () => {
      const t = throttle({ perAccountAndNetwork: { failures: 3, windowSeconds: 600 } });
      for (let i = 0; i < 3; i += 1) expect(await guess(t, 'alice', '203.0.113.1')).toEqual({ allowed: true, trusted: false });
      clock.advance(100);
      expect(await guess(t, 'alice', '203.0.113.1')).toEqual({ allowed: false, scope: 'account-and-network', retryAfterSeconds: 500 });
      expect((await guess(t, 'alice', '203.0.113.2')).allowed).toBe(true);
      clock.advance(500);
      expect((await guess(t, 'alice', '203.0.113.1')).allowed).toBe(true);
    });

    it('counts the addresses of one /64 as one network, and a configured prefix length instead when given', async () => {
      const t = throttle({ perAccountAndNetwork: { failures: 2, windowSeconds: 600 } });
      expect((await guess(t, 'alice', '2001:db8:5:6::1')).allowed).toBe(true);
      expect((await guess(t, 'alice', '2001:db8:5:6:aaaa::2')).allowed).toBe(true);
      expect(await guess(t, 'alice', '2001:db8:5:6:ffff:ffff:ffff:fffe')).toMatchObject({ allowed: false, scope: 'account-and-network' });
      const per48 = throttle({ perAccountAndNetwork: { failures: 2, windowSeconds: 600 }, ipv6PrefixLength: 48 });
      await guess(per48, 'alice', '2001:db8:5:1::1');
      await guess(per48, 'alice', '2001:db8:5:2::1');
      expect(await guess(per48, 'alice', '2001:db8:5:3::1')).toMatchObject({ allowed: false });
    });

    it('bounds failures per account from all networks together (perAccount)', async () => {
      const t = throttle({ perAccount: { failures: 4, windowSeconds: 3600 } });
      const results = [];
      for (let i = 1; i <= 10; i += 1) results.push((await guess(t, 'alice', `198.51.100.${i}`)).allowed);
      expect(results).toEqual([true, true, true, true, false, false, false, false, false, false]);
      expect(await guess(t, 'alice', '192.0.2.99')).toEqual({ allowed: false, scope: 'account', retryAfterSeconds: 3600 });
      expect((await guess(t, 'bob', '192.0.2.99')).allowed).toBe(true);
    });

    it('refuses one network guessing across many accounts (perNetwork) without touching the accounts', async () => {
      const t = throttle({ perNetwork: { failures: 3, windowSeconds: 600 }, perAccount: { failures: 1, windowSeconds: 600 } });
      for (const name of ['a', 'b', 'c']) expect((await guess(t, name, '192.0.2.7')).allowed).toBe(true);
      expect(await guess(t, 'dave', '192.0.2.7')).toMatchObject({ allowed: false, scope: 'network' });
      // The refused attempt did not spend dave's one failure.
      expect((await guess(t, 'dave', '192.0.2.8')).allowed).toBe(true);
    });

    it('lets no more than the limit through when guesses arrive in parallel', async () => {
      const t = throttle({ perAccountAndNetwork: { failures: 5, windowSeconds: 600 } });
      const decisions = await Promise.all(Array.from({ length: 40 }, () => guess(t, 'carol', '10.9.9.9')));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    });

    it('counts usernames case-insensitively, so Alice and alice share one budget', async () => {
      const t = throttle({ perAccountAndNetwork: { failures: 2, windowSeconds: 600 } });
      await guess(t, 'Alice', '10.0.0.1');
      await guess(t, ' ALICE', '10.0.0.1');
      expect(await guess(t, 'alice', '10.0.0.1')).toMatchObject({ allowed: false });
    });

    it('takes a successful attempt back, so an office signing in all day is never refused', async () => {
      const t = throttle({ perNetwork: { failures: 3, windowSeconds: 600 } });
      for (let i = 0; i < 20; i += 1) await signIn(t, `user${i}`, '192.0.2.50');
      expect((await guess(t, 'someone', '192.0.2.50')).allowed).toBe(true);
    });

    it('keeps the failures before a success (a success does not reset the count)', async () => {
      const t = throttle({ perAccountAndNetwork: { failures: 3, windowSeconds: 600 } });
      await guess(t, 'erin', '10.2.2.2');
      await guess(t, 'erin', '10.2.2.2');
      await signIn(t, 'erin', '10.2.2.2');
      expect((await guess(t, 'erin', '10.2.2.2')).allowed).toBe(true);
      expect((await guess(t, 'erin', '10.2.2.2')).allowed).toBe(false);
    });
  });

  describe('browsers that signed in before', () => {
    it('are not refused because of failures elsewhere', async () => {
      const t = throttle({ perAccount: { failures: 3, windowSeconds: 3600 } });
      const tokens = await signIn(t, 'alice', '192.0.2.1');
      for (let i = 0; i < 10; i += 1) await guess(t, 'alice', `198.51.100.${i}`);
      expect((await guess(t, 'alice', '192.0.2.1')).allowed).toBe(false);
      expect(await guess(t, 'alice', '192.0.2.1', tokens)).toEqual({ allowed: true, trusted: true });
    });

    it('have their own budget, and a token that keeps failing is revoked', async () => {
      const t = throttle({ perDevice: { failures: 3, windowSeconds: 3600 } });
      const tokens = await signIn(t, 'alice', '192.0.2.1');
      for (let i = 0; i < 3; i += 1) expect(await guess(t, 'alice', '192.0.2.1', tokens)).toMatchObject({ trusted: true });
      expect(await guess(t, 'alice', '192.0.2.1', tokens)).toMatchObject({ allowed: true, trusted: false });
      // Revoked, not just over its window: a new window does not bring the trust back.
      clock.advance(3600);
      expect(await guess(t, 'alice', '192.0.2.1', tokens)).toMatchObject({ trusted: false });
    });

    it('get a fresh token at each sign-in; the token they came with is spent', async () => {
      const t = throttle();
      const first = await signIn(t, 'alice', '192.0.2.1');
      const second = await signIn(t, 'alice', '192.0.2.1', first);
      expect(second).toHaveLength(1);
      expect(second[0]).not.toBe(first[0]);
      expect(await guess(t, 'alice', '192.0.2.1', first)).toMatchObject({ trusted: false });
      expect(await guess(t, 'alice', '192.0.2.1', second)).toMatchObject({ trusted: true });
    });

    it("keep other users' tokens of the same browser, newest first, dropping expired ones and at most four in all", async () => {
      const t = throttle({ deviceTokenLifetimeSeconds: 600 });
      let tokens = await signIn(t, 'alice', '192.0.2.1');
      tokens = await signIn(t, 'bob', '192.0.2.1', tokens);
      expect(await guess(t, 'alice', '192.0.2.1', tokens)).toMatchObject({ trusted: true });
      for (const name of ['carol', 'dave', 'erin']) tokens = await signIn(t, name, '192.0.2.1', tokens);
      expect(tokens).toHaveLength(MAX_DEVICE_TOKENS);
      expect(await guess(t, 'erin', '192.0.2.1', tokens)).toMatchObject({ trusted: true });
      expect(await guess(t, 'alice', '192.0.2.1', tokens)).toMatchObject({ trusted: false });
      clock.advance(601);
      expect(await signIn(t, 'frank', '192.0.2.1', tokens)).toHaveLength(1);
    });

    it('give nothing to a token of another user, a forged one, or one signed with another key', async () => {
      const t = throttle({ perAccount: { failures: 1, windowSeconds: 3600 } });
      const mallorys = await signIn(t, 'mallory', '192.0.2.66');
      await guess(t, 'alice', '198.51.100.1');
      const forged = issueDeviceToken(deviceTokenKey(randomBytes(32)), 'alice', START / 1000, 3600);
      const garbage = `d1.${randomBytes(16).toString('base64url')}.${START / 1000 + 3600}.${randomBytes(32).toString('base64url')}`;
      for (const tokens of [mallorys, [forged], [garbage], ['not a token']]) {
        expect(await guess(t, 'alice', '192.0.2.66', tokens)).toMatchObject({ allowed: false, scope: 'account' });
      }
    });

    it('are known to every instance that shares the store and the secret', async () => {
      const a = throttle();
      const b = new LoginThrottle(redis.store, { namespace: `t${run}`, deviceTokenSecret: SECRET, clock: clock.read });
      const tokens = await signIn(a, 'alice', '192.0.2.1');
      expect(await guess(b, 'alice', '192.0.2.1', tokens)).toMatchObject({ trusted: true });
    });

    it('without a configured key, share one random key kept in the store', async () => {
      run += 1;
      const options = { namespace: `t${run}`, clock: clock.read };
      const a = new LoginThrottle(redis.store, options);
      const b = new LoginThrottle(redis.store, options);
      const tokens = await signIn(a, 'alice', '192.0.2.1');
      expect(await guess(b, 'alice', '192.0.2.1', tokens)).toMatchObject({ trusted: true });
      const elsewhere = new LoginThrottle(new MemoryStore(), { clock: clock.read });
      expect(await guess(elsewhere, 'alice', '192.0.2.1', tokens)).toMatchObject({ trusted: false });
    });
  });

  it('accepts a success only for a decision it made, and only once', async () => {
    const t = throttle();
    const decision = await guess(t, 'alice', '192.0.2.1');
    if (!decision.allowed) throw new Error('expected an allowed attempt');
    await t.recordSuccess(decision);
    await expect(t.recordSuccess(decision)).rejects.toThrow(/pass the allowed decision attempt\(\) returned, once/);
    await expect(t.recordSuccess({ allowed: true, trusted: true })).rejects.toThrow(TypeError);
  });

  it('never stores the typed username, nor a device token, in a key or value', async () => {
    const t = throttle({ namespace: 'privacy' });
    const tokens = await signIn(t, 'my-secret-password-typed-as-username', '10.3.3.3');
    await guess(t, 'my-secret-password-typed-as-username', '10.3.3.3', tokens);
    const keys = await keysByPrefix(redis.client, `${redis.prefix}privacy:`);
    expect(keys.length).toBeGreaterThan(3);
    expect(keys.join(' ')).not.toContain('my-secret-password');
    expect(keys.join(' ')).not.toContain(tokens[0]!.split('.')[3]!);
    const values = await Promise.all(keys.map((key) => redis.client.get(key)));
    expect(values.join(' ')).not.toContain(tokens[0]!.split('.')[3]!);
    expect(keys.join(' ')).toContain(readDeviceToken(tokens[0]!)!.nonce);
  });
});

describe('LoginThrottle options', () => {
  const store = new MemoryStore();
  it.each([
    [{ perAcount: { failures: 5, windowSeconds: 60 } }, /LoginThrottle: unknown option "perAcount" \(did you mean "perAccount"\?\)/],
    [{ perIp: { failures: 5, windowSeconds: 60 } }, /LoginThrottle: unknown option "perIp"/],
    [{ perAccount: { failures: 0, windowSeconds: 60 } }, /LoginThrottle: perAccount: failures must be from 1 to/],
    [{ perNetwork: { failures: 5 } }, /LoginThrottle: perNetwork: windowSeconds is required/],
    [{ perDevice: { failures: 1.5, windowSeconds: 60 } }, /LoginThrottle: perDevice: failures must be a whole number/],
    [{ perAccountAndNetwork: { failures: 5, windowSecond: 60 } }, /unknown option "windowSecond" \(did you mean "windowSeconds"\?\)/],
    [{ ipv6PrefixLength: 129 }, /ipv6PrefixLength must be from 8 to 128/],
    [{ deviceTokenSecret: 'short' }, /deviceTokenSecret must be at least 32 characters/],
    [{ deviceTokenKey: Buffer.alloc(16) }, /deviceTokenKey must be at least 32 bytes/],
    [{ deviceTokenSecret: SECRET, deviceTokenKey: randomBytes(32) }, /deviceTokenSecret and deviceTokenKey cannot be used together/],
    [{ deviceTokenLifetimeSeconds: 10 }, /deviceTokenLifetimeSeconds must be from 60/],
    [{ namespace: 'a{b}' }, /namespace must match/],
    [{ clock: 12 }, /clock must be a function/],
  ])('refuses %j when constructed', (options, message) => {
    expect(() => new LoginThrottle(store, options as never)).toThrow(OptionsError);
    expect(() => new LoginThrottle(store, options as never)).toThrow(message);
  });

  it('refuses a missing store', () => {
    expect(() => new LoginThrottle(undefined as never)).toThrow(/pass the kit store/);
  });

  it("does not change the caller's options", () => {
    const options = Object.freeze({ perAccount: Object.freeze({ failures: 3, windowSeconds: 60 }), deviceTokenSecret: SECRET });
    expect(() => new LoginThrottle(store, options)).not.toThrow();
  });
});
