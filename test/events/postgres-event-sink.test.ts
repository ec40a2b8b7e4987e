import { Pool } from 'pg';
import { postgresEventSink, securityEvents, StoreUnavailableError } from '../../lib';
import { freePort } from '../helpers/redis';
import { testPostgresSchema } from '../helpers/postgres';

describe('postgresEventSink', () => {
  let pg: Awaited<ReturnType<typeof testPostgresSchema>>;

  beforeAll(async () => {
    pg = await testPostgresSchema('events');
  });
  afterAll(() => pg.cleanup());

  it('creates its table on first use and answers the last N events of one user, newest first', async () => {
    const sink = postgresEventSink(pg.pool, { schema: pg.schema });
    const events = securityEvents({ app: 'auth', sinks: [sink] });
    events.emit('signin.failed', { reason: 'bad_credentials', method: 'password', userId: 'directory:local|ann', username: 'ann' });
    events.emit('signin.succeeded', { reason: 'authenticated', method: 'password', userId: 'directory:local|ann' });
    events.emit('session.created', { reason: 'login', method: 'password', userId: 'directory:local|ben' });
    events.emit('csrf.refused', { reason: 'cross_site', guard: 'ssoSession' });
    await events.flush();
    expect(events.status()[0]).toMatchObject({ name: 'postgres', healthy: true, dropped: { overflow: 0, failed: 0, timeout: 0 } });
    const recent = await events.recentEvents('directory:local|ann', { limit: 10 });
    expect(recent.map((event) => event.type)).toEqual(['signin.succeeded', 'signin.failed']);
    expect(recent[1]).toMatchObject({ app: 'auth', usernameHash: expect.any(String), outcome: 'failure' });
    const rows = await pg.pool.query(`SELECT type, outcome, user_id FROM "${pg.schema}".security_events ORDER BY id`);
    expect(rows.rows).toEqual([
      { type: 'signin.failed', outcome: 'failure', user_id: 'directory:local|ann' },
      { type: 'signin.succeeded', outcome: 'success', user_id: 'directory:local|ann' },
      { type: 'session.created', outcome: 'success', user_id: 'directory:local|ben' },
      { type: 'csrf.refused', outcome: 'failure', user_id: null },
    ]);
    // The user's events can be read by the index, newest first, with no sort (a four-row table would be scanned
    // anyway, so the planner is told to avoid table and bitmap scans, as it does by itself on a large table).
    const client = await pg.pool.connect();
    try {
      await client.query('SET enable_seqscan = off; SET enable_bitmapscan = off');
      const plan = await client.query(
        `EXPLAIN (FORMAT JSON) SELECT event FROM "${pg.schema}".security_events WHERE user_id = $1 ORDER BY id DESC LIMIT 20`,
        ['directory:local|ann'],
      );
      const text = JSON.stringify(plan.rows);
      expect(text).toContain('"Index Name":"security_events_user"');
      expect(text).not.toContain('"Node Type":"Sort"');
    } finally {
      client.release();
    }
    expect(sink.createStatements.join('\n')).toContain('security_events_user');
  });

  it('deletes events older than maxAgeSeconds', async () => {
    const sink = postgresEventSink(pg.pool, { schema: pg.schema, maxAgeSeconds: 3600 });
    const events = securityEvents({ sinks: [sink] });
    events.emit('session.ended', { reason: 'logout', userId: 'directory:local|old' });
    await events.flush();
    await pg.pool.query(`UPDATE "${pg.schema}".security_events SET time = now() - interval '2 hours' WHERE user_id = $1`, [
      'directory:local|old',
    ]);
    expect(await sink.prune()).toBeGreaterThanOrEqual(1);
    expect(await events.recentEvents('directory:local|old')).toEqual([]);
  });

  it('answers a read with StoreUnavailableError (503) when PostgreSQL is unreachable, and counts the lost writes', async () => {
    const unreachable = new Pool({
      host: '127.0.0.1',
      port: await freePort(),
      user: 'postgres',
      database: 'test',
      connectionTimeoutMillis: 500,
    });
    const events = securityEvents({ sinks: [postgresEventSink(unreachable, { schema: pg.schema })] });
    try {
      await expect(events.recentEvents('u')).rejects.toBeInstanceOf(StoreUnavailableError);
      const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
      events.emit('csrf.refused', { reason: 'cross_site', guard: 'test' });
      await events.flush();
      warn.mockRestore();
      expect(events.status()[0]).toMatchObject({ healthy: false, dropped: { failed: 1 } });
    } finally {
      await unreachable.end();
    }
  });

  it('refuses a schema that is not a plain identifier and a pool that is not one', () => {
    expect(() => postgresEventSink(pg.pool, { schema: 'x"; DROP TABLE y; --' })).toThrow(/lower-case SQL identifier/);
    expect(() => postgresEventSink({} as never)).toThrow(/pass a pg Pool/);
  });
});
