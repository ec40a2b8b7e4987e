import { raiseSessionAuthentication, requireSession, ssoSession } from '../../lib';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';
import { loginAs, sessionCookieOf, ssoOptions, startSsoApp, via } from '../helpers/sso-apps';

describe('raiseSessionAuthentication', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('raise');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })), {
      routes: (app) => {
        app.post('/note', requireSession(), (req, res) => {
          (req.session as unknown as Record<string, unknown>).note = 'kept';
          res.status(204).end();
        });
        app.post('/raise', requireSession(), async (req, res, next) => {
          try {
            await raiseSessionAuthentication(req, 'otp');
            res.status(204).end();
          } catch (error) {
            next(error);
          }
        });
        app.get('/state', requireSession(), (req, res) => {
          res.json({
            user: req.user,
            note: (req.session as unknown as Record<string, unknown>).note ?? null,
            createdAt: req.session.meta?.createdAt,
          });
        });
        app.get('/two', requireSession({ acr: '2fa' }), (_req, res) => res.end('two'));
      },
    });
  });
  afterAll(async () => {
    await shop.close();
    await redis.cleanup();
  });

  it('raises the same user to 2fa on a new session id, keeping the session’s data and lifetime', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'alice' });
    await via(shop.server, 'shop.example.test', 'post', '/note', cookie).expect(204);
    const before = (await via(shop.server, 'shop.example.test', 'get', '/state', cookie)).body;
    const raised = await via(shop.server, 'shop.example.test', 'post', '/raise', cookie).expect(204);
    const next = sessionCookieOf(raised)!;
    expect(next).toBeDefined();
    expect(next).not.toBe(cookie);
    const after = (await via(shop.server, 'shop.example.test', 'get', '/state', next)).body;
    expect(after.user.id).toBe(before.user.id);
    expect(after.user.authentication).toMatchObject({ acr: '2fa', amr: ['pwd', 'otp'] });
    expect(after.note).toBe('kept');
    expect(after.createdAt).toBe(before.createdAt);
    expect((await via(shop.server, 'shop.example.test', 'get', '/two', next)).status).toBe(200);
    // The id observed before the step-up is gone: it carries no level, and no login either.
    expectProblem(
      await via(shop.server, 'shop.example.test', 'get', '/state', cookie).set('Accept', 'application/json'),
      401,
      'session_required',
    );
  });

  it('keeps the raised session in the user’s index, so logout everywhere ends it', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'bob' });
    const next = sessionCookieOf(await via(shop.server, 'shop.example.test', 'post', '/raise', cookie).expect(204))!;
    const ended = await via(shop.server, 'shop.example.test', 'post', '/logout-everywhere', next).expect(200);
    expect(ended.body.ended).toBe(1);
    expectProblem(
      await via(shop.server, 'shop.example.test', 'get', '/state', next).set('Accept', 'application/json'),
      401,
      'session_required',
    );
  });

  it('answers 401 without a session user', async () => {
    const res = await via(shop.server, 'shop.example.test', 'post', '/raise').set('Accept', 'application/json');
    expectProblem(res, 401);
  });
});
