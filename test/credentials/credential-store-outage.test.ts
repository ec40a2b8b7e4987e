import { Pool } from 'pg';
import { KeyValueCredentialStore, PostgresCredentialStore } from '../../lib/credentials';
import { MemoryStore, RedisStore, StoreUnavailableError } from '../../lib/store';
import { testPostgresSchema } from '../helpers/postgres';
import { freePort, startPrivateRedis } from '../helpers/redis';

describe('credential stores fail closed when their service is down', () => {
  it('KeyValueCredentialStore on a stopped Redis rejects with StoreUnavailableError', async () => {
    const redis = await startPrivateRedis();
    const kv = new RedisStore(redis.url, { prefix: 'outage:' });
    const store = new KeyValueCredentialStore(kv);
    try {
      expect(await store.advanceTotpStep('local|alice', 1)).toBe(true);
      await redis.stop();
      await expect(store.advanceTotpStep('local|alice', 2)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.useRecoveryCode('local|alice', 'h')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await kv.close();
      await redis.stop();
    }
  });

  it('PostgresCredentialStore on an unreachable database rejects with StoreUnavailableError', async () => {
    const pool = new Pool({ host: '127.0.0.1', port: await freePort(), user: 'postgres', database: 'test', connectionTimeoutMillis: 2000 });
    const store = new PostgresCredentialStore(pool, { schema: 'ssotest_unreachable' });
    try {
      await expect(store.getTotp('local|alice')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.advanceTotpStep('local|alice', 1)).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await pool.end();
    }
  });

  it('PostgresCredentialStore on an ended pool rejects with StoreUnavailableError, and a statement bug is not an outage', async () => {
    const pg = await testPostgresSchema('outage');
    const store = new PostgresCredentialStore(pg.pool, { schema: pg.schema });
    await store.setRecoveryCodes('local|alice', ['h1']);
    // A value PostgreSQL refuses (not a bigint) is a caller's bug, reported as itself rather than as a 503.
    await expect(store.advanceTotpStep('local|alice', Number.NaN)).rejects.not.toBeInstanceOf(StoreUnavailableError);
    await pg.cleanup();
    await expect(store.useRecoveryCode('local|alice', 'h1')).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('PostgresCredentialStore', () => {
  it('creates its tables once when several stores start together on a new schema', async () => {
    const pg = await testPostgresSchema('create');
    try {
      const stores = Array.from({ length: 4 }, () => new PostgresCredentialStore(pg.pool, { schema: pg.schema }));
      const wins = await Promise.all(stores.map((store) => store.advanceTotpStep('local|alice', 7)));
      expect(wins.filter(Boolean)).toHaveLength(1);
      const tables = await pg.pool.query('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1', [
        pg.schema,
      ]);
      expect(tables.rows.map((row: { table_name: string }) => row.table_name)).toEqual([
        'passkeys',
        'recovery_codes',
        'totp',
        'totp_steps',
      ]);
    } finally {
      await pg.cleanup();
    }
  });

  it('checks its options when constructed', () => {
    const pool = { query: jest.fn(), connect: jest.fn() };
    expect(() => new PostgresCredentialStore(pool as never, { schema: 'bad-name"; drop' })).toThrow(
      /schema must be a lower-case SQL identifier/,
    );
    expect(() => new PostgresCredentialStore(pool as never, { shema: 'x' } as never)).toThrow(/schema/);
    expect(() => new PostgresCredentialStore(undefined as never)).toThrow(/pass a pg Pool/);
  });
});

describe('KeyValueCredentialStore', () => {
  it('keeps a user’s keys under one Cluster hash tag and no user id in the key names', async () => {
    const memory = new MemoryStore();
    const written: string[] = [];
    for (const method of ['set', 'setIfAbsent', 'compareAndSet', 'addToSet'] as const) {
      const original = memory[method].bind(memory) as (...args: unknown[]) => unknown;
      (memory as unknown as Record<string, unknown>)[method] = (key: string, ...rest: unknown[]) => {
        written.push(key);
        return original(key, ...rest);
      };
    }
    const store = new KeyValueCredentialStore(memory);
    await store.setTotp('local|alice', { sealedSecret: 's', createdAt: 1 });
    await store.advanceTotpStep('local|alice', 1);
    await store.setRecoveryCodes('local|alice', ['h']);
    await store.addPasskey({
      credentialId: 'cred',
      userId: 'local|alice',
      publicKey: 'pk',
      counter: 0,
      transports: [],
      deviceType: 'singleDevice',
      backedUp: false,
      name: 'key',
      createdAt: 1,
    });
    const userKeys = written.filter((key) => key.startsWith('credentials:'));
    expect(new Set(userKeys.map((key) => /\{([^}]*)\}/.exec(key)?.[1])).size).toBe(1);
    expect(written.join(' ')).not.toContain('alice');
    await memory.close();
  });
});
