import { chooseDemoStore } from '../../example-app/demo-server';
import { freePort } from '../helpers/redis';

describe('chooseDemoStore', () => {
  it('falls back to the in-memory store with a banner when no Redis answers', async () => {
    const lines: string[] = [];
    const store = await chooseDemoStore({ probeUrl: `redis://127.0.0.1:${await freePort()}`, log: (line) => lines.push(line) });
    try {
      expect(store.kind).toBe('memory');
      expect(lines.join('\n')).toMatch(/Using the in-memory store: sessions vanish on restart/);
    } finally {
      await store.close();
    }
  });

  it('uses the Redis that answers', async () => {
    const lines: string[] = [];
    const store = await chooseDemoStore({
      probeUrl: process.env.SSO_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      log: (line) => lines.push(line),
    });
    try {
      expect(store.kind).toBe('redis');
      expect(lines).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('refuses to start when the explicitly given REDIS_URL does not answer', async () => {
    await expect(chooseDemoStore({ redisUrl: `redis://127.0.0.1:${await freePort()}`, log: () => undefined })).rejects.toThrow(
      /REDIS_URL does not answer/,
    );
  });
});
