import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { enrolOverHttp } from '../helpers/authenticator-app';
import { isRunning, startDemoProcesses, type DemoProcesses } from '../helpers/demo';

// npm run demo without a Redis of its own: it starts a private redis-server that every site shares, and stops it
// with the sites on Ctrl-C; without redis-server (here asked for with DEMO_REDIS=memory) every site runs in the
// launcher's process on the in-memory store.
jest.setTimeout(120_000);

function portAnswers(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

async function expectSingleSignOn(demo: DemoProcesses): Promise<void> {
  const password = await demo.login('alice', 'alice-password');
  const shop = await demo.site('shop').get('/me').set('Cookie', password);
  expect(shop.body).toMatchObject({ id: 'directory:demo|alice', method: 'password' });
  // Admin asks two factors: the same login, raised by enrolling an authenticator app at the portal.
  expect((await demo.site('admin').get('/me').set('Cookie', password)).status).toBe(401);
  const { cookie } = await enrolOverHttp(demo.site('auth'), new URL(demo.url('auth')).origin, password);
  for (const site of ['shop', 'admin'] as const) {
    const me = await demo.site(site).get('/me').set('Cookie', cookie);
    expect(me.body).toMatchObject({ id: 'directory:demo|alice', method: 'password' });
  }
}

describe('npm run demo with a private redis-server', () => {
  let demo: DemoProcesses;
  beforeAll(async () => {
    demo = await startDemoProcesses({ domain: 'sso.test', redisUrl: false, env: { DEMO_REDIS: 'embedded' } });
  }, 120_000);
  afterAll(async () => {
    await demo?.close();
  });

  it('starts one Redis that the separate sites share, and on Ctrl-C stops every site and that Redis, leaving no file behind', async () => {
    const redisPort = Number(/Redis embedded at redis:\/\/127\.0\.0\.1:(\d+)/.exec(demo.output())![1]);
    expect(await portAnswers(redisPort)).toBe(true);
    await expectSingleSignOn(demo);
    const pids = Object.values(demo.pids);
    expect(pids).toHaveLength(6);

    const exited = new Promise<number | null>((done) => demo.launcher.once('exit', (code) => done(code)));
    demo.launcher.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(pids.filter(isRunning)).toEqual([]);
    expect(await portAnswers(redisPort)).toBe(false);
    expect(await portAnswers(demo.port)).toBe(false);
    expect(existsSync(resolve(__dirname, '../../dump.rdb'))).toBe(false);
  });
});

describe('npm run demo without any Redis (the documented fallback)', () => {
  let demo: DemoProcesses;
  beforeAll(async () => {
    demo = await startDemoProcesses({ domain: 'sso.test', redisUrl: false, env: { DEMO_REDIS: 'memory' } });
  }, 120_000);
  afterAll(async () => {
    await demo?.close();
  });

  it('runs every site in its one process on the in-memory store, behind the same front door, and says so', async () => {
    expect(demo.output()).toContain('no Redis: one process, in-memory store');
    expect(demo.pids).toEqual({});
    await expectSingleSignOn(demo);
    expect((await demo.site('api').get('/healthz')).body).toEqual({ status: 'ok', site: 'api', store: 'memory' });
  });
});
