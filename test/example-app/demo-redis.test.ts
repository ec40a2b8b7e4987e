import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { provideRedis } from '../../example-app/launcher/demo-redis';
import { freePort } from '../helpers/redis';

function answersPing(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

describe('the Redis of npm run demo', () => {
  const machineRedis = process.env.SSO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const nobody = async () => `redis://127.0.0.1:${await freePort()}`;
  const log = () => undefined;

  it('uses REDIS_URL when it answers, and refuses to start when it does not', async () => {
    const given = await provideRedis({ redisUrl: machineRedis, log });
    expect(given).toMatchObject({ kind: 'given', url: machineRedis });
    await expect(provideRedis({ redisUrl: await nobody(), log })).rejects.toThrow(/REDIS_URL .* does not answer/);
  });

  it('uses the local Redis when one answers', async () => {
    await expect(provideRedis({ probeUrl: machineRedis, log })).resolves.toMatchObject({ kind: 'local', url: machineRedis });
  });

  it('starts a private redis-server on a free port when none answers, keeps no file, and stops it', async () => {
    const redis = await provideRedis({ probeUrl: await nobody(), log });
    expect(redis.kind).toBe('embedded');
    expect(await answersPing(redis.url!)).toBe(true);
    expect(existsSync('dump.rdb')).toBe(false);
    await redis.stop();
    expect(await answersPing(redis.url!)).toBe(false);
  });

  it('falls back to running without Redis, and says so, when no redis-server is installed', async () => {
    const lines: string[] = [];
    const redis = await provideRedis({
      probeUrl: await nobody(),
      redisServer: 'redis-server-not-installed',
      log: (line) => lines.push(line),
    });
    expect(redis).toMatchObject({ kind: 'memory', url: undefined });
    expect(lines.join(' ')).toMatch(/no redis-server is installed: every site runs in this one process on the in-memory store/);
  });

  it('starts a private one when asked (DEMO_REDIS=embedded), even with a local Redis, and fails if it cannot', async () => {
    const redis = await provideRedis({ mode: 'embedded', probeUrl: machineRedis, log });
    try {
      expect(redis.kind).toBe('embedded');
      expect(redis.url).not.toBe(machineRedis);
    } finally {
      await redis.stop();
    }
    await expect(provideRedis({ mode: 'embedded', redisServer: 'redis-server-not-installed', log })).rejects.toThrow(/no redis-server/);
  });
});
