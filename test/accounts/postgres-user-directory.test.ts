import { Pool } from 'pg';
import { postgresUserDirectory, postgresUserDirectorySql } from '../../lib/accounts';
import { StoreUnavailableError } from '../../lib/store';
import { testPostgresSchema } from '../helpers/postgres';
import { expectSameStoreWorkForUnknownNames } from './user-directory.contract';

describe('postgresUserDirectory', () => {
  let pg: Awaited<ReturnType<typeof testPostgresSchema>>;
  beforeEach(async () => {
    pg = await testPostgresSchema('accounts_pg');
  });
  afterEach(() => pg.cleanup());

  it('creates its schema on first use and records the migration it applied', async () => {
    const users = postgresUserDirectory(pg.pool, { schema: pg.schema });
    await users.createUser({ id: 'u-1', username: 'alice', name: 'Alice' });
    const { rows } = await pg.pool.query(`SELECT version FROM "${pg.schema}".migrations`);
    expect(rows.map((row: { version: number }) => row.version)).toEqual([1]);
    // A second directory (another process) finds the schema up to date and applies nothing twice.
    expect((await postgresUserDirectory(pg.pool, { schema: pg.schema }).findByUsername('ALICE'))?.id).toBe('u-1');
  });

  it('with createTables: false uses the tables the operator made from postgresUserDirectorySql, which can run twice', async () => {
    const users = postgresUserDirectory(pg.pool, { schema: pg.schema, createTables: false });
    await expect(users.findById('u-1')).rejects.toMatchObject({ code: '42P01' });
    const sql = postgresUserDirectorySql({ schema: pg.schema });
    expect(sql).toContain(`CREATE TABLE IF NOT EXISTS "${pg.schema}".accounts`);
    await pg.pool.query(sql);
    await pg.pool.query(sql);
    await users.createUser({ id: 'u-1', username: 'alice', name: 'Alice' });
    expect((await users.findById('u-1'))?.username).toBe('alice');
  });

  it('sends the same queries for an unknown username or address as for a known one, so the answer time does not tell them apart', async () => {
    const queries: string[] = [];
    // The real pool, each statement written down without its values.
    const counted = new Proxy(pg.pool, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name === 'query') {
          return (text: string, values: unknown[]) => {
            queries.push(text);
            return target.query(text, values);
          };
        }
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const users = postgresUserDirectory(counted, { schema: pg.schema });
    expect(await expectSameStoreWorkForUnknownNames(users, queries)).toHaveLength(1);
  });

  it('answers StoreUnavailableError (503) when PostgreSQL cannot be reached', async () => {
    const down = new Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMillis: 2000 });
    try {
      const users = postgresUserDirectory(down, { schema: pg.schema });
      await expect(users.findById('u-1')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(users.verifyPassword('alice', 'x')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(users.createUser({ username: 'alice', name: 'Alice' })).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await down.end();
    }
  });

  it('refuses a pool that is not one, a schema that is not a plain identifier and a misspelled option', () => {
    expect(() => postgresUserDirectory({} as never)).toThrow(/pass a pg Pool/);
    expect(() => postgresUserDirectory(pg.pool, { schema: 'bad"schema' })).toThrow(/schema must be a lower-case SQL identifier/);
    expect(() => postgresUserDirectory(pg.pool, { schma: 'x' } as never)).toThrow(
      /postgresUserDirectory: unknown option "schma" \(did you mean "schema"\?\)/,
    );
    expect(() => postgresUserDirectorySql({ schema: 'Bad' })).toThrow(/postgresUserDirectorySql: schema must be/);
  });
});
