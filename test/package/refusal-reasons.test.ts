import { createRedirectPolicy, MemoryStore, ssoSession } from '../../lib';
import { debugLines } from '../helpers/debug-lines';
import { expectProblem } from '../helpers/problem';
import { loginAs, SESSION_COOKIE, ssoOptions, startSsoApp, via } from '../helpers/sso-apps';

// `DEBUG=express-sso-kit:*` says why a session, a token or a redirect target was refused, without the credential.
// Tokens: test/tokens/require-bearer.test.ts ("requireBearer debug channel"); a doubled session cookie:
// test/security/cookie-tossing.test.ts; the other session and redirect refusals here.

const store = new MemoryStore();
let shop: Awaited<ReturnType<typeof startSsoApp>>;
let sso: ReturnType<typeof ssoSession>;

beforeAll(async () => {
  sso = ssoSession(ssoOptions({ store }));
  shop = await startSsoApp(sso);
});
afterAll(async () => {
  await shop.close();
  await store.close();
});

const me = (cookie: string) => via(shop.server, 'shop.example.test', 'get', '/me', cookie).set('Accept', 'application/json');

describe('the session channel says why a session cookie authenticated nobody', () => {
  it('a cookie whose signature matches no secret', async () => {
    const forged = `${SESSION_COOKIE}=${encodeURIComponent('s:forged-session-id.not-a-signature')}`;
    let res: Awaited<ReturnType<typeof me>> | undefined;
    const lines = await debugLines('session', async () => {
      res = await me(forged);
    });
    expectProblem(res!, 401, 'session_required');
    expect(lines.join('\n')).toMatch(/signature matches none of the secrets/);
    expect(lines.join('\n')).not.toContain('forged-session-id');
  });

  it('a signed cookie of a session that ended', async () => {
    const cookie = await loginAs(shop.server, 'shop.example.test', { id: 'ended' });
    await via(shop.server, 'shop.example.test', 'post', '/logout', cookie).expect(204);
    let res: Awaited<ReturnType<typeof me>> | undefined;
    const lines = await debugLines('session', async () => {
      res = await me(cookie);
    });
    expectProblem(res!, 401, 'session_required');
    expect(lines.join('\n')).toMatch(/names no live session/);
    const value = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1));
    expect(lines.join('\n')).not.toContain(value.slice(2, value.lastIndexOf('.')));
  });
});

describe('the redirect channel says why a redirect target was replaced', () => {
  const redirects = createRedirectPolicy({ parentDomain: 'example.test', defaultUrl: 'https://www.example.test/' });

  it.each([
    ['//evil.test/steal', /protocol-relative/],
    ['https://evil.test/', /host evil.test is outside example.test and not an allowed origin/],
    ['https://example.test@evil.test/', /carries userinfo/],
    ['/a\\b', /control characters, whitespace or backslashes/],
  ])('%s', async (target, reason) => {
    let sanitized: string | undefined;
    const lines = await debugLines('redirect', async () => {
      sanitized = redirects.sanitize(target);
    });
    expect(sanitized).toBe('https://www.example.test/');
    expect(lines.join('\n')).toMatch(reason);
  });

  it('says nothing about a target it keeps', async () => {
    const lines = await debugLines('redirect', async () => {
      expect(redirects.sanitize('https://shop.example.test/cart')).toBe('https://shop.example.test/cart');
    });
    expect(lines).toEqual([]);
  });
});
