import { memoryUserDirectory, redisUserDirectory } from '../../lib/accounts';
import { MemoryStore } from '../../lib/store';
import { sha256 } from '../../lib/util/digest';
import { testRedisStore } from '../helpers/redis';
import { expectSameStoreWorkForUnknownNames } from './user-directory.contract';

/** The key redisUserDirectory keeps a username under (in the default namespace). */
function usernameKey(username: string): string {
  return `users:name:{${sha256(username, 'base64url').slice(0, 22)}}`;
}

describe('redisUserDirectory', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  beforeAll(async () => {
    redis = await testRedisStore('kv-accounts');
  });
  afterAll(() => redis.cleanup());

  it('takes over a username claimed by a writer that died before writing its account, once the claim is a minute old', async () => {
    const users = redisUserDirectory(redis.store);
    await redis.store.set(usernameKey('ghost'), JSON.stringify({ id: 'u-died', at: Date.now() - 61_000 }));
    const created = await users.createUser({ id: 'u-ghost', username: 'Ghost', name: 'Ghost' });
    expect((await users.findByUsername('ghost'))?.id).toBe(created.id);
  });

  it('leaves a fresh claim to its writer, which may be writing its account right now', async () => {
    const users = redisUserDirectory(redis.store);
    await redis.store.set(usernameKey('busy'), JSON.stringify({ id: 'u-writing', at: Date.now() }));
    await expect(users.createUser({ id: 'u-late', username: 'busy', name: 'Late' })).rejects.toMatchObject({
      status: 409,
      code: 'username_taken',
    });
    // Until the writer's account exists, the claim alone names nobody.
    expect(await users.findByUsername('busy')).toBeNull();
    expect(await users.verifyPassword('busy', 'x')).toBeNull();
  });

  it('names its identity source: directory:local unless the source option names another directory', () => {
    expect(redisUserDirectory(redis.store).source).toBe('directory:local');
    expect(redisUserDirectory(redis.store, { source: 'directory:staff' }).source).toBe('directory:staff');
    expect(memoryUserDirectory({ source: 'directory:staff' }).source).toBe('directory:staff');
  });

  it('rejects a store that is not the kit store, a bad namespace, a bad source and a misspelled option', () => {
    expect(() => redisUserDirectory({} as never)).toThrow(/pass the kit store/);
    expect(() => redisUserDirectory(redis.store, { namespace: 'a{b}' })).toThrow(/namespace must match/);
    expect(() => redisUserDirectory(redis.store, { source: 'qr:x' })).toThrow(/source must be "directory:<name>"/);
    expect(() => redisUserDirectory(redis.store, { namepsace: 'x' } as never)).toThrow(
      /redisUserDirectory: unknown option "namepsace" \(did you mean "namespace"\?\)/,
    );
    expect(() => memoryUserDirectory({ sourc: 'directory:x' } as never)).toThrow(/memoryUserDirectory: unknown option "sourc"/);
  });

  it('keeps two namespaces of one store apart', async () => {
    const store = new MemoryStore();
    try {
      const staff = redisUserDirectory(store, { namespace: 'staff' });
      const customers = redisUserDirectory(store, { namespace: 'customers' });
      await staff.createUser({ id: 'u-1', username: 'alice', name: 'Staff Alice' });
      await customers.createUser({ id: 'u-1', username: 'alice', name: 'Customer Alice' });
      expect((await staff.findByUsername('alice'))?.name).toBe('Staff Alice');
      expect((await customers.findById('u-1'))?.name).toBe('Customer Alice');
    } finally {
      await store.close();
    }
  });

  it('makes the same store reads for an unknown username or address as for a known one, so the answer time does not tell them apart', async () => {
    const calls: string[] = [];
    // The real store, each call written down by name.
    const counted = new Proxy(redis.store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return (value as (...given: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const users = redisUserDirectory(counted, { namespace: 'store-work' });
    expect(await expectSameStoreWorkForUnknownNames(users, calls)).toEqual(['get', 'get']);
  });
});
