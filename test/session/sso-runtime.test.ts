import express from 'express';
import request from 'supertest';
import { MemoryStore, ssoSession } from '../../lib';
import { loginRedirectPrefix, runtimeOf, SsoRuntime } from '../../lib/session/sso-runtime';
import { ssoOptions } from '../helpers/sso-apps';

describe('sso runtime', () => {
  const memory = new MemoryStore();
  afterAll(() => memory.close());

  it('appends return_to with ? or & depending on the login URL', () => {
    expect(loginRedirectPrefix('https://auth.example.test/login')).toBe('https://auth.example.test/login?return_to=');
    expect(loginRedirectPrefix('https://auth.example.test/login?lang=en')).toBe('https://auth.example.test/login?lang=en&return_to=');
  });

  it('puts one shared runtime on every request', async () => {
    const sso = ssoSession(ssoOptions({ store: memory }));
    const seen: unknown[] = [];
    const app = express();
    app.use(sso);
    app.get('/', (req, res) => {
      seen.push(req.sso);
      res.end();
    });
    await request(app).get('/');
    await request(app).get('/');
    expect(seen[0]).toBeInstanceOf(SsoRuntime);
    expect(seen[0]).toBe(seen[1]);
    expect(seen[0]).toBe(sso.context);
  });

  it('clears the cookie with the attributes it sets', () => {
    const runtime = ssoSession(ssoOptions({ store: memory })).context as SsoRuntime;
    expect(runtime.clearCookieOptions()).toEqual({ domain: 'example.test', path: '/', httpOnly: true, secure: true, sameSite: 'lax' });
  });

  it('names ssoSession when a function runs without it', () => {
    expect(() => runtimeOf({} as express.Request, 'logout')).toThrow(
      'logout: no shared session on this request; mount app.use(ssoSession({...})) before logout',
    );
    // A wiring mistake: 500 with the same code requirePermission uses for its order, never "logged out".
    expect(() => runtimeOf({} as express.Request, 'logout')).toThrow(expect.objectContaining({ status: 500, code: 'middleware_order' }));
  });
});
