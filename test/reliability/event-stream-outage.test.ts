import express, { type Express } from 'express';
import request from 'supertest';
import {
  errorHandler,
  fileUserDirectory,
  hashPassword,
  loginPortal,
  redisStreamSink,
  securityEvents,
  ssoSession,
  type SecurityEvents,
} from '../../lib';
import { captureLogs, type LogCapture } from '../helpers/log-capture';
import { startPrivateRedis, testRedisStore, type PrivateRedis } from '../helpers/redis';

const AUTH = 'auth.example.test';
const FAST = { N: 1024, r: 8, p: 1 };
const ALICE = 'directory:local|alice';

/**
 * The Redis that holds the event streams goes down while the sessions' Redis stays up: sign-ins go on exactly as
 * before (a right password signs in, a wrong one is refused), their events are counted as lost, and once the
 * stream's Redis is back the next events reach it again.
 */
describe("the event stream's Redis goes down", () => {
  let sessionsRedis: Awaited<ReturnType<typeof testRedisStore>>;
  let streamRedis: PrivateRedis;
  let events: SecurityEvents;
  let app: Express;
  let logs: LogCapture;

  beforeAll(async () => {
    sessionsRedis = await testRedisStore('stream-outage');
    streamRedis = await startPrivateRedis();
    events = securityEvents({ sinks: [redisStreamSink({ redis: streamRedis.url })] });
    const users = fileUserDirectory([
      { id: 'alice', username: 'alice', name: 'Alice', roles: [], passwordHash: await hashPassword('alice-password', FAST) },
    ]);
    app = express();
    app.set('trust proxy', true);
    app.use(
      ssoSession({
        store: sessionsRedis.store,
        cookieDomain: 'example.test',
        secret: 'stream-outage-secret-0123456789-abcdefghij',
        loginUrl: `https://${AUTH}/login`,
        events,
      }),
    );
    app.use(loginPortal({ users, store: sessionsRedis.store }));
    app.use(errorHandler({ log: false }));
    logs = captureLogs({ debug: false });
  });
  afterAll(async () => {
    logs.stop();
    await events.close();
    await streamRedis.stop();
    await sessionsRedis.cleanup();
  });

  function login(password: string): request.Test {
    return request(app)
      .post('/login')
      .set('Host', AUTH)
      .set('X-Forwarded-Proto', 'https')
      .set('Origin', `https://${AUTH}`)
      .type('form')
      .send({ username: 'alice', password, return_to: '' });
  }

  it('records sign-ins in the stream while it is up', async () => {
    expect((await login('alice-password')).status).toBe(302);
    await events.flush();
    expect((await events.recentEvents(ALICE)).map((event) => event.type)).toEqual(['signin.succeeded', 'session.created']);
    expect(events.status()[0]).toMatchObject({ healthy: true, dropped: { overflow: 0, failed: 0, timeout: 0 } });
  });

  it('signs in and refuses as before while it is down, counting the lost events and saying so', async () => {
    await streamRedis.stop();
    const started = performance.now();
    expect((await login('alice-password')).status).toBe(302);
    expect((await login('wrong-password')).status).toBe(401);
    // Neither answer waited for the stream (a write to the Redis that is down takes up to its command timeout).
    expect(performance.now() - started).toBeLessThan(1500);
    await events.flush();
    const [status] = events.status();
    expect(status).toMatchObject({ name: 'redis-stream', healthy: false });
    expect(status!.dropped.failed + status!.dropped.timeout).toBe(3);
    const metrics = await events.metrics.registry.metrics();
    expect(metrics).toMatch(/sso_security_events_dropped_total\{sink="redis-stream",reason="failed"\} 3/);
    // The decisions were still counted where the sink could not record them.
    expect(metrics).toMatch(/sso_security_events_total\{type="signin.failed",outcome="failure",reason="bad_credentials"\} 1/);
    expect(logs.containing('securityEvents: sink "redis-stream": a write failed')).toHaveLength(1);
  });

  it('writes again once it is back, and says so', async () => {
    await streamRedis.start();
    expect((await login('alice-password')).status).toBe(302);
    await events.flush();
    expect(events.status()[0]).toMatchObject({ healthy: true });
    // The restarted Redis kept nothing (it saves nothing): what it holds is the sign-in after its return.
    expect((await events.recentEvents(ALICE)).map((event) => event.type)).toEqual(['signin.succeeded', 'session.created']);
    expect(logs.containing('sink "redis-stream" writes again; 3 event(s) were lost')).toHaveLength(1);
  });
});
