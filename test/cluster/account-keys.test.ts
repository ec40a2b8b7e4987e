import type { Cluster } from 'ioredis';
import { AccountTokens, redisUserDirectory } from '../../lib/accounts';
import { RedisStore } from '../../lib/store';
import { hashPassword } from '../../lib/util/password-hash';
import { testPrefix } from '../helpers/redis';
import { openTestCluster, recordKeySlots, type TestCluster } from '../helpers/redis-cluster';

describe('the account directory and account tokens on a Redis Cluster', () => {
  let cluster: Cluster;
  let opened: TestCluster;
  const prefix = testPrefix('cluster-accounts');

  beforeAll(async () => {
    opened = await openTestCluster();
    cluster = opened.client;
  }, 40_000);
  afterAll(() => opened?.stop(prefix));

  it('creates, changes, lists and removes accounts and redeems links without a cross-slot command, every key hash-tagged', async () => {
    const store = new RedisStore(cluster, { prefix });
    const recorder = recordKeySlots(cluster);
    try {
      const users = redisUserDirectory(store);
      const resets = new AccountTokens({ store, users, purpose: 'password-reset' });
      const hash = await hashPassword('cluster-password', { N: 1024, r: 8, p: 1 });
      for (let index = 0; index < 6; index += 1) {
        await users.createUser({
          id: `u-${index}`,
          username: `user${index}`,
          name: `User ${index}`,
          email: `user${index}@example.test`,
          passwordHash: hash,
        });
      }
      expect(await users.verifyPassword('USER3', 'cluster-password')).toMatchObject({ id: 'u-3' });
      expect((await users.findByEmail('user4@example.test'))?.id).toBe('u-4');
      await users.setEmail('u-1', 'moved@example.test');
      await users.setDisabled('u-2', true);
      const issued = (await resets.issue('u-0'))!;
      expect((await resets.redeem(issued.token)).ok).toBe(true);
      await users.setPasswordHash('u-0', hash, { ifCredentialVersion: 1 });
      expect((await users.listAccounts({ search: 'user', limit: 4 })).accounts.map((account) => account.id)).toEqual([
        'u-0',
        'u-1',
        'u-2',
        'u-3',
      ]);
      expect(await users.remove('u-5')).toBe(true);
    } finally {
      recorder.stop();
      await store.close();
    }
    expect(recorder.crossSlot()).toEqual([]);
    const keys = [...new Set(recorder.commands.flatMap((command) => command.keys))].map((key) => key.slice(prefix.length));
    expect(keys.length).toBeGreaterThan(10);
    expect(keys.filter((key) => !/\{[^}]+\}/.test(key))).toEqual([]);
  }, 60_000);
});
