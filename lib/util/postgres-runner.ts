import type { PgPool, PgPoolClient, PgQueryResult } from '../credentials/postgres-credential-store';
import { StoreUnavailableError } from '../store/port';
import type { OptionSpec } from './options';

/** The `schema` option of the kit's PostgreSQL stores: a lower-case identifier, so it can be quoted into SQL safely. */
export function schemaOption(example: string): OptionSpec {
  return {
    type: 'string',
    expected: `a lower-case SQL identifier such as "${example}"`,
    check: (value: string) =>
      /^[a-z_][a-z0-9_]{0,62}$/.test(value) ? undefined : `must be a lower-case SQL identifier (a-z, 0-9, _), got "${value}"`,
  };
}

/** True when `pool` looks like a `pg` Pool (the kit does not import `pg`, an optional peer). */
export function isPgPool(pool: unknown): pool is PgPool {
  return (
    pool !== null &&
    typeof pool === 'object' &&
    typeof (pool as PgPool).query === 'function' &&
    typeof (pool as PgPool).connect === 'function'
  );
}

// SQLSTATE classes that mean "the database cannot serve now" (connection exception, insufficient resources,
// operator intervention such as a shutdown), as opposed to a mistake in the statement.
const OUTAGE_STATES = /^(08|53|57P)/;

/** True when a `pg` error means PostgreSQL is unreachable or shutting down: the kit answers 503. */
export function isPostgresOutage(error: unknown): boolean {
  // Not `instanceof Error`: socket errors may come from another realm (a test runner's VM context).
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return OUTAGE_STATES.test(code);
  // No SQLSTATE: a socket error (ECONNREFUSED, ECONNRESET), a connection timeout or a pool that was ended.
  return true;
}

/** One step of a store's schema: applied once, in order, recorded in the schema's `migrations` table. */
export interface Migration {
  version: number;
  statements: readonly string[];
}

/**
 * The SQL that brings `schema` to the latest of `migrations`, as one script an operator can review and run (when the
 * application is not allowed to change the schema itself). Safe to run twice.
 *
 * @example
 * console.log(migrationScript('sso_accounts', migrations));
 */
export function migrationScript(schema: string, migrations: readonly Migration[]): string {
  const lines = [`CREATE SCHEMA IF NOT EXISTS "${schema}";`, migrationsTable(schema) + ';'];
  for (const migration of migrations) {
    lines.push(`-- version ${migration.version}`, ...migration.statements.map((statement) => `${statement};`));
    lines.push(`INSERT INTO "${schema}".migrations (version, applied_at) VALUES (${migration.version}, 0) ON CONFLICT DO NOTHING;`);
  }
  return `${lines.join('\n')}\n`;
}

function migrationsTable(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS "${schema}".migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)`;
}

/**
 * Runs a store's statements over a `pg` Pool the application owns: applies the store's migrations once (under an
 * advisory lock, so processes starting together take turns), and turns an unreachable database into
 * {@link StoreUnavailableError} (503). Errors the store throws on purpose pass through unchanged.
 *
 * @example
 * const runner = new PostgresRunner(pool, 'sso_accounts', migrations, { passThrough: [ConflictError] });
 * const { rows } = await runner.query('SELECT 1', []);
 */
export class PostgresRunner {
  private ready: Promise<void> | undefined;

  constructor(
    private readonly pool: PgPool,
    readonly schema: string,
    private readonly migrations: readonly Migration[],
    private readonly options: { createTables: boolean; what: string; passThrough: readonly (abstract new (...args: never[]) => Error)[] },
  ) {}

  /** Applies the migrations not yet recorded; a failed attempt is retried by the next call. */
  private ensureTables(): Promise<void> {
    if (!this.options.createTables) return Promise.resolve();
    this.ready ??= this.transactionWith(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`express-sso-kit:${this.schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
      await client.query(migrationsTable(this.schema));
      const applied = new Set(
        (await client.query(`SELECT version FROM "${this.schema}".migrations`)).rows.map((row) => Number(row.version)),
      );
      for (const migration of this.migrations) {
        if (applied.has(migration.version)) continue;
        for (const statement of migration.statements) await client.query(statement);
        await client.query(`INSERT INTO "${this.schema}".migrations (version, applied_at) VALUES ($1, $2)`, [
          migration.version,
          Date.now(),
        ]);
      }
    }, false).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  /** Runs `operation` once the tables exist, mapping an outage to 503. */
  async run<T>(operation: () => Promise<T>, prepare = true): Promise<T> {
    try {
      if (prepare) await this.ensureTables();
      return await operation();
    } catch (error) {
      if (error instanceof StoreUnavailableError || this.options.passThrough.some((type) => error instanceof type)) throw error;
      if (isPostgresOutage(error)) throw new StoreUnavailableError(`the ${this.options.what} database is unavailable`, { cause: error });
      throw error;
    }
  }

  query(text: string, values: unknown[]): Promise<PgQueryResult> {
    return this.run(() => this.pool.query(text, values));
  }

  /** Runs `work` in one transaction (BEGIN … COMMIT, ROLLBACK on any error) and answers what it answered. */
  transaction<T>(work: (client: PgPoolClient) => Promise<T>): Promise<T> {
    return this.transactionWith(work, true);
  }

  private transactionWith<T>(work: (client: PgPoolClient) => Promise<T>, prepare: boolean): Promise<T> {
    return this.run(async () => {
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(client);
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release(error instanceof Error ? error : true);
        throw error;
      }
    }, prepare);
  }

  ping(): Promise<void> {
    return this.run(async () => {
      await this.pool.query('SELECT 1');
    }, false);
  }
}
