import { testRedisStore } from '../helpers/redis';
import { loginAs, sessionIdOf, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { ssoSession } from '../../lib';

describe('SessionManager', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let sso: ReturnType<typeof ssoSession>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('manager');
    sso = ssoSession(ssoOptions({ store: redis.store }));
    shop = await startSsoApp(sso);
  });
  afterAll(async () => {
    await shop.close();
    await redis.cleanup();
  });

  it('lists sessions by a handle that is not the session id and is stable', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
    const [summary] = await sso.manager.listSessions(userId('ada'), sessionIdOf(cookie));
    expect(summary!.id).toBe(sso.manager.handleOf(sessionIdOf(cookie)));
    expect(summary!.id).not.toContain(sessionIdOf(cookie));
    expect(summary!.current).toBe(true);
  });

  it('drops index entries whose session is gone', async () => {
    const kept = await loginAs(shop.server, 'shop.example.test', { id: 'bob' });
    const lost = await loginAs(shop.server, 'shop.example.test', { id: 'bob' });
    await redis.client.del(`${redis.prefix}sess:${sessionIdOf(lost)}`);
    const sessions = await sso.manager.listSessions(userId('bob'));
    expect(sessions.map((session) => session.id)).toEqual([sso.manager.handleOf(sessionIdOf(kept))]);
    expect(await redis.client.smembers(`${redis.prefix}user-sessions:{${userId('bob')}}`)).toEqual([sessionIdOf(kept)]);
  });

  it('keeps a login that is indexed but not yet saved when another login of the same user prunes the index', async () => {
    // The window between indexing a login and writing its record: without a guard, a concurrent login's pruning
    // took the id for an ended session, and the new session then survived logout everywhere.
    const manager = sso.manager as unknown as { index(id: string, user: string, tags: string[]): Promise<void> };
    const creating = 'being-created-0123456789abcdefghij';
    await manager.index(creating, userId('dana'), []);
    await loginAs(shop.server, 'shop.example.test', { id: 'dana' });
    expect(await redis.client.smembers(`${redis.prefix}user-sessions:{${userId('dana')}}`)).toContain(creating);
  });

  it('revokes only sessions of the named user', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'carol' });
    const handle = sso.manager.handleOf(sessionIdOf(cookie));
    expect(await sso.manager.revokeSession(userId('mallory'), handle)).toBe(false);
    // The same subject of another source is another user, and a bare subject names nobody.
    expect(await sso.manager.revokeSession(userId('carol', 'oidc:https://other.idp.test'), handle)).toBe(false);
    expect(await sso.manager.revokeSession('carol', handle)).toBe(false);
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', cookie)).status).toBe(200);
    expect(await sso.manager.revokeSession(userId('carol'), handle)).toBe(true);
    expect(await sso.manager.revokeSession(userId('carol'), handle)).toBe(false);
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json')).status).toBe(401);
  });

  it('logoutEverywhere counts the live sessions it ended', async () => {
    await loginAs(shop.server, 'shop.example.test', { id: 'dave' });
    await loginAs(shop.server, 'shop.example.test', { id: 'dave' });
    const elsewhere = await loginAs(shop.server, 'shop.example.test', { id: 'dave', source: 'oidc:https://other.idp.test' });
    expect(await sso.manager.logoutEverywhere(userId('dave'))).toBe(2);
    expect(await sso.manager.logoutEverywhere(userId('dave'))).toBe(0);
    expect(await sso.manager.listSessions(userId('dave'))).toEqual([]);
    // The other source's dave is someone else and stays logged in.
    expect((await via(shop.server, 'shop.example.test', 'get', '/me', elsewhere)).status).toBe(200);
  });
});
