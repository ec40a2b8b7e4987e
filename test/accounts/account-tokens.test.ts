import { AccountTokens, memoryUserDirectory, redisUserDirectory, type WritableUserDirectory } from '../../lib/accounts';
import { MemoryStore, type KeyValueStore } from '../../lib/store';
import { hashPassword } from '../../lib/util/password-hash';
import { OptionsError } from '../../lib/util/options';
import { keysByPrefix, testRedisStore } from '../helpers/redis';

const FAST = { N: 1024, r: 8, p: 1 } as const;

interface Harness {
  store: KeyValueStore;
  users: WritableUserDirectory;
  /** Every raw value the store holds under the tokens' namespace (Redis only). */
  storedValues?: () => Promise<string[]>;
  cleanup: () => Promise<void>;
}

const implementations: Array<[string, () => Promise<Harness>]> = [
  [
    'MemoryStore',
    async () => {
      const store = new MemoryStore();
      return { store, users: redisUserDirectory(store), cleanup: () => store.close() };
    },
  ],
  [
    'RedisStore',
    async () => {
      const redis = await testRedisStore('account-tokens');
      return {
        store: redis.store,
        users: redisUserDirectory(redis.store),
        storedValues: async () =>
          Promise.all(
            (await keysByPrefix(redis.client, `${redis.prefix}account-tokens:`)).map(async (key) => (await redis.client.get(key)) ?? ''),
          ),
        cleanup: redis.cleanup,
      };
    },
  ],
];

describe.each(implementations)('AccountTokens on %s', (_name, open) => {
  let harness: Harness;
  let now: number;
  let resets: AccountTokens;
  beforeEach(async () => {
    harness = await open();
    now = Date.UTC(2026, 10, 29, 9, 0);
    resets = new AccountTokens({ store: harness.store, users: harness.users, purpose: 'password-reset', clock: () => now });
    await harness.users.createUser({
      id: 'u-alice',
      username: 'alice',
      name: 'Alice',
      email: 'alice@example.test',
      passwordHash: await hashPassword('old-password', FAST),
    });
    await harness.users.createUser({ id: 'u-bob', username: 'bob', name: 'Bob', email: 'bob@example.test' });
  });
  afterEach(() => harness.cleanup());

  it('issues a 256-bit token bound to the account, valid for 15 minutes by default, that the store holds only hashed', async () => {
    const issued = await resets.issue('u-alice', { reason: 'forgotten' });
    expect(issued).not.toBeNull();
    expect(issued!.expiresAt).toBe(now + 15 * 60 * 1000);
    const secret = issued!.token.split('.')[1]!;
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    const checked = await resets.check(issued!.token);
    expect(checked).toMatchObject({
      ok: true,
      account: { id: 'u-alice', username: 'alice' },
      data: { reason: 'forgotten' },
      expiresAt: issued!.expiresAt,
    });
    if (harness.storedValues) {
      const stored = (await harness.storedValues()).join('\n');
      expect(stored).toContain('"userId":"u-alice"');
      expect(stored).not.toContain(secret);
    }
  });

  it('works once: checking does not use it up, redeeming does, and a second redeem says it was used', async () => {
    const { token } = (await resets.issue('u-alice'))!;
    expect((await resets.check(token)).ok).toBe(true);
    expect((await resets.check(token)).ok).toBe(true);
    expect(await resets.redeem(token)).toMatchObject({ ok: true, account: { id: 'u-alice' } });
    expect(await resets.redeem(token)).toEqual({ ok: false, reason: 'used' });
    expect(await resets.check(token)).toEqual({ ok: false, reason: 'used' });
  });

  it('lets exactly one of many concurrent redeems of one token succeed', async () => {
    const { token } = (await resets.issue('u-alice'))!;
    const results = await Promise.all(Array.from({ length: 20 }, () => resets.redeem(token)));
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(results.filter((result) => !result.ok && result.reason === 'used')).toHaveLength(19);
  });

  it('stops working at its expiry, and a shorter lifetime is honoured', async () => {
    const { token } = (await resets.issue('u-alice'))!;
    now += 15 * 60 * 1000 - 1;
    expect((await resets.check(token)).ok).toBe(true);
    now += 1;
    expect(await resets.redeem(token)).toEqual({ ok: false, reason: 'expired' });
    const quick = new AccountTokens({
      store: harness.store,
      users: harness.users,
      purpose: 'quick',
      lifetimeSeconds: 60,
      clock: () => now,
    });
    const short = (await quick.issue('u-alice'))!;
    expect(short.expiresAt).toBe(now + 60_000);
    now += 60_000;
    expect(await quick.check(short.token)).toEqual({ ok: false, reason: 'expired' });
  });

  it('is replaced by a newer request for the same account: only the newest link works', async () => {
    const first = (await resets.issue('u-alice'))!;
    const second = (await resets.issue('u-alice'))!;
    expect(await resets.check(first.token)).toEqual({ ok: false, reason: 'invalid' });
    expect((await resets.redeem(second.token)).ok).toBe(true);
    // A request for another account replaces nothing of Alice's.
    const third = (await resets.issue('u-alice'))!;
    await resets.issue('u-bob');
    expect((await resets.check(third.token)).ok).toBe(true);
  });

  it('dies when the password changes, the address changes or the account is disabled (its credential version moves on)', async () => {
    const beforePassword = (await resets.issue('u-alice'))!;
    await harness.users.setPasswordHash('u-alice', await hashPassword('new-password', FAST));
    expect(await resets.redeem(beforePassword.token)).toEqual({ ok: false, reason: 'stale' });

    const beforeEmail = (await resets.issue('u-alice'))!;
    await harness.users.setEmail('u-alice', 'alice.new@example.test');
    expect(await resets.check(beforeEmail.token)).toEqual({ ok: false, reason: 'stale' });

    const beforeDisable = (await resets.issue('u-alice'))!;
    await harness.users.setDisabled('u-alice', true);
    expect(await resets.check(beforeDisable.token)).toEqual({ ok: false, reason: 'stale' });
    // A disabled or unknown account gets no token at all, alike.
    expect(await resets.issue('u-alice')).toBeNull();
    expect(await resets.issue('u-nobody')).toBeNull();
  });

  it('dies when the account is removed, and can be withdrawn (a mail that could not be sent)', async () => {
    const removed = (await resets.issue('u-bob'))!;
    await harness.users.remove('u-bob');
    expect(await resets.check(removed.token)).toEqual({ ok: false, reason: 'invalid' });
    const withdrawn = (await resets.issue('u-alice'))!;
    expect(await resets.revoke('u-alice')).toBe(true);
    expect(await resets.check(withdrawn.token)).toEqual({ ok: false, reason: 'invalid' });
    expect(await resets.revoke('u-alice')).toBe(false);
  });

  it('refuses guessed, altered, truncated and malformed tokens, and they do not use up or harm the real one', async () => {
    const { token } = (await resets.issue('u-alice'))!;
    const [tag, secret] = token.split('.') as [string, string];
    const flipped = secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A');
    const guesses = [
      `${tag}.${flipped}`,
      `${tag}.${'A'.repeat(43)}`,
      `${tag}.${secret.slice(0, 42)}`,
      `${tag}.${secret}x`,
      `${tag}${secret}`,
      `${tag}.${secret}.${secret}`,
      '',
      'not a token',
      `${tag}.${secret}`.toUpperCase(),
      `${'x'.repeat(10_000)}`,
    ];
    for (const guess of guesses) {
      expect(await resets.redeem(guess)).toEqual({ ok: false, reason: 'invalid' });
    }
    expect(await resets.redeem(undefined as never)).toEqual({ ok: false, reason: 'invalid' });
    expect((await resets.redeem(token)).ok).toBe(true);
  });

  it("binds a token to its account: Alice's secret under Bob's tag, or Bob's link, never opens Alice's account", async () => {
    const alice = (await resets.issue('u-alice'))!;
    const bob = (await resets.issue('u-bob'))!;
    const aliceSecret = alice.token.split('.')[1]!;
    const bobTag = bob.token.split('.')[0]!;
    expect(await resets.check(`${bobTag}.${aliceSecret}`)).toEqual({ ok: false, reason: 'invalid' });
    expect(await resets.check(bob.token)).toMatchObject({ ok: true, account: { id: 'u-bob' } });
  });

  it('keeps purposes apart: a verification token is no reset token', async () => {
    const verifications = new AccountTokens({
      store: harness.store,
      users: harness.users,
      purpose: 'email-verification',
      clock: () => now,
    });
    const verify = (await verifications.issue('u-alice', { email: 'alice@example.test' }))!;
    const reset = (await resets.issue('u-alice'))!;
    expect(await resets.check(verify.token)).toEqual({ ok: false, reason: 'invalid' });
    expect(await verifications.check(reset.token)).toEqual({ ok: false, reason: 'invalid' });
    expect(await verifications.redeem(verify.token)).toMatchObject({ ok: true, data: { email: 'alice@example.test' } });
    expect((await resets.redeem(reset.token)).ok).toBe(true);
  });
});

describe('AccountTokens options', () => {
  const store = new MemoryStore();
  const users = memoryUserDirectory();
  afterAll(() => store.close());

  it.each<[object, RegExp]>([
    [{ store, users, purpose: 'Password Reset' }, /purpose must be a short lower-case name/],
    [{ store, users, purpose: 'reset', lifetimeSeconds: 10 }, /lifetimeSeconds must be from 60 to 86400, got 10/],
    [{ store, users, purpose: 'reset', lifetime: 600 }, /unknown option "lifetime"/],
    [{ store, users }, /purpose is required/],
    [{ store: {}, users, purpose: 'reset' }, /store must be the kit store/],
  ])('refuses %j', (options, message) => {
    expect(() => new AccountTokens(options as never)).toThrow(OptionsError);
    expect(() => new AccountTokens(options as never)).toThrow(message);
  });
});
