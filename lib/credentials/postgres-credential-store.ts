import { StoreUnavailableError } from '../store/port';
import { checkOptions, OptionsError, type OptionSchema } from '../util/options';
import { CredentialConflictError, type CredentialStore, type StoredPasskey, type StoredTotp } from './credential-store';
import { credentialTables } from './postgres-tables';

/** What the store needs of a query result (a `pg` `QueryResult` fits). */
export interface PgQueryResult {
  rows: Array<Record<string, unknown>>;
  rowCount: number | null;
}

/** A checked-out connection (a `pg` `PoolClient` fits). */
export interface PgPoolClient {
  query(text: string, values?: unknown[]): Promise<PgQueryResult>;
  release(error?: Error | boolean): void;
}

/** What the store needs of a pool (a `pg` `Pool` fits), so the kit's types do not require `pg` to be installed. */
export interface PgPool {
  query(text: string, values?: unknown[]): Promise<PgQueryResult>;
  connect(): Promise<PgPoolClient>;
}

/** Options of {@link PostgresCredentialStore}. */
export interface PostgresCredentialStoreOptions {
  /** The schema holding the tables (created when missing); default `sso_credentials`. */
  schema?: string;
}

const OPTIONS: OptionSchema = {
  schema: {
    type: 'string',
    expected: 'a lower-case SQL identifier such as "sso_credentials"',
    check: (value: string) =>
      /^[a-z_][a-z0-9_]{0,62}$/.test(value) ? undefined : `must be a lower-case SQL identifier (a-z, 0-9, _), got "${value}"`,
  },
};

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

function toNumber(value: unknown): number {
  return typeof value === 'string' ? Number(value) : (value as number);
}

function passkeyOfRow(row: Record<string, unknown>): StoredPasskey {
  const passkey: StoredPasskey = {
    credentialId: row.credential_id as string,
    userId: row.user_id as string,
    publicKey: row.public_key as string,
    counter: toNumber(row.counter),
    transports: row.transports as string[],
    deviceType: row.device_type as StoredPasskey['deviceType'],
    backedUp: row.backed_up as boolean,
    name: row.name as string,
    createdAt: toNumber(row.created_at),
  };
  return row.last_used_at === null ? passkey : { ...passkey, lastUsedAt: toNumber(row.last_used_at) };
}

/**
 * The {@link CredentialStore} on PostgreSQL, over a `pg` Pool the application gives (and closes). The tables are
 * created in their own schema on first use. Every single-use or counter rule is one conditional statement
 * (`UPDATE ... WHERE counter = $n`, `INSERT ... ON CONFLICT DO UPDATE ... WHERE last_step < $n`), so concurrent
 * requests cannot both pass it; an unreachable database rejects with {@link StoreUnavailableError} (503).
 *
 * @example
 * const credentials = new PostgresCredentialStore(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 * await credentials.useRecoveryCode('local|alice', hash); // true once, then false
 */
export class PostgresCredentialStore implements CredentialStore {
  private readonly tables: ReturnType<typeof credentialTables>;
  private ready: Promise<void> | undefined;

  constructor(
    private readonly pool: PgPool,
    options: PostgresCredentialStoreOptions = {},
  ) {
    checkOptions('PostgresCredentialStore', options, OPTIONS);
    if (pool === null || typeof pool !== 'object' || typeof pool.query !== 'function' || typeof pool.connect !== 'function') {
      throw new OptionsError('PostgresCredentialStore: pass a pg Pool, e.g. new PostgresCredentialStore(new pg.Pool())');
    }
    this.tables = credentialTables(options.schema ?? 'sso_credentials');
  }

  /** Creates the schema and tables once per store; a failed attempt is retried by the next call. */
  private ensureTables(): Promise<void> {
    this.ready ??= this.transaction(async (client) => {
      // Two processes starting together would race on CREATE ... IF NOT EXISTS; the lock makes them take turns.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`express-sso-kit:${this.tables.schema}`]);
      for (const statement of this.tables.create) await client.query(statement);
    }, false).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private async run<T>(operation: () => Promise<T>, prepare = true): Promise<T> {
    try {
      if (prepare) await this.ensureTables();
      return await operation();
    } catch (error) {
      if (error instanceof CredentialConflictError || error instanceof StoreUnavailableError) throw error;
      if (isPostgresOutage(error)) throw new StoreUnavailableError('the credential database is unavailable', { cause: error });
      throw error;
    }
  }

  private query(text: string, values: unknown[]): Promise<PgQueryResult> {
    return this.run(() => this.pool.query(text, values));
  }

  private async transaction(work: (client: PgPoolClient) => Promise<void>, prepare = true): Promise<void> {
    await this.run(async () => {
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        await work(client);
        await client.query('COMMIT');
        client.release();
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release(error instanceof Error ? error : true);
        throw error;
      }
    }, prepare);
  }

  async listPasskeys(userId: string): Promise<StoredPasskey[]> {
    const result = await this.query(`SELECT * FROM ${this.tables.passkeys} WHERE user_id = $1 ORDER BY created_at, credential_id`, [
      userId,
    ]);
    return result.rows.map(passkeyOfRow);
  }

  async findPasskey(credentialId: string): Promise<StoredPasskey | undefined> {
    const result = await this.query(`SELECT * FROM ${this.tables.passkeys} WHERE credential_id = $1`, [credentialId]);
    const row = result.rows[0];
    return row === undefined ? undefined : passkeyOfRow(row);
  }

  async addPasskey(passkey: StoredPasskey): Promise<void> {
    const result = await this.query(
      `INSERT INTO ${this.tables.passkeys}
         (credential_id, user_id, public_key, counter, transports, device_type, backed_up, name, created_at, last_used_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (credential_id) DO NOTHING`,
      [
        passkey.credentialId,
        passkey.userId,
        passkey.publicKey,
        passkey.counter,
        [...passkey.transports],
        passkey.deviceType,
        passkey.backedUp,
        passkey.name,
        passkey.createdAt,
        passkey.lastUsedAt ?? null,
      ],
    );
    if (result.rowCount !== 1) throw new CredentialConflictError();
  }

  async recordPasskeyUse(
    credentialId: string,
    expectedCounter: number,
    use: { counter: number; backedUp: boolean; usedAt: number },
  ): Promise<boolean> {
    const result = await this.query(
      `UPDATE ${this.tables.passkeys} SET counter = $3, backed_up = $4, last_used_at = $5
       WHERE credential_id = $1 AND counter = $2`,
      [credentialId, expectedCounter, use.counter, use.backedUp, use.usedAt],
    );
    return result.rowCount === 1;
  }

  async renamePasskey(userId: string, credentialId: string, name: string): Promise<boolean> {
    const result = await this.query(`UPDATE ${this.tables.passkeys} SET name = $3 WHERE credential_id = $1 AND user_id = $2`, [
      credentialId,
      userId,
      name,
    ]);
    return result.rowCount === 1;
  }

  async removePasskey(userId: string, credentialId: string): Promise<boolean> {
    const result = await this.query(`DELETE FROM ${this.tables.passkeys} WHERE credential_id = $1 AND user_id = $2`, [
      credentialId,
      userId,
    ]);
    return result.rowCount === 1;
  }

  async getTotp(userId: string): Promise<StoredTotp | undefined> {
    const result = await this.query(`SELECT sealed_secret, created_at FROM ${this.tables.totp} WHERE user_id = $1`, [userId]);
    const row = result.rows[0];
    return row === undefined ? undefined : { sealedSecret: row.sealed_secret as string, createdAt: toNumber(row.created_at) };
  }

  async setTotp(userId: string, totp: StoredTotp): Promise<void> {
    await this.query(
      `INSERT INTO ${this.tables.totp} (user_id, sealed_secret, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (user_id) DO UPDATE SET sealed_secret = EXCLUDED.sealed_secret, created_at = EXCLUDED.created_at`,
      [userId, totp.sealedSecret, totp.createdAt],
    );
  }

  async removeTotp(userId: string): Promise<boolean> {
    let removed = false;
    await this.transaction(async (client) => {
      removed = (await client.query(`DELETE FROM ${this.tables.totp} WHERE user_id = $1`, [userId])).rowCount === 1;
      await client.query(`DELETE FROM ${this.tables.totpSteps} WHERE user_id = $1`, [userId]);
    });
    return removed;
  }

  async advanceTotpStep(userId: string, step: number): Promise<boolean> {
    // One statement: the row is created for the first step, and moved only forward; a step at or before the stored
    // one touches no row, so of two requests with the same code exactly one sees rowCount 1.
    const result = await this.query(
      `INSERT INTO ${this.tables.totpSteps} AS s (user_id, last_step) VALUES ($1, $2)
       ON CONFLICT (user_id) DO UPDATE SET last_step = EXCLUDED.last_step WHERE s.last_step < EXCLUDED.last_step`,
      [userId, step],
    );
    return result.rowCount === 1;
  }

  async setRecoveryCodes(userId: string, codeHashes: readonly string[]): Promise<void> {
    await this.transaction(async (client) => {
      await client.query(`DELETE FROM ${this.tables.recoveryCodes} WHERE user_id = $1`, [userId]);
      await client.query(
        `INSERT INTO ${this.tables.recoveryCodes} (user_id, code_hash)
         SELECT $1, hash FROM unnest($2::text[]) AS hash ON CONFLICT DO NOTHING`,
        [userId, [...codeHashes]],
      );
    });
  }

  async useRecoveryCode(userId: string, codeHash: string): Promise<boolean> {
    const result = await this.query(
      `UPDATE ${this.tables.recoveryCodes} SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`,
      [userId, codeHash, Math.floor(Date.now() / 1000)],
    );
    return result.rowCount === 1;
  }

  async remainingRecoveryCodes(userId: string): Promise<number> {
    const result = await this.query(
      `SELECT count(*) AS remaining FROM ${this.tables.recoveryCodes} WHERE user_id = $1 AND used_at IS NULL`,
      [userId],
    );
    return toNumber(result.rows[0]?.remaining ?? 0);
  }

  async ping(): Promise<void> {
    await this.run(() => this.pool.query('SELECT 1'), false);
  }

  async close(): Promise<void> {
    // The pool is the application's (it may serve other tables); ending it is the application's to do.
  }
}
