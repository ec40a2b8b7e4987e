import type { PgPool, PgPoolClient } from '../credentials/postgres-credential-store';
import { ConflictError, UnprocessableEntityError } from '../http/errors';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { isPgPool, migrationScript, PostgresRunner, schemaOption, type Migration } from '../util/postgres-runner';
import {
  accountFinders,
  accountOf,
  checkAccountSearch,
  checkEmail,
  checkPasswordHash,
  newStoredAccount,
  normalizeEmail,
  withDisabled,
  withEmail,
  withPasswordHash,
  versionMatches,
  type StoredAccount,
} from './account-record';
import { DEFAULT_DIRECTORY_SOURCE, normalizeUsername, SOURCE_OPTION } from './user-directory';
import type { Account, AccountPage, AccountSearch, NewAccount, SetEmailOptions, WritableUserDirectory } from './writable-user-directory';

/** Options of {@link postgresUserDirectory}. */
export interface PostgresUserDirectoryOptions {
  /** The schema holding the tables; default `sso_accounts`. */
  schema?: string;
  /**
   * Whether the directory creates its schema and tables (and applies later migrations) on first use. Default true;
   * with false, run the SQL of {@link postgresUserDirectorySql} yourself before starting the app.
   */
  createTables?: boolean;
  /** The identity source of the directory's users, `directory:<name>`. Default `directory:local`. */
  source?: string;
}

const OPTIONS: OptionSchema = { schema: schemaOption('sso_accounts'), createTables: { type: 'boolean' }, source: SOURCE_OPTION };

function migrations(schema: string): Migration[] {
  const accounts = `"${schema}".accounts`;
  return [
    {
      version: 1,
      statements: [
        `CREATE TABLE IF NOT EXISTS ${accounts} (
           id text PRIMARY KEY,
           username text NOT NULL,
           username_key text NOT NULL CONSTRAINT accounts_username_key UNIQUE,
           name text NOT NULL,
           roles text[] NOT NULL,
           attributes jsonb,
           email text,
           email_key text CONSTRAINT accounts_email_key UNIQUE,
           email_verified boolean NOT NULL,
           disabled boolean NOT NULL,
           password_hash text,
           credential_version bigint NOT NULL,
           created_at bigint NOT NULL,
           changed_at bigint NOT NULL,
           password_changed_at bigint,
           search_text text NOT NULL
         )`,
      ],
    },
  ];
}

/**
 * The SQL that creates (or brings up to date) the tables of {@link postgresUserDirectory} in `schema`, for operators
 * who review schema changes and run them themselves (then pass `createTables: false`). Safe to run twice.
 *
 * @example
 * // npx tsx -e "console.log(require('express-sso-kit').postgresUserDirectorySql({ schema: 'sso_accounts' }))" > accounts.sql
 * const sql = postgresUserDirectorySql({ schema: 'sso_accounts' });
 */
export function postgresUserDirectorySql(options: { schema?: string } = {}): string {
  checkOptions('postgresUserDirectorySql', options as unknown, { schema: schemaOption('sso_accounts') });
  const schema = options.schema ?? 'sso_accounts';
  return migrationScript(schema, migrations(schema));
}

function toNumber(value: unknown): number {
  return typeof value === 'string' ? Number(value) : (value as number);
}

function storedOfRow(row: Record<string, unknown>): StoredAccount {
  return {
    id: row.id as string,
    username: row.username as string,
    name: row.name as string,
    roles: row.roles as string[],
    ...(row.attributes === null ? {} : { attributes: row.attributes as StoredAccount['attributes'] }),
    ...(row.email === null ? {} : { email: row.email as string }),
    emailVerified: row.email_verified as boolean,
    disabled: row.disabled as boolean,
    ...(row.password_hash === null ? {} : { passwordHash: row.password_hash as string }),
    credentialVersion: toNumber(row.credential_version),
    createdAt: toNumber(row.created_at),
    changedAt: toNumber(row.changed_at),
    ...(row.password_changed_at === null ? {} : { passwordChangedAt: toNumber(row.password_changed_at) }),
  };
}

const COLUMNS = [
  'id',
  'username',
  'username_key',
  'name',
  'roles',
  'attributes',
  'email',
  'email_key',
  'email_verified',
  'disabled',
  'password_hash',
  'credential_version',
  'created_at',
  'changed_at',
  'password_changed_at',
  'search_text',
] as const;

function rowValues(stored: StoredAccount): unknown[] {
  return [
    stored.id,
    stored.username,
    normalizeUsername(stored.username),
    stored.name,
    [...stored.roles],
    stored.attributes === undefined ? null : JSON.stringify(stored.attributes),
    stored.email ?? null,
    stored.email === undefined ? null : normalizeEmail(stored.email),
    stored.emailVerified,
    stored.disabled,
    stored.passwordHash ?? null,
    stored.credentialVersion,
    stored.createdAt,
    stored.changedAt,
    stored.passwordChangedAt ?? null,
    // What listAccounts searches, folded as the search text is (matchesSearch of the key-value directory).
    [stored.username, stored.name, stored.email ?? ''].map(normalizeUsername).join('\n'),
  ];
}

/** A unique-key violation (SQLSTATE 23505) as the 409 the directory promises, named after the key. */
function conflictOf(error: unknown): ConflictError | undefined {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  if (code !== '23505') return undefined;
  if (constraint === 'accounts_username_key')
    return new ConflictError({ code: 'username_taken', detail: 'the username belongs to another account' });
  if (constraint === 'accounts_email_key')
    return new ConflictError({ code: 'email_taken', detail: 'the email address belongs to another account' });
  return new ConflictError({ code: 'id_taken', detail: 'an account with this id exists' });
}

const LIKE_SPECIALS = /[\\%_]/g;

/**
 * The {@link WritableUserDirectory} on PostgreSQL, over a `pg` Pool the application gives (and closes): one row per
 * account in `<schema>.accounts`, usernames and addresses unique through their folded keys. Every change is one
 * transaction that locks the account's row (`SELECT … FOR UPDATE`), so concurrent writes queue and a conditional
 * write is decided on the current row. The schema and table are created on first use (or by the operator from
 * {@link postgresUserDirectorySql}); an unreachable database rejects with `StoreUnavailableError` (503).
 *
 * @example
 * const users = postgresUserDirectory(new pg.Pool({ connectionString: process.env.DATABASE_URL }), { schema: 'sso_accounts' });
 * app.use(loginPortal({ users, store }));
 */
export function postgresUserDirectory(pool: PgPool, options: PostgresUserDirectoryOptions = {}): WritableUserDirectory {
  checkOptions('postgresUserDirectory', options as unknown, OPTIONS);
  if (!isPgPool(pool)) throw new OptionsError('postgresUserDirectory: pass a pg Pool, e.g. postgresUserDirectory(new pg.Pool())');
  const schema = options.schema ?? 'sso_accounts';
  const accounts = `"${schema}".accounts`;
  const runner = new PostgresRunner(pool, schema, migrations(schema), {
    createTables: options.createTables ?? true,
    what: 'user directory',
    passThrough: [ConflictError, UnprocessableEntityError],
  });

  async function findWhere(column: 'id' | 'username_key' | 'email_key', value: string): Promise<StoredAccount | null> {
    const result = await runner.query(`SELECT * FROM ${accounts} WHERE ${column} = $1`, [value]);
    const row = result.rows[0];
    return row === undefined ? null : storedOfRow(row);
  }

  /** Locks the account's row, applies `change` and writes the result, all in one transaction. */
  async function update(id: string, change: (stored: StoredAccount) => StoredAccount | null): Promise<StoredAccount | null> {
    try {
      return await runner.transaction(async (client: PgPoolClient) => {
        const row = (await client.query(`SELECT * FROM ${accounts} WHERE id = $1 FOR UPDATE`, [id])).rows[0];
        if (row === undefined) return null;
        const before = storedOfRow(row);
        const after = change(before);
        if (after === null || after === before) return after;
        const values = rowValues(after);
        const assignments = COLUMNS.slice(1).map((column, index) => `${column} = $${index + 2}`);
        await client.query(`UPDATE ${accounts} SET ${assignments.join(', ')} WHERE id = $1`, values);
        return after;
      });
    } catch (error) {
      throw conflictOf(error) ?? error;
    }
  }

  return {
    source: options.source ?? DEFAULT_DIRECTORY_SOURCE,

    ...accountFinders({
      byId: (id) => findWhere('id', id),
      byUsername: (username) => findWhere('username_key', normalizeUsername(username)),
      byEmail: (email) => findWhere('email_key', normalizeEmail(email)),
    }),

    async createUser(input: NewAccount): Promise<Account> {
      const stored = newStoredAccount(input, Date.now(), 'postgresUserDirectory.createUser');
      const placeholders = COLUMNS.map((_, index) => `$${index + 1}`).join(', ');
      try {
        await runner.query(`INSERT INTO ${accounts} (${COLUMNS.join(', ')}) VALUES (${placeholders})`, rowValues(stored));
      } catch (error) {
        throw conflictOf(error) ?? error;
      }
      return accountOf(stored);
    },

    async setPasswordHash(id, passwordHash, condition = {}): Promise<Account | null> {
      const hash = checkPasswordHash(passwordHash, 'postgresUserDirectory.setPasswordHash');
      const now = Date.now();
      const after = await update(id, (stored) =>
        versionMatches(stored, condition.ifCredentialVersion) ? withPasswordHash(stored, hash, now) : null,
      );
      return after && accountOf(after);
    },

    async setEmail(id: string, email: string | null, options: SetEmailOptions = {}): Promise<Account | null> {
      const address = email === null ? null : checkEmail(email, 'postgresUserDirectory.setEmail');
      const now = Date.now();
      const after = await update(id, (stored) =>
        versionMatches(stored, options.ifCredentialVersion) ? withEmail(stored, address, options.verified === true, now) : null,
      );
      return after && accountOf(after);
    },

    async setDisabled(id: string, disabled: boolean): Promise<Account | null> {
      const now = Date.now();
      const after = await update(id, (stored) => withDisabled(stored, disabled === true, now));
      return after && accountOf(after);
    },

    async remove(id: string): Promise<boolean> {
      const result = await runner.query(`DELETE FROM ${accounts} WHERE id = $1`, [id]);
      return result.rowCount === 1;
    },

    async listAccounts(query?: AccountSearch): Promise<AccountPage> {
      const { search, offset, limit } = checkAccountSearch(query, 'postgresUserDirectory.listAccounts');
      const pattern = `%${search.replace(LIKE_SPECIALS, (special) => `\\${special}`)}%`;
      const where = `WHERE search_text LIKE $1`;
      const total = toNumber((await runner.query(`SELECT count(*) AS total FROM ${accounts} ${where}`, [pattern])).rows[0]?.total ?? 0);
      const page = await runner.query(
        `SELECT * FROM ${accounts} ${where} ORDER BY username_key COLLATE "C", id COLLATE "C" LIMIT $2 OFFSET $3`,
        [pattern, limit, offset],
      );
      return { accounts: page.rows.map((row) => accountOf(storedOfRow(row))), total, offset, limit };
    },
  };
}
