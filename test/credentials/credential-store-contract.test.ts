import { KeyValueCredentialStore, PostgresCredentialStore } from '../../lib/credentials';
import { MemoryStore } from '../../lib/store';
import { testPostgresSchema } from '../helpers/postgres';
import { testRedisStore } from '../helpers/redis';
import { describeCredentialStoreContract } from './credential-store.contract';

describeCredentialStoreContract('KeyValueCredentialStore on MemoryStore', async () => {
  const store = new MemoryStore();
  return { store: new KeyValueCredentialStore(store), cleanup: () => store.close() };
});

describeCredentialStoreContract('KeyValueCredentialStore on RedisStore', async () => {
  const redis = await testRedisStore('credentials');
  return { store: new KeyValueCredentialStore(redis.store), cleanup: redis.cleanup };
});

describeCredentialStoreContract('PostgresCredentialStore', async () => {
  const pg = await testPostgresSchema('credentials');
  return { store: new PostgresCredentialStore(pg.pool, { schema: pg.schema }), cleanup: pg.cleanup };
});
