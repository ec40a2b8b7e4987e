import express from 'express';
import request from 'supertest';
import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { loginAs, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { checkRequestOrigin, csrfGuard, errorHandler, ssoSession, type OriginFacts } from '../../lib';

const own = 'https://shop.example.test';
const facts = (overrides: Partial<OriginFacts>): OriginFacts => ({
  method: 'POST',
  ownOrigin: own,
  origin: undefined,
  referer: undefined,
  secFetchSite: undefined,
  ...overrides,
});
const siblings = new Set(['https://admin.example.test']);

describe('checkRequestOrigin', () => {
  it.each(['GET', 'HEAD', 'OPTIONS'])('lets the safe method %s pass whatever its origin', (method) => {
    expect(checkRequestOrigin(facts({ method, origin: 'https://evil.test', secFetchSite: 'cross-site' }), siblings)).toBeUndefined();
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE'])("lets %s from the request's own origin pass", (method) => {
    expect(checkRequestOrigin(facts({ method, origin: own, secFetchSite: 'same-origin' }), siblings)).toBeUndefined();
  });

  it('lets a listed sibling subdomain pass', () => {
    expect(checkRequestOrigin(facts({ origin: 'https://admin.example.test', secFetchSite: 'same-site' }), siblings)).toBeUndefined();
  });

  it('refuses an unlisted sibling subdomain', () => {
    expect(checkRequestOrigin(facts({ origin: 'https://blog.example.test', secFetchSite: 'same-site' }), siblings)).toBe(
      'origin-not-allowed',
    );
  });

  it('refuses another site', () => {
    expect(checkRequestOrigin(facts({ origin: 'https://evil.test' }), siblings)).toBe('origin-not-allowed');
  });

  it('refuses Sec-Fetch-Site: cross-site even with an allowed Origin', () => {
    expect(checkRequestOrigin(facts({ origin: own, secFetchSite: 'cross-site' }), siblings)).toBe('cross-site');
  });

  it('refuses Origin: null (sandboxed frames, data: URLs)', () => {
    expect(checkRequestOrigin(facts({ origin: 'null' }), siblings)).toBe('origin-not-allowed');
  });

  it('refuses the same host on another scheme or port', () => {
    expect(checkRequestOrigin(facts({ origin: 'http://shop.example.test' }), siblings)).toBe('origin-not-allowed');
    expect(checkRequestOrigin(facts({ origin: 'https://shop.example.test:8443' }), siblings)).toBe('origin-not-allowed');
  });

  it("falls back to the Referer's origin without Origin", () => {
    expect(checkRequestOrigin(facts({ referer: 'https://shop.example.test/cart?x=1' }), siblings)).toBeUndefined();
    expect(checkRequestOrigin(facts({ referer: 'https://evil.test/page' }), siblings)).toBe('referer-not-allowed');
    expect(checkRequestOrigin(facts({ referer: 'not a url' }), siblings)).toBe('referer-not-allowed');
  });

  it('refuses a state-changing request with neither Origin nor Referer', () => {
    expect(checkRequestOrigin(facts({}), siblings)).toBe('no-origin');
  });
});

describe('csrfGuard middleware', () => {
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(csrfGuard({ allowedOrigins: ['https://admin.example.test'] }));
  app.post('/things', (_req, res) => res.status(201).end());
  app.get('/things', (_req, res) => res.status(200).end());
  app.use(errorHandler({ log: false }));
  const post = () => request(app).post('/things').set('Host', 'shop.example.test').set('X-Forwarded-Proto', 'https');

  it('answers 403 problem+json csrf_origin to a cross-site POST with cookies', async () => {
    expectProblem(await post().set('Cookie', 'sso.sid=x').set('Origin', 'https://evil.test'), 403, 'csrf_origin');
  });

  it('lets a same-origin POST with cookies pass', async () => {
    expect((await post().set('Cookie', 'sso.sid=x').set('Origin', 'https://shop.example.test')).status).toBe(201);
  });

  it('lets a listed sibling pass', async () => {
    expect((await post().set('Cookie', 'sso.sid=x').set('Origin', 'https://admin.example.test')).status).toBe(201);
  });

  it('refuses a POST with cookies but without Origin and Referer', async () => {
    expectProblem(await post().set('Cookie', 'sso.sid=x'), 403, 'csrf_origin');
  });

  it('lets a POST without any cookie pass (no ambient authority to abuse)', async () => {
    expect((await post().set('Origin', 'https://evil.test')).status).toBe(201);
  });

  it('lets a cross-site GET pass', async () => {
    expect((await request(app).get('/things').set('Cookie', 'sso.sid=x').set('Origin', 'https://evil.test')).status).toBe(200);
  });

  it('validates its options and detects misuse as middleware', () => {
    expect(() => csrfGuard({ allowedOrigins: ['*.example.test'] })).toThrow(/full origins like "https:\/\/admin.example.test"/);
    expect(() => csrfGuard({ allowedOrigins: ['https://*.example.test'] })).toThrow(TypeError);
    const misuse = csrfGuard as unknown as (a: unknown, b: unknown, c: unknown) => unknown;
    expect(() => misuse({ socket: {} }, {}, () => undefined)).toThrow(/write app\.use\(csrfGuard\(\)\)/);
  });
});

describe('the CSRF check inside requireSession', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let lenient: Awaited<ReturnType<typeof startSsoApp>>;
  let cookie: string;

  beforeAll(async () => {
    redis = await testRedisStore('csrf');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
    lenient = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })), {
      require: { csrf: { allowedOrigins: ['https://admin.example.test'] } },
    });
    cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ada' });
  });
  afterAll(async () => {
    await shop.close();
    await lenient.close();
    await redis.cleanup();
  });

  const order = (server: typeof shop.server) => via(server, 'shop.example.test', 'post', '/orders', cookie);

  it('refuses a logged-in POST from another site with 403 csrf_origin', async () => {
    expectProblem(await order(shop.server).set('Origin', 'https://evil.test').set('Sec-Fetch-Site', 'cross-site'), 403, 'csrf_origin');
  });

  it('refuses a logged-in POST from a sibling subdomain that is not listed', async () => {
    expectProblem(
      await order(shop.server).set('Origin', 'https://admin.example.test').set('Sec-Fetch-Site', 'same-site'),
      403,
      'csrf_origin',
    );
  });

  it('accepts the sibling once it is listed', async () => {
    expect((await order(lenient.server).set('Origin', 'https://admin.example.test').set('Sec-Fetch-Site', 'same-site')).status).toBe(201);
  });

  it('refuses a logged-in POST without Origin or Referer', async () => {
    expectProblem(await order(shop.server), 403, 'csrf_origin');
  });

  it('accepts a logged-in POST from its own origin', async () => {
    const res = await order(shop.server).set('Origin', 'https://shop.example.test').set('Sec-Fetch-Site', 'same-origin');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ by: userId('ada') });
  });

  it('accepts a logged-in POST whose Referer is its own page', async () => {
    expect((await order(shop.server).set('Referer', 'https://shop.example.test/cart')).status).toBe(201);
  });
});
