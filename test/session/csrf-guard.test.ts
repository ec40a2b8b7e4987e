import express from 'express';
import request from 'supertest';
import { testRedisStore } from '../helpers/redis';
import { expectProblem } from '../helpers/problem';
import { debugLines } from '../helpers/debug-lines';
import { loginAs, sessionIdOf, ssoOptions, startSsoApp, userId, via } from '../helpers/sso-apps';
import { BadRequestError, checkRequestOrigin, csrfGuard, errorHandler, ssoSession, type OriginFacts } from '../../lib';

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
    expect(checkRequestOrigin(facts({ origin: 'null', referer: 'https://shop.example.test/' }), siblings)).toBe('origin-not-allowed');
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

  it('refuses a request without a usable Host: its own origin is unknown', () => {
    expect(checkRequestOrigin(facts({ ownOrigin: undefined, origin: 'https://shop.example.test' }), siblings)).toBe('no-host');
  });

  it('counts joined duplicate Sec-Fetch-Site headers naming cross-site as cross-site', () => {
    expect(checkRequestOrigin(facts({ origin: own, secFetchSite: 'same-origin, cross-site' }), siblings)).toBe('cross-site');
  });

  it('refuses a Referer that is not a URL or has an opaque origin', () => {
    expect(checkRequestOrigin(facts({ referer: 'null' }), siblings)).toBe('referer-not-allowed');
    expect(checkRequestOrigin(facts({ referer: 'data:text/html,x' }), siblings)).toBe('referer-not-allowed');
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
    expectProblem(await post().set('Cookie', 'theme=dark').set('Origin', 'https://evil.test'), 403, 'csrf_origin');
  });

  it('lets a same-origin POST with cookies pass', async () => {
    expect((await post().set('Cookie', 'theme=dark').set('Origin', 'https://shop.example.test')).status).toBe(201);
  });

  it('lets a listed sibling pass', async () => {
    expect((await post().set('Cookie', 'theme=dark').set('Origin', 'https://admin.example.test')).status).toBe(201);
  });

  it('refuses a POST with cookies but without Origin and Referer', async () => {
    expectProblem(await post().set('Cookie', 'theme=dark'), 403, 'csrf_origin');
  });

  it('takes its own origin from the Host it was routed by: an X-Forwarded-Host naming the sender changes nothing', async () => {
    // The peer is loopback, which `trust proxy` trusts; the header could still come from a client through a proxy.
    expectProblem(
      await post().set('Cookie', 'theme=dark').set('Origin', 'https://evil.test').set('X-Forwarded-Host', 'evil.test'),
      403,
      'csrf_origin',
    );
    // A proxy that sets X-Forwarded-Host to the Host it routed by changes nothing either.
    const proxied = post()
      .set('Cookie', 'theme=dark')
      .set('Origin', 'https://shop.example.test')
      .set('X-Forwarded-Host', 'shop.example.test');
    expect((await proxied).status).toBe(201);
  });

  it('lets a POST without any cookie pass (no ambient authority to abuse)', async () => {
    expect((await post().set('Origin', 'https://evil.test')).status).toBe(201);
  });

  it('lets a cross-site GET pass', async () => {
    expect((await request(app).get('/things').set('Cookie', 'theme=dark').set('Origin', 'https://evil.test')).status).toBe(200);
  });

  it('validates its options and detects misuse as middleware', () => {
    expect(() => csrfGuard({ allowedOrigins: ['*.example.test'] })).toThrow(/full origins like "https:\/\/admin.example.test"/);
    expect(() => csrfGuard({ allowedOrigins: ['https://*.example.test'] })).toThrow(TypeError);
    const misuse = csrfGuard as unknown as (a: unknown, b: unknown, c: unknown) => unknown;
    expect(() => misuse({ method: 'GET', headers: {}, socket: {} }, {}, () => undefined)).toThrow(
      /write app\.use\(csrfGuard\(\{ \.\.\. \}\)\)/,
    );
    expect(() => csrfGuard({ allowedOrigin: [] } as never)).toThrow(/unknown option "allowedOrigin" \(did you mean "allowedOrigins"\?\)/);
  });
});

describe('the CSRF rule where the session cookie authenticates (ssoSession)', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;
  let lenient: Awaited<ReturnType<typeof startSsoApp>>;
  let cookie: string;

  beforeAll(async () => {
    redis = await testRedisStore('csrf');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })));
    lenient = await startSsoApp(ssoSession(ssoOptions({ store: redis.store, csrf: { allowedOrigins: ['https://admin.example.test'] } })));
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

  it('accepts the sibling once ssoSession lists it in csrf.allowedOrigins', async () => {
    expect((await order(lenient.server).set('Origin', 'https://admin.example.test').set('Sec-Fetch-Site', 'same-site')).status).toBe(201);
  });

  it('refuses a logged-in POST whose forged X-Forwarded-Host names the sending origin', async () => {
    const forged = order(shop.server).set('Origin', 'https://evil.example.test').set('X-Forwarded-Host', 'evil.example.test');
    expectProblem(await forged.set('Sec-Fetch-Site', 'same-site'), 403, 'csrf_origin');
  });

  it('refuses a logged-in POST without Origin or Referer', async () => {
    expectProblem(await order(shop.server).unset('Origin'), 403, 'csrf_origin');
  });

  it('accepts a logged-in POST from its own origin', async () => {
    const res = await order(shop.server).set('Origin', 'https://shop.example.test').set('Sec-Fetch-Site', 'same-origin');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ by: userId('ada') });
  });

  it('accepts a logged-in POST whose Referer is its own page', async () => {
    expect((await order(shop.server).unset('Origin').set('Referer', 'https://shop.example.test/cart')).status).toBe(201);
  });

  it('leaves a POST without a login alone: nothing is authenticated, requireSession answers 401', async () => {
    const res = await via(shop.server, 'shop.example.test', 'post', '/orders')
      .set('Origin', 'https://evil.test')
      .set('Accept', 'application/json');
    expectProblem(res, 401, 'session_required');
  });

  it('saves nothing of a refused request, even when an error handler writes to the session', async () => {
    // touchAfterSeconds 0: every accepted request re-saves its session, so a save would show.
    const flashing = await startSsoApp(ssoSession(ssoOptions({ store: redis.store, touchAfterSeconds: 0 })), {
      routes: (app) => {
        app.post('/invalid', (_req, _res, next) => next(new BadRequestError({ detail: 'Invalid.' })));
        app.use((error: unknown, req: express.Request, _res: express.Response, next: express.NextFunction) => {
          (req.session as unknown as Record<string, unknown>).flash = 'Something went wrong';
          next(error);
        });
      },
    });
    try {
      const mine = await loginAs(flashing.server, 'shop.example.test', { id: 'flash' });
      const key = `${redis.prefix}sess:${sessionIdOf(mine)}`;
      const stored = await redis.client.get(key);
      const res = await via(flashing.server, 'shop.example.test', 'post', '/orders', mine).set('Origin', 'https://evil.example.test');
      expectProblem(res, 403, 'csrf_origin');
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(await redis.client.get(key)).toBe(stored);
      // The same error handler on an accepted request does save: the comparison above can see a change.
      expectProblem(await via(flashing.server, 'shop.example.test', 'post', '/invalid', mine), 400);
      expect(await redis.client.get(key)).toContain('Something went wrong');
    } finally {
      await flashing.close();
    }
  });

  it('says why on the csrf debug channel, without the cookie', async () => {
    const lines = await debugLines('csrf', () => order(shop.server).set('Origin', 'https://evil.example.test'));
    expect(lines.join('\n')).toMatch(/ssoSession refused POST: origin-not-allowed \(from https:\/\/evil\.example\.test/);
    expect(lines.join('\n')).not.toContain(cookie.slice(cookie.indexOf('=') + 1, cookie.indexOf('=') + 20));
  });

  it('validates csrf.allowedOrigins', () => {
    expect(() => ssoSession(ssoOptions({ store: redis.store, csrf: { allowedOrigins: ['https://*.example.test'] } }))).toThrow(
      /ssoSession: csrf: allowedOrigins must list full origins/,
    );
    expect(() => ssoSession(ssoOptions({ store: redis.store, csrf: { allowedOrigins: ['http://admin.example.test'] } }))).toThrow(
      /allowedOrigins must use https/,
    );
    expect(() => ssoSession(ssoOptions({ store: redis.store, csrf: { allowedOrigin: [] } as never }))).toThrow(
      /ssoSession: csrf: unknown option "allowedOrigin" \(did you mean "allowedOrigins"\?\)/,
    );
  });
});
