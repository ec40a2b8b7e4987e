import type { PgPool } from '../credentials/postgres-credential-store';
import { isPostgresOutage } from '../credentials/postgres-credential-store';
import { StoreUnavailableError } from '../store/port';
import { checkOptions, OptionsError, within, type OptionSchema } from '../util/options';
import type { SecurityEventStore } from './redis-stream-sink';
import type { SecurityEvent } from './security-event';

/** Options of {@link postgresEventSink}. */
export interface PostgresEventSinkOptions {
  /** The schema holding the table (created when missing). Default `sso_events`. */
  schema?: string;
  /** Events older than this are deleted, at most once an hour, after a write. Default 7776000 (90 days). */
  maxAgeSeconds?: number;
}

/** The PostgreSQL event store: a sink that answers "the last events of this user", and its table's statements. */
export interface PostgresEventSink extends SecurityEventStore {
  /** The statements that create the schema, table and indexes (run on first use; print them for a DBA). */
  readonly createStatements: readonly string[];
  /** Deletes events older than `maxAgeSeconds` now; resolves to how many were deleted. */
  prune(): Promise<number>;
}

const DAY = 86_400;
const PRUNE_INTERVAL_MS = 3_600_000;
const SCHEMA: OptionSchema = {
  schema: {
    type: 'string',
    expected: 'a lower-case SQL identifier such as "sso_events"',
    check: (value: string) =>
      /^[a-z_][a-z0-9_]{0,62}$/.test(value) ? undefined : `must be a lower-case SQL identifier (a-z, 0-9, _), got "${value}"`,
  },
  maxAgeSeconds: { type: 'integer', expected: 'a whole number of seconds from 3600 to 315360000', check: within(3600, 3650 * DAY) },
};

/**
 * The event table in `schema`: one row per event, its fields as `jsonb`, the columns a query filters on beside it.
 *
 * @example
 * const { table, create } = eventTable('sso_events');
 */
export function eventTable(schema: string) {
  const table = `"${schema}".security_events`;
  return {
    table,
    create: [
      `CREATE SCHEMA IF NOT EXISTS "${schema}"`,
      `CREATE TABLE IF NOT EXISTS ${table} (
         id bigserial PRIMARY KEY,
         time timestamptz NOT NULL,
         type text NOT NULL,
         outcome text NOT NULL,
         user_id text,
         event jsonb NOT NULL
       )`,
      // "The last N events of this user" reads one index range, newest first.
      `CREATE INDEX IF NOT EXISTS security_events_user ON ${table} (user_id, id DESC) WHERE user_id IS NOT NULL`,
      `CREATE INDEX IF NOT EXISTS security_events_time ON ${table} (time)`,
    ],
  };
}

function asOutage(error: unknown): unknown {
  return isPostgresOutage(error) ? new StoreUnavailableError('the event database is unavailable', { cause: error }) : error;
}

/**
 * Security events in PostgreSQL (the database where the app keeps credentials, over the same `pg` Pool), one row
 * per event with its fields as `jsonb`, the table made on first use. Writes are one multi-row `INSERT` per batch;
 * "the last N events of user X" is one index range scan. Rows older than `maxAgeSeconds` are deleted as it writes.
 *
 * @example
 * const events = securityEvents({ sinks: [pinoSink(), postgresEventSink(pool)] });
 */
export function postgresEventSink(pool: PgPool, options: PostgresEventSinkOptions = {}): PostgresEventSink {
  checkOptions('postgresEventSink', options, SCHEMA);
  if (pool === null || typeof pool !== 'object' || typeof pool.query !== 'function') {
    throw new OptionsError('postgresEventSink: pass a pg Pool, e.g. postgresEventSink(new pg.Pool())');
  }
  const schema = options.schema ?? 'sso_events';
  const { table, create } = eventTable(schema);
  const maxAgeSeconds = options.maxAgeSeconds ?? 90 * DAY;
  let ready: Promise<unknown> | undefined;
  let prunedAt = 0;

  function ensureTable(): Promise<unknown> {
    // One simple-protocol query is one transaction: the lock makes starting processes take turns on CREATE.
    ready ??= pool.query([`SELECT pg_advisory_xact_lock(hashtext('express-sso-kit:${schema}'))`, ...create].join(';\n')).catch((error) => {
      ready = undefined;
      throw error;
    });
    return ready;
  }

  async function prune(): Promise<number> {
    await ensureTable();
    prunedAt = Date.now();
    const result = await pool.query(`DELETE FROM ${table} WHERE time < now() - make_interval(secs => $1)`, [maxAgeSeconds]);
    return result.rowCount ?? 0;
  }

  return {
    name: 'postgres',
    createStatements: create,
    async write(batch) {
      await ensureTable();
      await pool.query(
        `INSERT INTO ${table} (time, type, outcome, user_id, event)
         SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::jsonb[])`,
        [
          batch.map((event) => event.time),
          batch.map((event) => event.type),
          batch.map((event) => event.outcome),
          // Attempts on a username without a known user are found by its keyed hash (`#<hash>`), as in the stream.
          batch.map((event) => event.userId ?? (event.usernameHash === undefined ? null : `#${event.usernameHash}`)),
          batch.map((event) => JSON.stringify(event)),
        ],
      );
      if (Date.now() - prunedAt >= PRUNE_INTERVAL_MS) await prune();
    },
    async recentEvents(userId, limit) {
      try {
        await ensureTable();
        const result = await pool.query(`SELECT event FROM ${table} WHERE user_id = $1 ORDER BY id DESC LIMIT $2`, [userId, limit]);
        return result.rows.map((row) => row.event as SecurityEvent);
      } catch (error) {
        throw asOutage(error);
      }
    },
    prune: async () => {
      try {
        return await prune();
      } catch (error) {
        throw asOutage(error);
      }
    },
  };
}
