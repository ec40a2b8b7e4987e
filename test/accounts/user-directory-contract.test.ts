import { memoryUserDirectory, postgresUserDirectory, redisUserDirectory } from '../../lib/accounts';
import { testPostgresSchema } from '../helpers/postgres';
import { testRedisStore } from '../helpers/redis';
import { describeUserDirectoryContract } from './user-directory.contract';

// Under scripts/test-cluster.sh the Redis run goes to a Redis Cluster (SSO_TEST_REDIS_CLUSTER).
describeUserDirectoryContract('memoryUserDirectory', async () => ({ users: memoryUserDirectory(), cleanup: async () => undefined }));

describeUserDirectoryContract('redisUserDirectory', async () => {
  const redis = await testRedisStore('accounts');
  return { users: redisUserDirectory(redis.store, { source: 'directory:staff' }), cleanup: redis.cleanup };
});

describeUserDirectoryContract('postgresUserDirectory', async () => {
  const pg = await testPostgresSchema('accounts');
  return { users: postgresUserDirectory(pg.pool, { schema: pg.schema }), cleanup: pg.cleanup };
});
