import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';

/** The PostgreSQL the suite runs against: 127.0.0.1:5432, database `test`, unless SSO_TEST_DATABASE_URL says otherwise. */
export function testDatabaseUrl(): string {
  return process.env.SSO_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
}

/**
 * A pool and a fresh schema name for one test; `cleanup()` drops the schema (whatever the test created in it) and
 * ends the pool, so a run leaves the database as it found it.
 *
 * @example
 * const pg = await testPostgresSchema('credentials');
 * const store = new PostgresCredentialStore(pg.pool, { schema: pg.schema });
 * afterEach(() => pg.cleanup());
 */
export async function testPostgresSchema(label = 'test'): Promise<{ pool: Pool; schema: string; cleanup: () => Promise<void> }> {
  const pool = new Pool({ connectionString: testDatabaseUrl(), max: 5 });
  const schema = `ssotest_${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(5).toString('hex')}`;
  await pool.query('SELECT 1');
  return {
    pool,
    schema,
    cleanup: async () => {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    },
  };
}
