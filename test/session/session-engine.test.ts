import { createSecretKey } from 'node:crypto';
import { inspect } from 'node:util';
import fc from 'fast-check';
import request from 'supertest';
import { expectRandomTokens } from '../helpers/randomness';
import { testRedisStore } from '../helpers/redis';
import { forgeSessionCookie } from '../helpers/session-cookies';
import { loginAs, sessionCookieOf, sessionIdOf, ssoOptions, startSsoApp, TEST_SECRET, userId, via } from '../helpers/sso-apps';
import { ssoSession, type SsoSessionMiddleware } from '../../lib';
import { freezeDeep, unsignSessionId } from '../../lib/session/session-engine';

describe('session cookie signatures', () => {
  const keys = [createSecretKey(Buffer.from(TEST_SECRET))];
  const valid = decodeURIComponent(forgeSessionCookie('abcdefghijklmnopqrstuvwxyz012345', TEST_SECRET).split('=')[1]!);

  it('accepts exactly the signature cookie-signature produces', () => {
    expect(unsignSessionId(valid, keys)).toBe('abcdefghijklmnopqrstuvwxyz012345');
  });

  it.each([
    [
      'every one-character change of the signature',
      (value: string, position: number) => `${value.slice(0, position)}${value[position] === 'A' ? 'B' : 'A'}${value.slice(position + 1)}`,
    ],
  ])('refuses %s', (_name, mutate) => {
    const signatureStart = valid.lastIndexOf('.') + 1;
    for (let position = signatureStart; position < valid.length; position += 1) {
      expect(unsignSessionId(mutate(valid, position), keys)).toBeUndefined();
    }
  });

  it.each([
    ['an unsigned id', 'abcdefghijklmnopqrstuvwxyz012345'],
    ['a missing s: prefix', valid.slice(2)],
    ['a truncated signature', valid.slice(0, -1)],
    ['a signature with padding', `${valid}=`],
    ['another id with the same signature', valid.replace('abc', 'abd')],
  ])('refuses %s', (_name, value) => {
    expect(unsignSessionId(value, keys)).toBeUndefined();
  });
});

describe('freezeDeep', () => {
  function everyObjectIn(value: unknown, found: object[] = []): object[] {
    if (typeof value === 'object' && value !== null) {
      found.push(value);
      for (const member of Object.values(value)) everyObjectIn(member, found);
    }
    return found;
  }

  it('freezes every object and array of a parsed session, however nested, and returns it unchanged', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const text = JSON.stringify(value);
        const parsed: unknown = JSON.parse(text);
        expect(freezeDeep(parsed)).toBe(parsed);
        for (const member of everyObjectIn(parsed)) expect(Object.isFrozen(member)).toBe(true);
        expect(JSON.stringify(parsed)).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('reaches objects inside arrays inside objects', () => {
    const session = freezeDeep(JSON.parse('{"user":{"roles":["a"],"authentication":{"factors":[{"method":"pwd"}]}}}'));
    expect(() => {
      session.user.authentication.factors[0].method = 'otp';
    }).toThrow(TypeError);
    expect(() => session.user.roles.push('admin')).toThrow(TypeError);
  });
});

describe('the session engine in an app', () => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('engine');
    shop = await startSsoApp(ssoSession(ssoOptions({ store: redis.store })), {
      routes: (app) => {
        app.get('/start-transaction', (req, res) => {
          // What the OIDC login does: remember state in the (anonymous) session, then redirect away.
          req.session.oidcTransactions = { 'state-1': 'verifier' };
          res.redirect(302, 'https://idp.example.test/authorize');
        });
        app.get('/transaction', (req, res) => {
          res.json(req.session.oidcTransactions ?? null);
        });
        app.get('/stream', (req, res) => {
          res.write('part one;');
          req.session.oidcTransactions = { streamed: 'yes' };
          res.end('part two');
        });
        app.get('/inspect', (req, res) => {
          // What a handler that logs the whole request would print, before anything reads req.session.
          // The symbols a spread or Object.assign would copy (a spread itself would build req.session).
          const copied = Object.getOwnPropertySymbols(req)
            .filter((symbol) => Object.getOwnPropertyDescriptor(req, symbol)!.enumerable)
            .map((symbol) => symbol.toString());
          res.type('text').send(`${inspect(req, { depth: 6 })}\ncopied symbols: ${copied.join(', ')}`);
        });
        app.get('/reload', (req, res, next) => {
          req.session.reload((error: unknown) => (error ? next(error) : res.json({ user: req.session.user?.id ?? null })));
        });
      },
    });
  });
  afterAll(async () => {
    await shop.close();
    await redis.cleanup();
  });

  it('saves an anonymous session that was given data, and sets its cookie on the redirect', async () => {
    const res = await via(shop.server, 'shop.example.test', 'get', '/start-transaction');
    expect(res.status).toBe(302);
    const cookie = sessionCookieOf(res)!;
    expect(cookie).toBeDefined();
    expect((await via(shop.server, 'shop.example.test', 'get', '/transaction', cookie)).body).toEqual({ 'state-1': 'verifier' });
  });

  it('saves a change made after the body started streaming', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'streamer' });
    const res = await via(shop.server, 'shop.example.test', 'get', '/stream', cookie);
    expect(res.text).toBe('part one;part two');
    expect((await via(shop.server, 'shop.example.test', 'get', '/transaction', cookie)).body).toEqual({ streamed: 'yes' });
  });

  it('gives every login a session id of at least 128 bits from the CSPRNG: 256 logins, 256 distinct ids, no bit predictable', async () => {
    // ASVS 7.2.3. The engine draws 24 bytes (192 bits) of randomToken, which reads the operating system's CSPRNG.
    const ids: string[] = [];
    for (let i = 0; i < 256; i += 1) ids.push(sessionIdOf(await loginAs(shop.server, 'shop.example.test', { id: `many-${i % 4}` })));
    expectRandomTokens(ids, 128);
  });

  it('does not offer the Secure cookie on what Express sees as plain http', async () => {
    const res = await request(shop.server).get('/start-transaction').set('Host', 'shop.example.test');
    expect(res.status).toBe(302);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('keeps the stored session out of an inspected or copied request until the handler reads req.session', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'inspected' });
    const stored = await via(shop.server, 'shop.example.test', 'get', '/start-transaction', cookie);
    expect(stored.status).toBe(302);
    expect((await via(shop.server, 'shop.example.test', 'get', '/transaction', cookie)).body).toEqual({ 'state-1': 'verifier' });
    const printed = (await via(shop.server, 'shop.example.test', 'get', '/inspect', cookie)).text;
    expect(printed).toContain('IncomingMessage');
    expect(printed).not.toContain('state-1');
    expect(printed).not.toContain('verifier');
    expect(printed).not.toMatch(/copied symbols: .*loadedSession/);
  });

  it('supports req.session.reload', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'reloader' });
    expect((await via(shop.server, 'shop.example.test', 'get', '/reload', cookie)).body).toEqual({ user: userId('reloader') });
  });

  it('writes the cookie express-session would write, so plain express-session apps can share it', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'compatible' });
    expect(cookie).toBe(forgeSessionCookie(sessionIdOf(cookie), TEST_SECRET));
  });
});

describe.each([
  ['read from Redis on every request', false],
  ['served from the per-process cache', true],
])('a session %s is given to the request lazily', (_name, cached) => {
  let redis: Awaited<ReturnType<typeof testRedisStore>>;
  let sso: SsoSessionMiddleware;
  let shop: Awaited<ReturnType<typeof startSsoApp>>;

  beforeAll(async () => {
    redis = await testRedisStore('engine-lazy');
    sso = ssoSession(ssoOptions({ store: redis.store, ...(cached ? { cache: {} } : {}) }));
    shop = await startSsoApp(sso, {
      routes: (app) => {
        app.get('/tamper', (req, res) => {
          // A handler that changes the user in place, as if for its own computation.
          let refused = false;
          try {
            (req.user!.roles as string[]).push('admin');
          } catch {
            refused = true;
          }
          res.json({ refused, frozen: Object.isFrozen(req.user) });
        });
        app.get('/roles', (req, res) => {
          res.json(req.user?.roles ?? null);
        });
        app.get('/rename', (req, res) => {
          req.session.user!.name = 'Renamed';
          res.json({ same: req.user === req.session.user, name: req.user!.name, frozen: Object.isFrozen(req.user) });
        });
        app.get('/name', (req, res) => {
          res.json(req.user?.name ?? null);
        });
        app.get('/fresh-id', (req, res) => {
          // A new session id before req.session was ever read (what a store's regenerate does).
          req.sessionStore.generate(req);
          req.session.oidcTransactions = { fresh: 'yes' };
          res.json(req.sessionID);
        });
        app.get('/transactions', (req, res) => {
          res.json(req.session.oidcTransactions ?? null);
        });
      },
    });
    if (cached) {
      const deadline = Date.now() + 10_000;
      while (!sso.cache!.ready && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(sso.cache!.ready).toBe(true);
    }
  });
  afterAll(async () => {
    await shop.close();
    await sso.manager.close();
    await redis.cleanup();
  });

  it('gives req.user frozen until the request touches req.session, so no request changes what the next one sees', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'tamperer', roles: ['customer'] });
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect((await via(shop.server, 'shop.example.test', 'get', '/tamper', cookie)).body).toEqual({ refused: true, frozen: true });
    }
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect((await via(shop.server, 'shop.example.test', 'get', '/roles', cookie)).body).toEqual(['customer']);
    }
    if (cached) expect(sso.cache!.size).toBeGreaterThan(0);
  });

  it("builds req.session on first use: a change made through it is saved, and req.user is then the session's own user", async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'renamer', name: 'Before' });
    expect((await via(shop.server, 'shop.example.test', 'get', '/name', cookie)).body).toBe('Before');
    expect((await via(shop.server, 'shop.example.test', 'get', '/rename', cookie)).body).toEqual({
      same: true,
      name: 'Renamed',
      frozen: false,
    });
    expect((await via(shop.server, 'shop.example.test', 'get', '/name', cookie)).body).toBe('Renamed');
    expect((await via(shop.server, 'shop.example.test', 'get', '/name', cookie)).body).toBe('Renamed');
  });

  it('sets the cookie of a new session id given before req.session was built', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'regenerated' });
    const res = await via(shop.server, 'shop.example.test', 'get', '/fresh-id', cookie);
    expect(res.status).toBe(200);
    expect(res.body).not.toBe(sessionIdOf(cookie));
    const fresh = sessionCookieOf(res);
    expect(fresh && sessionIdOf(fresh)).toBe(res.body);
    expect((await via(shop.server, 'shop.example.test', 'get', '/transactions', fresh)).body).toEqual({ fresh: 'yes' });
  });
});
