import { recordEvents } from '../helpers/event-recorder';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';
import { loginAs, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { ssoSession, type SsoSessionLimitOptions } from '../../lib/session';
import { OptionsError } from '../../lib/util/options';

const SHOP = 'shop.example.test';

describe('ssoSession({ sessionLimit }): concurrent sessions per user (ASVS 7.1.2)', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let app: Awaited<ReturnType<typeof startSsoApp>> | undefined;
  const recorder = recordEvents({ app: 'shop' });

  beforeEach(async () => {
    redis = await testRedisStore('session-limit');
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    recorder.clear();
    await redis.cleanup();
  });
  afterAll(() => recorder.events.close());

  async function start(sessionLimit?: SsoSessionLimitOptions) {
    app = await startSsoApp(
      ssoSession(ssoOptions({ store: redis.store, events: recorder.events, ...(sessionLimit ? { sessionLimit } : {}) })),
    );
    return app;
  }

  const meStatus = async (cookie: string) => (await via(app!.server, SHOP, 'get', '/me', cookie)).status;

  it('ends the oldest sessions at a login past the limit, keeping the newest, and records why', async () => {
    const { server } = await start({ maxPerUser: 2 });
    const first = await loginAs(server, SHOP, { id: 'ada' });
    const second = await loginAs(server, SHOP, { id: 'ada' });
    const other = await loginAs(server, SHOP, { id: 'bob' });
    const third = await loginAs(server, SHOP, { id: 'ada' });
    expect(await meStatus(first)).toBe(401);
    expect(await meStatus(second)).toBe(200);
    expect(await meStatus(third)).toBe(200);
    // Another user's sessions do not count.
    expect(await meStatus(other)).toBe(200);
    expect(recorder.recorded.filter((event) => event.type === 'session.ended')).toEqual([
      expect.objectContaining({ reason: 'session_limit', userId: userId('ada') }),
    ]);
  });

  it('refuses a new login past the limit with 403 session_limit_reached, and lets it in once one signs out', async () => {
    const { server } = await start({ maxPerUser: 1, whenReached: 'refuse_new' });
    const first = await loginAs(server, SHOP, { id: 'ada' });
    const refused = await via(server, SHOP, 'post', '/login').send({ id: 'ada', name: 'ada', roles: [], method: 'password' });
    expectProblem(refused, 403, 'session_limit_reached');
    expect(refused.headers['set-cookie']).toBeUndefined();
    expect(await meStatus(first)).toBe(200);
    // A login in the browser that already holds the user's session replaces it, so it is not refused.
    const again = await loginAs(server, SHOP, { id: 'ada' }, first);
    expect(await meStatus(again)).toBe(200);
    await via(server, SHOP, 'post', '/logout', again);
    expect(await meStatus(await loginAs(server, SHOP, { id: 'ada' }))).toBe(200);
  });

  it('has no limit by default', async () => {
    const { server } = await start();
    const cookies = [];
    for (let index = 0; index < 5; index += 1) cookies.push(await loginAs(server, SHOP, { id: 'ada' }));
    for (const cookie of cookies) expect(await meStatus(cookie)).toBe(200);
  });

  it.each([[{ maxPerUser: 0 }], [{ maxPerUser: 1.5 }], [{ maxPerUser: 3, whenReached: 'drop' }], [{ max: 3 }]])(
    'refuses the option %j when ssoSession is called',
    (sessionLimit) => {
      expect(() => ssoSession(ssoOptions({ store: redis.store, sessionLimit: sessionLimit as SsoSessionLimitOptions }))).toThrow(
        OptionsError,
      );
    },
  );
});
