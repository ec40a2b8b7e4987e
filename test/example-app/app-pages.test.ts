import type { SessionUser } from '../../lib/session/types';
import { describeSignIn, demoLinks, renderAppPage } from '../../example-app/common/app-pages';
import { readDemoConfig } from '../../example-app/common/config';

const user = (method: string, amr: string[], extra: Partial<SessionUser> = {}): SessionUser => ({
  id: 'directory:demo|alice',
  source: 'directory:demo',
  subject: 'alice',
  name: 'Alice Example',
  roles: ['admin'],
  method,
  authenticatedAt: Date.now(),
  authentication: { acr: '1fa', amr, authTime: 0, factors: amr.map((m) => ({ method: m, at: 0 })) },
  ...extra,
});

describe("the shop's and admin's 'signed in with …'", () => {
  it.each([
    ['a password', 'password', ['pwd']],
    ['a password and a one-time code', 'password', ['pwd', 'otp']],
    ['a passkey', 'passkey', ['hwk', 'user']],
    ['a passkey', 'passkey', ['swk', 'user']],
    ['a QR code and a one-time code', 'qr', ['qr', 'otp']],
    ['the Demo IdP (OpenID Connect), a one-time code and a password', 'oidc', ['ext', 'otp', 'pwd']],
  ])('says %s for a %s login with amr %j', (said, method, amr) => {
    expect(describeSignIn(user(method, amr))).toBe(said);
  });

  it('says which account a linked or QR-only sign-in is', () => {
    const links = demoLinks(readDemoConfig({ DEMO_SECRET: 'app-pages-test-secret-0123456789abcdef' }));
    const linked = user('qr', ['qr'], { linkedFrom: { source: 'qr:http://auth.sso.localhost:8080#sso-portal', subject: 'x' } });
    expect(renderAppPage('Shop', linked, links)).toContain('the directory account your sign-in is linked to');
    const own = user('qr', ['qr'], { id: 'qr:https://idp.test#shop|x', source: 'qr:https://idp.test#shop', subject: 'x' });
    expect(renderAppPage('Shop', own, links)).toContain('an account of its own');
  });
});
