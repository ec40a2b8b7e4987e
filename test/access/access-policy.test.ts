import express from 'express';
import request from 'supertest';
import { accessPolicy } from '../../lib/access';
import { errorHandler } from '../../lib/http';
import { ssoSession } from '../../lib/session';
import { expectProblem } from '../helpers/problem';
import { testRedisStore } from '../helpers/redis';
import { LOGIN_URL, TEST_SECRET } from '../helpers/sso-apps';
import { establishLogin } from '../../lib/session';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml';

describe('accessPolicy', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let app: express.Express;

  beforeAll(async () => {
    redis = await testRedisStore('access');
    app = express();
    app.set('trust proxy', 'loopback');
    app.use(express.json());
    app.use(ssoSession({ store: redis.store, cookieDomain: 'example.test', secret: TEST_SECRET, loginUrl: LOGIN_URL }));
    app.post('/login', async (req, res) => {
      const { amr } = req.body as { amr: string[] };
      await establishLogin(req, {
        source: 'test:users',
        subject: 'alice',
        name: 'Alice',
        roles: [],
        method: 'password',
        authentication: { amr },
      });
      res.status(204).end();
    });
    app.use(
      accessPolicy({
        rules: [
          { path: '/assets', policy: 'bypass' },
          { domain: 'shop.example.test', path: '/secret', policy: 'deny' },
          { domain: 'admin.example.test', policy: 'two_factor' },
          { domain: 'auth.example.test', path: '/sessions/revocations', methods: ['POST'], policy: 'two_factor', maxAgeSeconds: 300 },
          { domain: ['shop.example.test', 'auth.example.test'], policy: 'one_factor' },
        ],
      }),
    );
    app.all('/{*rest}', (req, res) => res.json({ user: req.user?.id ?? null }));
    app.use(errorHandler({ log: false }));
  });
  afterAll(() => redis.cleanup());

  const on = (host: string, method: 'get' | 'post', path: string, cookie?: string) => {
    const test = request(app)[method](path).set('Host', host).set('X-Forwarded-Proto', 'https');
    if (method === 'post') test.set('Origin', `https://${host}`);
    return cookie ? test.set('Cookie', cookie) : test;
  };
  const login = async (amr: string[]): Promise<string> => {
    const res = await on('shop.example.test', 'post', '/login').send({ amr });
    return (res.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!;
  };

  it('lets bypass paths through without a login', async () => {
    expect((await on('shop.example.test', 'get', '/assets/app.css')).body).toEqual({ user: null });
  });

  it('needs a login on one_factor hosts: browsers to the login page, APIs 401', async () => {
    const page = await on('shop.example.test', 'get', '/cart').set('Accept', BROWSER_ACCEPT);
    expect(new URL(page.headers.location!).pathname).toBe('/login');
    expectProblem(await on('shop.example.test', 'get', '/cart').set('Accept', 'application/json'), 401, 'session_required');
    const cookie = await login(['pwd']);
    expect((await on('shop.example.test', 'get', '/cart', cookie)).body).toEqual({ user: 'test:users|alice' });
  });

  it('applies the first matching rule: a deny before a broader one_factor wins', async () => {
    const cookie = await login(['pwd', 'otp']);
    expectProblem(await on('shop.example.test', 'get', '/secret/x', cookie), 403, 'access_denied');
    expect((await on('shop.example.test', 'get', '/secretary', cookie)).status).toBe(200);
  });

  it('needs two factors on two_factor hosts: one factor is sent to step-up, two pass', async () => {
    const one = await login(['pwd']);
    const page = await on('admin.example.test', 'get', '/', one).set('Accept', BROWSER_ACCEPT);
    expect(new URL(page.headers.location!).pathname).toBe('/step-up');
    expectProblem(
      await on('admin.example.test', 'get', '/', one).set('Accept', 'application/json'),
      401,
      'insufficient_user_authentication',
    );
    const two = await login(['pwd', 'otp']);
    expect((await on('admin.example.test', 'get', '/', two)).status).toBe(200);
  });

  it('matches methods: only POST on the revocation path needs a fresh second factor', async () => {
    const one = await login(['pwd']);
    expect((await on('auth.example.test', 'get', '/sessions/revocations', one)).status).toBe(200);
    const post = await on('auth.example.test', 'post', '/sessions/revocations', one).set('Accept', 'application/json');
    expectProblem(post, 401, 'insufficient_user_authentication');
    expect(post.headers['www-authenticate']).toContain('max_age=300');
  });

  it('is closed by default: a host no rule names is denied', async () => {
    const cookie = await login(['pwd', 'otp']);
    expectProblem(await on('other.example.test', 'get', '/', cookie), 403, 'access_denied');
  });

  it('checks its rules when called', () => {
    expect(() => accessPolicy({ rules: [{ policy: 'two_factors' as never }] })).toThrow(/rules\[0\]\.policy must be one of/);
    expect(() => accessPolicy({ rules: [{ policy: 'bypass', maxAgeSeconds: 5 }] })).toThrow(/maxAgeSeconds only applies/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', domain: 'https://x.test' }] })).toThrow(/host name/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', path: 'admin' }] })).toThrow(/starting with "\/"/);
    expect(() => accessPolicy({ rules: [{ policy: 'deny', host: 'x' } as never] })).toThrow(/unknown option "host"/);
    expect(() => accessPolicy({ rules: [], defaultPolicy: 'allow' as never })).toThrow(/defaultPolicy/);
    expect(() => accessPolicy({ rules: [{ policy: 'two_factor' }], stepUpUrl: '/step-up' })).toThrow(/stepUpUrl must be an absolute/);
  });
});
