import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { isRunning } from '../helpers/demo';

// A site started by `npm run demo` stops when its launcher is gone. The launcher can go while a site is still
// loading (on a busy machine tsx kills a launcher that does not answer its signal within 30 ms): the IPC channel
// then closes before the site listens for it, and the site must still notice instead of running on alone.
const root = resolve(__dirname, '../..');
let child: ChildProcess | undefined;

afterEach(() => {
  if (child?.pid && isRunning(child.pid)) child.kill('SIGKILL');
});

it('a site whose launcher went before it finished starting stops by itself once started', async () => {
  child = spawn(process.execPath, ['--import', 'tsx', 'example-app/shop/shop.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      DEMO_DOMAIN: 'sso.localhost',
      DEMO_SECURE: '0',
      DEMO_PUBLIC_PORT: '8080',
      DEMO_SECRET: randomBytes(32).toString('base64url'),
      DEMO_FRONT_DOOR_HOST: '127.0.0.1',
      REDIS_URL: process.env.SSO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      PORT: '0',
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((done) => child!.once('exit', (code, signal) => done(code ?? signal ?? 'unknown')));
  // The launcher is gone before the site has loaded its first module.
  child.disconnect();
  expect(await exited).toBe(0);
  expect(output).toMatch(/^shop listening on 127\.0\.0\.1:\d+$/m);
}, 180_000);
